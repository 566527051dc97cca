"""Pictures every kind shares (matplotlib): a sweep's trade-off curves, an experiment's box
plots, one replay's picture, and the grouped bars and titles the pictures of one allocation
use. Each kind's picture of its allocation (``Kind.plot``) is in ``plots/<kind>.py`` (drf and
emrf share ``plots/leontief.py``); a stored study's picture, drawn from its summary, is
``studies/plots.py``.

Every figure keeps its legends beside the panels or under them, never over a point or a label,
names a unit on every axis, and says in a note what it leaves out; ``tests/test_figures.py``
measures each of these on the drawn figures."""

from __future__ import annotations

import fnmatch

import numpy as np

from fairalloc.files import replacing
from fairalloc.plots import replay as panels
from fairalloc.result import check_column


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
    import matplotlib  # lazy: heavy, only commands that draw need it

    matplotlib.use("Agg")
    # text stays text in SVG and PDF figures: searchable, and editable for a paper
    matplotlib.rcParams.update({"svg.fonttype": "none", "pdf.fonttype": 42})
    import matplotlib.pyplot as plt  # lazy: heavy, only commands that draw need it

    return plt


def save(fig, path: str) -> None:
    """Write the figure to ``path`` (its format from the extension) whole or not at all
    (``files.replacing``), and close it."""
    try:
        with replacing(path) as temporary:
            fig.savefig(temporary, dpi=120)
    finally:
        pyplot().close(fig)


LINE_STYLES = ("-", "--", ":", "-.")
WHISKERS = "box: p25–p75, line: median, whiskers: p10–p90"


def bars(ax, groups: list[str], series: dict[str, np.ndarray], ylabel: str) -> None:
    """Grouped bars: a group per id (``groups``), a bar per series within it, the series named
    in a legend beside the panel when there are several."""
    width = 0.8 / max(len(series), 1)
    at = np.arange(len(groups))
    for i, (name, values) in enumerate(series.items()):
        ax.bar(at - 0.4 + (i + 0.5) * width, np.asarray(values, float), width, label=name,
               color=f"C{i % 10}")
    # slanted when the names would not fit side by side under a narrow panel
    slant = sum(len(str(g)) for g in groups) > 24
    ax.set_xticks(at, groups, fontsize=8, rotation=30 if slant else 0,
                  ha="right" if slant else "center")
    ax.set_ylabel(ylabel, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    if len(series) > 1:
        beside(ax)


def bar_panels(result, panels: list[tuple[str, dict[str, np.ndarray], str]], path: str,
               width: float, ratios: list[float] | None = None, height: float = 3.6) -> None:
    """One result's picture as side-by-side grouped bars over its ids: per panel (title,
    series, y label), ``width`` × ``height`` inches, titled by the result
    (``result_title``)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(width, height), squeeze=False,
                             gridspec_kw={"width_ratios": ratios} if ratios else None)
    ids = list(result.allocation.ids)
    for ax, (title, series, ylabel) in zip(axes[0], panels):
        bars(ax, ids, series, ylabel)
        ax.set_title(title, fontsize=8)
    fig.suptitle(result_title(result), fontsize=9)
    fig.tight_layout()
    save(fig, path)


def result_title(result) -> str:
    """A picture of one result's title: the spec's name, the method, the objective."""
    objective = "" if result.objective is None else f": objective {result.objective:.4g}"
    return f"{result.name or result.problem} — {result.method}{objective}"


def readable_log_axis(ax) -> None:
    """A log y axis whose ticks read as plain numbers (0.5, 2, 10): every digit between
    decades labelled when the axis spans less than a decade, 2 and 5 when it spans little more
    than one."""
    from matplotlib import ticker  # lazy: heavy, only commands that draw need it

    ax.set_yscale("log")
    plain = ticker.FuncFormatter(lambda y, _: f"{y:g}")
    ax.yaxis.set_major_formatter(plain)
    low, high = ax.get_ylim()
    span = high / max(low, 1e-300)
    if span < 30:
        subs = tuple(range(2, 10)) if span < 8 else (2, 5)
        ax.yaxis.set_minor_locator(ticker.LogLocator(subs=subs))
        ax.yaxis.set_minor_formatter(plain)
    else:
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())


VERDICT_MARKERS = {"holds": ("o", "tab:green"), "fails": ("x", "tab:red"),
                   "unrefuted": (r"$\sim$", "tab:orange"), "unchecked": ("_", "tab:gray")}


def sweep(rows: dict[str, np.ndarray], key: str, names: list[str], checks: list[str],
          path: str, title: str, kind) -> None:
    """A sweep study's rows against the swept value: the objective, then one panel per unit
    of the chosen metrics (``metric.<name>`` columns; ``kind.unit`` labels each, and only one
    unit shares an axis), a line per method; the kind's trade-off view (``kind.tradeoff``: y
    against x over the sweep, a line per method) when it has one and its metrics were kept;
    and a strip of the check verdicts that do not hold at every value. What has nothing to
    show is left out, with a note under the figure: a metric equal to the objective (DRF's and
    hetero's smallest level), to the swept value, or numerically zero at every value; a
    trade-off whose x does not move. Metrics equal to another of their panel's and methods
    with the same objective at every value are noted too (their marks differ)."""
    plt = pyplot()
    methods = list(dict.fromkeys(rows["method"]))
    by_method = {m: rows["method"] == m for m in methods}
    kept, notes = _worth_drawing(rows, key, names, kind)
    groups: dict[str, list[str]] = {}
    for n in kept:
        groups.setdefault(kind.unit(n), []).append(n)
    trade = _tradeoff(kind, names)
    if trade and _flat(rows, f"metric.{trade[0]}", by_method):
        notes.append(f"trade-off of {', '.join(trade[1])} against {trade[0]} not drawn: "
                     f"{trade[0]} does not move over the sweep")
        trade = None
    strips, held = _strip_rows(rows, key, methods, by_method, checks)
    if held:
        notes.append(f"the checks strip leaves out {held} rows that hold at every value")
    notes += _coinciding(rows, key, methods, by_method)
    heights = [3] * (1 + len(groups)) + ([3.4] if trade else []) + \
        ([0.6 + 0.3 * len(strips)] if strips else [])
    legend_width = _legend_width([*methods, *kept])
    width = 7 + legend_width
    height = sum(heights) + 0.8 + 0.16 * len(notes)
    fig, axes = plt.subplots(len(heights), 1, figsize=(width, height),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    axes = list(axes[:, 0])
    swept = axes[:1 + len(groups)]
    look = _method_looks(methods)
    x_label = _key_label(kind, key)
    for m, rows_of_m in by_method.items():
        swept[0].plot(rows[key][rows_of_m], rows["objective"][rows_of_m].astype(float),
                      "-", **look[m])
    for ax, members in zip(swept[1:], groups.values()):
        for m, rows_of_m in by_method.items():
            for i, n in enumerate(members):
                ax.plot(rows[key][rows_of_m], rows[f"metric.{n}"][rows_of_m].astype(float),
                        linestyle=LINE_STYLES[i % len(LINE_STYLES)], **look[m])
    for ax, (label, members) in zip(swept, [(kind.unit("objective"), []), *groups.items()]):
        ax.set_ylabel(label, fontsize=8)
        ax.set_xlabel(x_label, fontsize=8)
        ax.grid(alpha=0.3)
        if members:
            ax.set_title(", ".join(members), fontsize=8)
        _key_legend(ax, methods, look, members)
    at = 1 + len(groups)
    if trade:
        x_name, y_names = trade
        ax = axes[at]
        at += 1
        for m, rows_of_m in by_method.items():
            for i, y in enumerate(y_names):
                ax.plot(rows[f"metric.{x_name}"][rows_of_m].astype(float),
                        rows[f"metric.{y}"][rows_of_m].astype(float),
                        linestyle=LINE_STYLES[i % len(LINE_STYLES)], **look[m])
        # named: x and y may share a unit (ETF's two fairness indices)
        ax.set_xlabel(_named(x_name, kind), fontsize=8)
        ax.set_ylabel(_named(y_names[0], kind) if len(y_names) == 1 else kind.unit(y_names[0]),
                      fontsize=8)
        ax.set_title(f"trade-off over the sweep of {key}", fontsize=8)
        ax.grid(alpha=0.3)
        _key_legend(ax, methods, look, y_names)
    if strips:
        _draw_strip(axes[at], strips, x_label)
    fig.suptitle(f"{title}: sweep of {key}", fontsize=10)
    bottom = footnotes(fig, notes)
    fig.tight_layout(rect=(0, bottom, 1, 0.985))
    save(fig, path)


def footnotes(fig, notes: list[str]) -> float:
    """The notes written under the figure, one a line; the share of its height they take (the
    bottom of the rectangle the panels are laid out in)."""
    if not notes:
        return 0.0
    height = fig.get_figheight()
    fig.text(0.01, 0.06 / height, "\n".join(f"note: {n}" for n in notes), fontsize=7,
             va="bottom", ha="left", color="#444")
    return (0.16 * len(notes) + 0.12) / height


def beside(ax, handles=None, title: str | None = None) -> None:
    """The panel's legend to the right of its frame: never over its points, and the layout
    (``tight_layout``) keeps it in the figure."""
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              borderaxespad=0.0, title=title, title_fontsize=7)


LEGEND_ENTRIES = 12      # a longer legend beside a panel is not read at a glance


def _legend_width(labels: list[str]) -> float:
    """Inches a legend of these labels takes beside a panel (7 pt text: about 0.055 inch a
    character, plus the line sample)."""
    return 0.9 + 0.055 * max((len(str(label)) for label in labels), default=0)


def _method_looks(methods: list[str]) -> dict[str, dict]:
    """A colour and a marker per method, both distinct for up to ten methods (hetero has
    ten): a method whose points coincide with an earlier one's still shows (hollow around
    filled, each later marker bigger)."""
    return {m: {"color": f"C{i % 10}", "marker": "osD^v<>phP"[i % 10], "markersize": 3 + 1.6 * i,
                "markerfacecolor": "none" if i else f"C{i % 10}", "label": m}
            for i, m in enumerate(methods)}


def _key_legend(ax, methods: list[str], look: dict, metrics: list[str]) -> None:
    """One legend entry per method (its colour and marker) and, when the panel draws several
    metrics, one per metric (its line style): methods + metrics entries, not their product.
    When together they pass ``LEGEND_ENTRIES``, the metrics alone: the objective's panel,
    which draws one, keys the methods."""
    from matplotlib.lines import Line2D  # lazy: heavy, only commands that draw need it

    keyed = len(methods) > 1 and (len(metrics) < 2
                                  or len(methods) + len(metrics) <= LEGEND_ENTRIES)
    handles = [Line2D([], [], **look[m]) for m in methods] if keyed else []
    if len(metrics) > 1:
        handles += [Line2D([], [], color="black", label=n,
                           linestyle=LINE_STYLES[i % len(LINE_STYLES)])
                    for i, n in enumerate(metrics)]
    if handles:
        beside(ax, handles)


def _named(name: str, kind) -> str:
    """A metric's axis label with its name: on two lines when one would outgrow a panel."""
    label = f"{name}: {kind.unit(name)}"
    return label if len(label) <= 48 else f"{name}:\n{kind.unit(name)}"


def _key_label(kind, key: str) -> str:
    """The swept key's axis label: the kind's ``units`` for it, else the key as the spec's
    value."""
    label = kind.unit(key)
    return label if label != key else f"{key} (the spec's value)"


def _worth_drawing(rows: dict[str, np.ndarray], key: str, names: list[str], kind
                   ) -> tuple[list[str], list[str]]:
    """The metrics with something to show, and a note for each one left out: equal to the
    objective (its panel is the first), equal to the swept value, or numerically zero (at most
    1e-9 in size) at every value."""
    objective = rows["objective"].astype(float)
    kept, notes = [], []
    for n in names:
        values = rows[f"metric.{n}"].astype(float)
        if np.allclose(values, objective, equal_nan=True):
            continue
        finite = values[np.isfinite(values)]
        swept = rows[key]
        if swept.dtype.kind in "fiu" and np.allclose(values, swept.astype(float)):
            notes.append(f"{n} equals {key} at every value (not drawn)")
        elif finite.size and np.abs(finite).max() == 0:
            notes.append(f"{n} is 0 at every value (not drawn)")
        elif finite.size and np.abs(finite).max() <= 1e-9:
            notes.append(f"{n} is numerically zero at every value (at most "
                         f"{np.abs(finite).max():.1e}; not drawn)")
        else:
            same = [k for k in kept if kind.unit(k) == kind.unit(n) and np.allclose(
                rows[f"metric.{k}"].astype(float), values, equal_nan=True)]
            if same:            # drawn, in another line style, over the one it equals
                notes.append(f"{n} equals {same[0]} at every value")
            kept.append(n)
    return kept, notes


def _flat(rows: dict[str, np.ndarray], column: str, by_method: dict) -> bool:
    """Whether the column keeps one value (to 1e-9 relative) within every method."""
    values = rows[column].astype(float)
    return all(np.ptp(v) <= 1e-9 * max(1.0, float(np.abs(v).max()))
               for v in (values[mask] for mask in by_method.values()) if v.size)


def _coinciding(rows: dict[str, np.ndarray], key: str, methods: list[str], by_method: dict
                ) -> list[str]:
    """A note per method whose objective equals an earlier method's at every swept value."""
    def points(m: str) -> np.ndarray:
        return np.column_stack([rows[key][by_method[m]].astype(float),
                                rows["objective"][by_method[m]].astype(float)])

    notes = []
    for i, m in enumerate(methods):
        same = [o for o in methods[:i] if points(o).shape == points(m).shape
                and np.allclose(points(o), points(m), equal_nan=True)]
        if same:
            notes.append(f"{m}'s objective equals {same[0]}'s at every value (its "
                         f"markers hollow and bigger)")
    return notes


def _strip_rows(rows: dict[str, np.ndarray], key: str, methods: list[str], by_method: dict,
                checks: list[str]) -> tuple[list[tuple[str, np.ndarray, list]], int]:
    """The check strip's rows: per check, the methods whose verdicts agree at every swept
    value share a row; a row that holds at every value is left out (counted)."""
    columns = [c for c in rows if c.startswith("check.")]
    out, held = [], 0
    for check in checks:
        mine = [c for c in columns if check_column(c.removeprefix("check.")) == check]
        patterns: dict[tuple, list[str]] = {}
        for m in methods:
            verdicts = tuple((float(x), str(v)) for c in mine
                             for x, v in zip(rows[key][by_method[m]], rows[c][by_method[m]])
                             if v is not None)
            if verdicts:
                patterns.setdefault(verdicts, []).append(m)
        for verdicts, who in patterns.items():
            if all(v == "holds" for _, v in verdicts):
                held += 1
                continue
            names = "every method" if len(who) == len(methods) > 1 else ", ".join(who)
            out.append((f"{check}: {names}" if len(methods) > 1 else check,
                        np.array([x for x, _ in verdicts]), [v for _, v in verdicts]))
    return out, held


def _draw_strip(ax, strips: list[tuple[str, np.ndarray, list]], x_label: str) -> None:
    """The check strip: a row per check (and methods that agree), a marker per verdict."""
    import textwrap

    for row, (_, xs, verdicts) in enumerate(strips):
        for verdict in dict.fromkeys(verdicts):
            marker, color = VERDICT_MARKERS[verdict]
            at = [x for x, v in zip(xs, verdicts) if v == verdict]
            ax.scatter(at, [row] * len(at), marker=marker, color=color, s=18)
    ax.set_yticks(range(len(strips)), [textwrap.fill(label, 60) for label, _, _ in strips],
                  fontsize=7)
    ax.set_ylim(len(strips) - 0.5, -0.5)             # the first row on top
    ax.set_xlabel(x_label, fontsize=8)
    ax.set_title("checks that do not hold at every value: green o holds, red x fails, "
                 "orange ~ unrefuted, grey - unchecked", fontsize=8)


def _tradeoff(kind, names: list[str]) -> tuple[str, list[str]] | None:
    """The kind's trade-off axes among the kept metrics: x and the y metrics, or None."""
    if kind.tradeoff is None or kind.tradeoff[0] not in names:
        return None
    ys = [n for n in names if fnmatch.fnmatchcase(n, kind.tradeoff[1])]
    return (kind.tradeoff[0], ys) if ys else None


def boxes(values: dict[str, dict[str, np.ndarray]], labels: dict[str, str], title: str,
          path: str, baseline: float | None = None, log: bool = False) -> None:
    """One panel per value (``labels``: value -> axis label), a box per method label (whiskers
    at the 10th and 90th percentiles, no outliers) and the mean as a diamond, like Fig. 4-6 of
    the offload paper; ``baseline`` draws a dashed line at that value (1: no better than the
    baseline method), ``log`` a log axis (for ratios of improvement)."""
    plt = pyplot()
    keys = list(values)
    names = list(values[keys[0]])
    width = (1.6 + 1.3 * len(names)) if len(keys) == 1 else 2 + 1.6 * len(names) * len(keys)
    # the legend under the panels, never over a box or the baseline
    fig, axes = plt.subplots(1, len(keys), figsize=(max(width, 6), 4.8 if baseline else 4.6),
                             layout="constrained")
    for ax, key in zip(np.atleast_1d(axes), keys):
        data = [values[key][n] for n in names]
        ax.boxplot(data, whis=(10, 90), showfliers=False)
        ax.scatter(range(1, len(names) + 1), [float(d.mean()) for d in data], marker="D",
                   color="tab:red", zorder=3, label="mean")
        if baseline is not None:
            ax.axhline(baseline, color="grey", linewidth=0.8, linestyle="--",
                       label=f"{baseline:g}: no better than the baseline")
        if log:
            readable_log_axis(ax)
        ax.set_xticks(range(1, len(names) + 1), names, fontsize=8, rotation=20 if log else 15)
        ax.set_ylabel(labels[key])
        ax.grid(axis="y", alpha=0.3)
        ax.plot([], [], color="black", label=WHISKERS)
    handles, texts = np.atleast_1d(axes)[0].get_legend_handles_labels()
    fig.legend(handles, texts, fontsize=7, loc="outside lower center", ncol=len(texts))
    if len(keys) == 1:
        np.atleast_1d(axes)[0].set_title(title, fontsize=8)
    else:
        fig.suptitle(title, fontsize=8)
    save(fig, path)


def replay_run(replay, path: str) -> None:
    """One replay (``fairalloc replay FILE --plot``, its report), a panel each where there is
    something to show: the CDFs of the JCT and of the finish-time fairness rho of the
    window's jobs that finished (the jobs the summary's measures are over, named in the
    titles), the share of each resource in use over time and the share of the allocations
    judged that each check's verdict was."""
    plt = pyplot()
    name = f"{replay.settings['policy']} ({replay.settings['mechanism']})"
    jct = np.asarray(replay.jobs["jct"][replay.window], dtype=float) / panels.HOUR
    rho = np.asarray(replay.jobs["rho"][replay.window], dtype=float)
    jobs = replay.window_text
    counts = {f"{replay.settings['policy']}: {check}": {v: float(c[v])
                                                        for v in panels.VERDICT_COLORS}
              for check, c in replay.verdicts.items()}
    draws = [(title, draw) for title, draw, shown in (
        (f"JCT of the jobs that finished, {jobs}", lambda ax: panels.cdf(
            ax, {name: jct}, "job completion time (h, log scale)", log=True),
         np.isfinite(jct).any()),
        (f"finish-time fairness, {jobs}", lambda ax: panels.cdf(
            ax, {name: rho}, "rho: JCT / JCT under the isolated share (ratio)", reference=1.0,
            log=None),
         np.isfinite(rho).any()),
        ("utilisation over time (whole run)", lambda ax: panels.utilization(
            ax, {name: replay.utilization}, list(replay.resources)), True),
        ("the checks on the allocations judged", lambda ax: panels.verdicts(ax, counts),
         any(sum(c.values()) for c in counts.values()))) if shown]
    columns = min(2, len(draws))
    rows = -(-len(draws) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.5 * columns, 4 * rows), squeeze=False)
    for ax, (title, draw) in zip(axes.flat, draws):
        draw(ax)
        ax.set_title(title, fontsize=9)
    for ax in axes.flat[len(draws):]:
        ax.set_visible(False)
    fig.suptitle(f"replay {replay.name}: {name}, {replay.settings['trace']}", fontsize=10)
    fig.tight_layout()
    save(fig, path)

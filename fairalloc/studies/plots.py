"""A stored study's picture: box plots per group and the mean against each numeric grid key,
from the study's rows and summary (the shared drawing helpers are in ``plots``)."""

from __future__ import annotations

import numpy as np

from fairalloc.plots import WHISKERS, pyplot, readable_log_axis, save
from fairalloc.studies.store import OK
from fairalloc.studies.summary import summarise


def study(rows: dict[str, np.ndarray], by: list[str], values: list[str],
          labels: dict[str, str], title: str, path: str, grid: list[str]) -> None:
    """A study's picture, one panel per quantity so no two units share an axis: for each
    value, box plots per group (the ``by`` columns; whiskers at the 10th and 90th
    percentiles, the mean as a diamond) and, for each numeric grid key among ``by``, the mean
    against that key per remaining group with its 95% bootstrap band; then the solve time (s)
    per group on a log axis. Rows that did not solve are left out, as in the summary."""
    plt = pyplot()
    solved = np.isin(rows["status"].astype(str), OK)
    numeric = [k for k in grid if k in by and rows[k].dtype.kind in "fiu"]
    panels = [("box", v, None) for v in values]
    panels += [("line", v, k) for k in numeric for v in values]
    panels.append(("box", "time_s", None))
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 3.4 * len(panels)), squeeze=False)
    group_of = [" ".join(str(rows[b][i]) for b in by) for i in range(len(solved))]
    names = list(dict.fromkeys(group_of))
    for ax, (how, value, key) in zip(axes[:, 0], panels):
        axis_label = "solve time (s)" if value == "time_s" else labels.get(value, value)
        column = rows[value].astype(float)
        if how == "box":
            keep = solved & ~np.isnan(column)
            data = [column[keep & (np.array(group_of) == n)] for n in names]
            shown = [(n, d) for n, d in zip(names, data) if len(d)]
            if shown:
                ax.boxplot([d for _, d in shown], whis=(10, 90), showfliers=False)
                ax.scatter(range(1, len(shown) + 1), [d.mean() for _, d in shown], marker="D",
                           color="tab:red", zorder=3, label="mean")
                ax.set_xticks(range(1, len(shown) + 1), [n for n, _ in shown], fontsize=7,
                              rotation=20, ha="right")
                ax.plot([], [], color="black", label=WHISKERS)
                ax.legend(fontsize=7)
            if value == "time_s":
                readable_log_axis(ax)
        else:
            rest = [b for b in by if b != key]
            for record_group, records in _lines(summarise(rows, by, [value]), key, rest):
                xs = [r[key] for r in records if r[value]]
                stats = [r[value] for r in records if r[value]]
                if not xs:
                    continue
                line, = ax.plot(xs, [s["mean"] for s in stats], "o-", markersize=3,
                                label=record_group or value)
                ax.fill_between(xs, [s["ci_low"] for s in stats],
                                [s["ci_high"] for s in stats], alpha=0.2,
                                color=line.get_color())
            ax.set_xlabel(key)
            if rows[key].dtype.kind in "iu":   # jobs = 4 and 6, not ticks at 4.25 jobs
                from matplotlib.ticker import MaxNLocator  # lazy: heavy, only plots need it

                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.legend(fontsize=7, title="mean, 95% band", title_fontsize=7)
        ax.set_ylabel(axis_label, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0, 0].set_title(title, fontsize=9)
    fig.tight_layout()
    save(fig, path)


def _lines(records: list[dict], key: str, rest: list[str]) -> list[tuple[str, list[dict]]]:
    """Summary records grouped by the ``rest`` columns, each ordered by ``key``."""
    out: dict[str, list[dict]] = {}
    for r in records:
        out.setdefault(" ".join(str(r[b]) for b in rest), []).append(r)
    return [(name, sorted(rs, key=lambda r: r[key])) for name, rs in out.items()]

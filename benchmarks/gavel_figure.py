"""docs/figures/gavel-fig8.png and gavel-fig9.png: Gavel's figures 8 and 9 as fairalloc
reproduces them, from the store of the figure's study (``specs/studies/gavel-fig8-gavel-stream
.json``, ``specs/studies/gavel-fig9.json``), with the values printed in Gavel's notebooks and,
where known, Gavel's own simulator re-run on this machine as reference points beside
fairalloc's lines.

    python benchmarks/gavel_figure.py {8,9} STORE... [-o OUT.png]

A panel per group of policies (figure 9: LAS, FIFO, finish-time fairness; one the store has no
run of is left out): the average JCT of jobs 4000-4999 against the input rate per policy
(fairalloc's lines, Gavel's printed values as crosses, Gavel re-run as open squares; a log axis
when the values span more than a decade), and below them fairalloc's difference to Gavel's
printed value in percent with the issue's ±10% band (beyond ±50% at the panel's edge, as
triangles). It prints the same values as Markdown tables, and the agnostic/aware ratio at the
highest rate Gavel printed both. A rate the store has no finished run of is named in the title
(``fairalloc study run ... --resume`` completes it). Several stores (a sweep run in parts)
are drawn as one, a later store's value for a policy and rate replacing an earlier one's.
``fairalloc study summary STORE --plot``
draws the tool's own replay-study figure; this one only adds Gavel's points.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fairalloc import api
from fairalloc.plots import pyplot, save
from fairalloc.plots import replay as replay_panels

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "paper"))
# Gavel's printed values and its re-runs (reference numbers live in tests/paper)
from gavel_figure8 import FIGURE_8, FIGURE_8_RATES  # noqa: E402
from gavel_figure9 import (  # noqa: E402
    FIGURE_9,
    FIGURE_9_RATES,
    FIGURE_9_RATIO_RATE,
    FIGURE_9_RERUN,
)

JCT = "metric.average_jct_s"
TOLERANCE = 10.0        # percent: the issues' bound on the difference to Gavel's value
CLIP = 50.0             # percent: the difference panel's reach (a point beyond sits at its edge)
LAS = ("max-min", "agnostic-max-min")       # aware, agnostic: the ratio's terms
# a policy's name in the tables' headers
SHORT = {"max-min": "aware (max-min)", "agnostic-max-min": "agnostic (LAS)",
         "fifo-aware": "aware (fifo-aware)", "fifo": "FIFO (fifo)",
         "finish-time": "aware (finish-time)", "agnostic-finish-time": "agnostic FTF"}
LABELS = {"agnostic-max-min": "LAS, agnostic (agnostic-max-min)",
          "max-min": "LAS, heterogeneity-aware (max-min)",
          "fifo": "FIFO (fifo)", "fifo-aware": "FIFO, heterogeneity-aware (fifo-aware)",
          "agnostic-finish-time": "FTF, agnostic (agnostic-finish-time)",
          "finish-time": "FTF, heterogeneity-aware (finish-time)"}
RATE_LABEL = "input rate (jobs/h)"


@dataclass(frozen=True)
class Figure:
    """One of Gavel's continuous-jobs figures: what its title says of the setting, its rates,
    the values Gavel printed (policy -> rate -> hours), its panels (title, policies), the
    highest rate Gavel printed both LASes at, and Gavel re-run here (as ``printed``)."""

    number: int
    setting: str
    rates: tuple[float, ...]
    printed: dict[str, dict[float, float]]
    panels: tuple[tuple[str, tuple[str, ...]], ...]
    ratio_rate: float
    reruns: dict[str, dict[float, float]] = field(default_factory=dict)

    @property
    def policies(self) -> tuple[str, ...]:
        """Every policy of the figure's panels, in order (each keeps one colour)."""
        return tuple(p for _, group in self.panels for p in group)


FIGURES = {
    8: Figure(8, "continuous single-GPU jobs, 36 V100 + 36 P100 + 36 K80, rounds of 360 s, "
              "Gavel's jobs for seed 0", FIGURE_8_RATES, FIGURE_8, (("LAS", LAS),), 5.6),
    9: Figure(9, "continuous multi-GPU jobs, 36 V100 + 36 P100 + 36 K80, rounds of 360 s, "
              "Gavel's jobs for seed 0", FIGURE_9_RATES, FIGURE_9,
              (("LAS", LAS), ("FIFO", ("fifo-aware", "fifo")),
               ("finish-time fairness", ("finish-time", "agnostic-finish-time"))),
              FIGURE_9_RATIO_RATE, FIGURE_9_RERUN),
}


def measured_hours(store: str, study: str | None = None) -> dict[str, dict[float, float]]:
    """The mean average JCT (hours) per policy and input rate of the store's finished runs."""
    found = api.summary(store, study, by=["trace.rate", "method"], values=[JCT])
    out: dict[str, dict[float, float]] = {}
    for r in found.records:
        if r[JCT] is not None:
            out.setdefault(r["method"], {})[round(float(r["trace.rate"]), 6)] = \
                r[JCT]["mean"] / replay_panels.HOUR
    return out


def drawn_panels(figure: Figure, measured: dict[str, dict[float, float]]) \
        -> list[tuple[str, tuple[str, ...]]]:
    """The figure's panels with a run of any of their policies in ``measured``."""
    return [(title, group) for title, group in figure.panels
            if any(measured.get(p) for p in group)]


def missing_rates(figure: Figure, measured: dict[str, dict[float, float]]) \
        -> dict[str, list[float]]:
    """Per policy of the drawn panels, the figure's rates the store has no value for."""
    return {p: [x for x in figure.rates if x not in measured.get(p, {})]
            for _, group in drawn_panels(figure, measured) for p in group}


def missing_note(figure: Figure, measured: dict[str, dict[float, float]]) -> str:
    """The missing rates in words: "no P run" for a policy without any, else the rates."""
    return "; ".join(f"no {p} run" + ("" if len(xs) == len(figure.rates) else
                                      f" at {', '.join(f'{x:g}' for x in xs)} jobs/h")
                     for p, xs in missing_rates(figure, measured).items() if xs)


def differences(measured: dict[str, dict[float, float]],
                reference: dict[str, dict[float, float]]) -> dict[str, dict[float, float]]:
    """fairalloc's value minus the reference's, in percent of the reference, per policy and
    rate where both are known."""
    return {p: {x: 100 * (v / reference[p][x] - 1) for x, v in sorted(values.items())
                if x in reference.get(p, {})}
            for p, values in measured.items()}


def draw(figure: Figure, measured: dict[str, dict[float, float]], path: str) -> None:
    """A JCT-against-rate panel per drawn group of policies with Gavel's points, and below
    them the difference in percent (left out when no measured rate is one Gavel printed:
    nothing to compare)."""
    plt = pyplot()
    panels = drawn_panels(figure, measured)
    shown = {p: v for p, v in measured.items() if p in figure.policies}
    diffs = {p: d for p, d in differences(shown, figure.printed).items() if d}
    rows = len(panels) + bool(diffs)
    fig, axes = plt.subplots(rows, 1, figsize=(8.5, 4.8 + 3.6 * (rows - 1)), squeeze=False,
                             sharex=True, gridspec_kw={"height_ratios": [3] * len(panels)
                                                       + [2] * bool(diffs)})
    for ax, (title, group) in zip(axes[:, 0], panels):
        jct_panel(ax, figure, measured, title, group)
    if diffs:
        difference_panel(axes[-1, 0], figure, diffs,
                         differences(shown, figure.reruns))
    note = missing_note(figure, measured)
    title = f"Gavel's figure {figure.number} ({figure.setting}), replayed by fairalloc"
    fig.suptitle("\n".join(textwrap.wrap(title, 110) + textwrap.wrap(
        f"({note})" if note else "", 120)), fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    save(fig, path)


def jct_panel(ax, figure: Figure, measured: dict[str, dict[float, float]], title: str,
              group: tuple[str, ...]) -> None:
    """fairalloc's average JCT per policy of ``group`` (lines), Gavel's printed values
    (crosses) and Gavel re-run here (open squares)."""
    values = []
    for policy in group:
        i = figure.policies.index(policy)
        color, label = f"C{i}", LABELS.get(policy, policy)
        mine = sorted(measured.get(policy, {}).items())
        if mine:
            ax.plot(*zip(*mine), marker="o", markersize=4, color=color,
                    linestyle=replay_panels.STYLES[i % len(replay_panels.STYLES)],
                    label=f"fairalloc: {label}")
        for points, marker, source in ((figure.printed, "x", "printed"),
                                       (figure.reruns, "s", "re-run here")):
            theirs = sorted(points.get(policy, {}).items())
            if theirs:
                ax.plot(*zip(*theirs), marker=marker, markersize=6, linestyle="none",
                        color=color, markerfacecolor="none", label=f"Gavel ({source}): {label}")
            values += [v for _, v in theirs]
        values += [v for _, v in mine]
    if replay_panels.spans_decades({"jct": np.array(values)}):
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(plain_hours)
        ax.yaxis.set_minor_formatter(lambda v, _: plain_hours(v) if leading_digit(v) in (2, 5)
                                     else "")
    else:
        ax.set_ylim(0, max(values) * 1.05)
    ax.set_xlabel(RATE_LABEL, fontsize=8)
    ax.xaxis.set_tick_params(labelbottom=True)
    ax.set_ylabel("average JCT of jobs 4000-4999 (h)", fontsize=8)
    ax.grid(alpha=0.3)
    replay_panels.legend_below(ax, columns=2)
    ax.set_title(f"{title}: average JCT against the input rate, fairalloc's runs (lines) "
                 "and Gavel's values (markers)", fontsize=8)


def plain_hours(value: float, _position: int | None = None) -> str:
    """A log axis's tick as a plain number (20, 100, 500), not 2×10^1."""
    return f"{value:g}"


def leading_digit(value: float) -> int:
    """The first significant digit of a positive number (the minor ticks labelled: 2 and 5)."""
    return int(round(value / 10 ** np.floor(np.log10(value))))


def difference_panel(ax, figure: Figure, diffs: dict[str, dict[float, float]],
                     against_reruns: dict[str, dict[float, float]]) -> None:
    """fairalloc's difference to Gavel's printed value (percent, lines) and to Gavel re-run
    here (open squares) per policy, in the ±10% band; a difference beyond ±``CLIP`` is drawn
    at the panel's edge as a triangle."""
    ax.axhspan(-TOLERANCE, TOLERANCE, color="grey", alpha=0.15,
               label=f"±{TOLERANCE:g}%: the issues' bound")
    ax.axhline(0, color="grey", linewidth=0.8)
    worst = max([TOLERANCE] + [abs(v) for d in diffs.values() for v in d.values()])
    reach = min(worst, CLIP)
    for policy in figure.policies:
        i = figure.policies.index(policy)
        color = f"C{i}"
        if diffs.get(policy):
            xs, ys = (np.array(v) for v in zip(*diffs[policy].items()))
            ax.plot(xs, np.clip(ys, -reach, reach), marker="o", markersize=4, color=color,
                    linestyle=replay_panels.STYLES[i % len(replay_panels.STYLES)],
                    label=f"{policy} vs printed")
            for sign, marker in ((1, "^"), (-1, "v")):
                out = sign * ys > reach
                if out.any():
                    ax.plot(xs[out], np.full(out.sum(), sign * reach), marker=marker,
                            markersize=8, linestyle="none", color=color)
        if against_reruns.get(policy):
            xs, ys = zip(*against_reruns[policy].items())
            ax.plot(xs, np.clip(ys, -reach, reach), marker="s", markersize=6,
                    linestyle="none", color=color, markerfacecolor="none",
                    label=f"{policy} vs Gavel re-run")
    ax.set_ylim(-reach * 1.1, reach * 1.1)
    ax.set_ylabel("fairalloc - Gavel (% of Gavel's value)", fontsize=8)
    ax.set_xlabel(RATE_LABEL, fontsize=8)
    ax.grid(alpha=0.3)
    replay_panels.legend_below(ax, columns=3)
    beyond = f"; beyond ±{CLIP:g}% at the edge (triangles)" if worst > CLIP else ""
    ax.set_title(f"difference to Gavel's value{beyond}", fontsize=8)


def table(figure: Figure, measured: dict[str, dict[float, float]]) -> str:
    """fairalloc's values beside Gavel's printed ones (and Gavel re-run here where the figure
    has any), a Markdown table per drawn panel (the first panel when none is), a row per
    rate."""
    panels = drawn_panels(figure, measured) or list(figure.panels[:1])
    printed = differences(measured, figure.printed)
    rerun = differences(measured, figure.reruns)
    out = []
    for _, group in panels:
        head, cells_of = ["jobs/h"], []
        for p in group:
            head += [f"{SHORT.get(p, p)}: fairalloc", "Gavel"]
            if figure.reruns.get(p):
                head.append("Gavel re-run")
            cells_of.append(p)
        lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---:"] * len(head)) + " |"]
        for x in figure.rates:
            cells = []
            for p in cells_of:
                v = measured.get(p, {}).get(x)
                g = figure.printed.get(p, {}).get(x)
                cells += ["–" if v is None else f"{v:.2f}" + (
                    f" ({printed[p][x]:+.1f}%)" if g is not None else ""),
                          "–" if g is None else f"{g:.2f}"]
                if figure.reruns.get(p):
                    r = figure.reruns[p].get(x)
                    cells.append("–" if r is None else f"{r:.2f}" + (
                        f" (fairalloc {rerun[p][x]:+.1f}%)" if v is not None else ""))
            lines.append(f"| {x:g} | " + " | ".join(cells) + " |")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def ratio_line(figure: Figure, measured: dict[str, dict[float, float]]) -> str | None:
    """fairalloc's agnostic/aware LAS ratio at the highest rate Gavel printed both, beside
    Gavel's (and Gavel re-run's where known); None without both of fairalloc's runs there."""
    x = figure.ratio_rate
    aware, agnostic = (measured.get(p, {}).get(x) for p in LAS)
    if not (aware and agnostic):
        return None
    gavel = figure.printed[LAS[1]][x] / figure.printed[LAS[0]][x]
    reran = [figure.reruns.get(p, {}).get(x) for p in LAS]
    again = f", re-run here {reran[1] / reran[0]:.2f}" if all(reran) else ""
    return (f"agnostic/aware at {x:g} jobs/h: {agnostic / aware:.2f} "
            f"({100 * (agnostic / aware / gavel - 1):+.1f}% of Gavel's {gavel:.2f}{again})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("figure", type=int, choices=sorted(FIGURES),
                        help="Gavel's figure: 8 (single-GPU jobs) or 9 (multi-GPU jobs)")
    parser.add_argument("stores", nargs="+", metavar="STORE",
                        help="the DuckDB store of the figure's study (or of its parts)")
    parser.add_argument("-o", "--output", help="the PNG (default: docs/figures/gavel-figN.png)")
    parser.add_argument("--study", help="the study's name, when a store holds several")
    args = parser.parse_args(argv)
    figure = FIGURES[args.figure]
    output = args.output or f"docs/figures/gavel-fig{figure.number}.png"
    measured: dict[str, dict[float, float]] = {}
    for store in args.stores:
        for policy, values in measured_hours(store, args.study).items():
            measured.setdefault(policy, {}).update(values)
    if not drawn_panels(figure, measured):
        print(f"{', '.join(args.stores)}: no finished replay of a policy of Gavel's figure "
              f"{figure.number} to draw", file=sys.stderr)
        return 1
    draw(figure, measured, output)
    print(table(figure, measured))
    ratio = ratio_line(figure, measured)
    if ratio:
        print(f"\n{ratio}")
    print(f"figure written to {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

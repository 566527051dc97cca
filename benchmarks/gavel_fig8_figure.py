"""docs/figures/gavel-fig8.png: Gavel's figure 8 as fairalloc reproduces it, from the store of
the study ``specs/studies/gavel-fig8-gavel-stream.json``, with the values printed in Gavel's
``continuous_jobs.ipynb`` as reference points beside fairalloc's lines.

    python benchmarks/gavel_fig8_figure.py STORE [OUT.png]

Two panels: the average JCT of jobs 4000-4999 against the input rate per policy (fairalloc's
lines, Gavel's printed values as open markers), and fairalloc's difference to Gavel's value in
percent with the issue's ±10% band. A rate the store has no finished run of is named in the
title (``fairalloc study run ... --resume`` completes it). ``fairalloc study summary STORE
--plot`` draws the tool's own replay-study figure; this one only adds the paper's points.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from fairalloc import api
from fairalloc.plots import pyplot, save
from fairalloc.plots import replay as replay_panels

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "paper"))
from gavel_figure8 import FIGURE_8, FIGURE_8_RATES  # noqa: E402  (Gavel's printed values)

JCT = "metric.average_jct_s"
TOLERANCE = 10.0        # percent: issue 25's bound on the difference to Gavel's value
LABELS = {"agnostic-max-min": "LAS, agnostic (agnostic-max-min)",
          "max-min": "LAS, heterogeneity-aware (max-min)"}
RATE_LABEL = "input rate (jobs/h)"


def measured_hours(store: str, study: str | None = None) -> dict[str, dict[float, float]]:
    """The mean average JCT (hours) per policy and input rate of the store's finished runs."""
    found = api.summary(store, study, by=["trace.rate", "method"], values=[JCT])
    out: dict[str, dict[float, float]] = {}
    for r in found.records:
        if r[JCT] is not None:
            out.setdefault(r["method"], {})[round(float(r["trace.rate"]), 6)] = \
                r[JCT]["mean"] / replay_panels.HOUR
    return out


def missing_rates(measured: dict[str, dict[float, float]]) -> dict[str, list[float]]:
    """Per policy of Gavel's figure, the rates it printed that the store has no value for."""
    return {p: [x for x in FIGURE_8_RATES if x not in measured.get(p, {})] for p in FIGURE_8}


def differences(measured: dict[str, dict[float, float]]) -> dict[str, dict[float, float]]:
    """fairalloc's value minus Gavel's, in percent of Gavel's, per policy and rate."""
    return {p: {x: 100 * (v / FIGURE_8[p][x] - 1) for x, v in sorted(values.items())
                if x in FIGURE_8.get(p, {})}
            for p, values in measured.items()}


def draw(measured: dict[str, dict[float, float]], path: str) -> None:
    """JCT against rate with Gavel's points, and below it the difference in percent (left out
    when no measured rate is one of Gavel's: nothing to compare)."""
    plt = pyplot()
    diffs = {p: d for p, d in differences(measured).items() if d}
    rows = 2 if diffs else 1
    fig, axes = plt.subplots(rows, 1, figsize=(8.5, 4.8 + 3.2 * (rows - 1)), squeeze=False,
                             sharex=True, gridspec_kw={"height_ratios": [3, 2][:rows]})
    jct_panel(axes[0, 0], measured)
    if diffs:
        difference_panel(axes[1, 0], diffs)
    gaps = {p: xs for p, xs in missing_rates(measured).items() if xs}
    note = textwrap.fill("; ".join(f"no {p} run at {', '.join(f'{x:g}' for x in xs)} jobs/h"
                                   for p, xs in gaps.items()), 120)
    fig.suptitle("Gavel's figure 8 (36 V100 + 36 P100 + 36 K80, rounds of 360 s, Gavel's jobs "
                 "for seed 0), replayed by fairalloc" + (f"\n({note})" if note else ""),
                 fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    save(fig, path)


def jct_panel(ax, measured: dict[str, dict[float, float]]) -> None:
    """fairalloc's average JCT per policy (lines) and Gavel's printed values (crosses)."""
    top = 0.0
    for i, policy in enumerate(FIGURE_8):
        color, label = f"C{i}", LABELS.get(policy, policy)
        mine = sorted(measured.get(policy, {}).items())
        if mine:
            ax.plot(*zip(*mine), marker="o", markersize=4, color=color,
                    linestyle=replay_panels.STYLES[i], label=f"fairalloc: {label}")
        paper = sorted(FIGURE_8[policy].items())
        ax.plot(*zip(*paper), marker="x", markersize=7, linestyle="none", color=color,
                label=f"Gavel (printed): {label}")
        top = max([top] + [v for _, v in mine + paper])
    ax.set_xlabel(RATE_LABEL, fontsize=8)
    ax.xaxis.set_tick_params(labelbottom=True)
    ax.set_ylabel("average JCT of jobs 4000-4999 (h)", fontsize=8)
    ax.set_ylim(0, top * 1.05)
    ax.grid(alpha=0.3)
    replay_panels.legend_below(ax, columns=2)
    ax.set_title("average JCT against the input rate: fairalloc's runs (lines) and "
                 "Gavel's printed values (crosses)", fontsize=8)


def difference_panel(ax, diffs: dict[str, dict[float, float]]) -> None:
    """fairalloc's difference to Gavel's value (percent) per policy, in the ±10% band."""
    ax.axhspan(-TOLERANCE, TOLERANCE, color="grey", alpha=0.15,
               label=f"±{TOLERANCE:g}%: issue 25's bound")
    ax.axhline(0, color="grey", linewidth=0.8)
    for i, policy in enumerate(FIGURE_8):
        if diffs.get(policy):
            ax.plot(*zip(*diffs[policy].items()), marker="o", markersize=4,
                    color=f"C{i}", linestyle=replay_panels.STYLES[i], label=policy)
    worst = max([TOLERANCE] + [abs(v) for d in diffs.values() for v in d.values()])
    ax.set_ylim(-worst * 1.1, worst * 1.1)
    ax.set_ylabel("fairalloc - Gavel (% of Gavel's value)", fontsize=8)
    ax.set_xlabel(RATE_LABEL, fontsize=8)
    ax.grid(alpha=0.3)
    replay_panels.legend_below(ax, columns=3)
    ax.set_title("difference to Gavel's printed value", fontsize=8)


def table(measured: dict[str, dict[float, float]]) -> str:
    """fairalloc's values beside Gavel's, a Markdown row per rate."""
    lines = ["| jobs/h | aware (max-min): fairalloc | Gavel | agnostic (LAS): fairalloc | Gavel |",
             "| ---: | ---: | ---: | ---: | ---: |"]
    diffs = differences(measured)
    for x in FIGURE_8_RATES:
        cells = []
        for p in ("max-min", "agnostic-max-min"):
            v = measured.get(p, {}).get(x)
            cells += ["–" if v is None else f"{v:.2f} ({diffs[p][x]:+.1f}%)",
                      f"{FIGURE_8[p][x]:.2f}"]
        lines.append(f"| {x:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", help="the DuckDB store of the study gavel-fig8-gavel-stream")
    parser.add_argument("output", nargs="?", default="docs/figures/gavel-fig8.png")
    parser.add_argument("--study", help="the study's name, when the store holds several")
    args = parser.parse_args(argv)
    measured = measured_hours(args.store, args.study)
    if not any(measured.values()):
        print(f"{args.store}: no finished replay to draw", file=sys.stderr)
        return 1
    draw(measured, args.output)
    print(table(measured))
    agnostic, aware = (measured.get(p, {}).get(5.6) for p in ("agnostic-max-min", "max-min"))
    if agnostic and aware:
        gavel = FIGURE_8["agnostic-max-min"][5.6] / FIGURE_8["max-min"][5.6]
        print(f"\nagnostic/aware at 5.6 jobs/h: {agnostic / aware:.2f} (Gavel {gavel:.2f})")
    print(f"figure written to {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

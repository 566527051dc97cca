"""Pictures of replays (matplotlib), shared by every kind with a replay: JCT against the input
rate per policy (the shape of Gavel's figure 8), CDFs of JCT and of finish-time fairness rho,
the share of each resource in use over time, and the checks' verdicts over the allocations
judged. Each draws on the axes it is given; ``plots.replay_run`` (``fairalloc replay FILE
--plot``) and ``plots.replay_study`` (a replay study's figure) put them together.

Every legend sits in headroom above the data (the y axis is extended past the largest value),
inside its axes, so it never covers a line; every axis names its quantity and unit.
"""

from __future__ import annotations

import numpy as np

HEADROOM = 1.45          # the y axis runs to this times the data's top: the legend's room
HOUR = 3600.0
STYLES = ("-", "--", ":", "-.")     # a policy's (or a resource's) dash, beside its colour
VERDICT_COLORS = {"holds": "tab:green", "fails": "tab:red", "unrefuted": "tab:orange",
                  "unchecked": "tab:gray"}


def legend_above(ax, top: float, columns: int = 3) -> None:
    """The axes' legend in the band above ``top`` (the data's largest y), which the y axis is
    extended to hold."""
    low = ax.get_ylim()[0]
    ticks = [t for t in ax.get_yticks() if low <= t <= top * (1 + 1e-9)]
    ax.set_ylim(low, low + (top - low) * HEADROOM)
    if ax.get_yscale() == "linear":
        ax.set_yticks(ticks)        # no tick in the legend's band: no value lives there
    ax.legend(fontsize=7, loc="upper left", ncol=columns, frameon=True)


def cdf(ax, values: dict[str, np.ndarray], label: str, reference: float | None = None,
        log: bool = False) -> bool:
    """Empirical CDFs, one step line per name (the finite values only); ``reference`` a dashed
    vertical line there (rho = 1). False when no name has a value (nothing drawn)."""
    drawn = False
    for i, (name, xs) in enumerate(values.items()):
        xs = np.sort(np.asarray(xs, dtype=float)[np.isfinite(xs)])
        if not xs.size:
            continue
        ax.step(np.r_[xs[0], xs], np.r_[0, np.arange(1, xs.size + 1) / xs.size], where="post",
                color=f"C{i % 10}", linestyle=STYLES[i % len(STYLES)],
                label=f"{name} (n = {xs.size})")
        drawn = True
    if not drawn:
        return False
    if reference is not None:
        # from 0 to 1 in data, not the axes' height: the legend's band stays clear
        ax.plot([reference, reference], [0, 1], color="grey", linewidth=0.8, linestyle="--",
                label=f"{reference:g}: as under the isolated share")
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(label, fontsize=8)
    ax.set_ylabel("share of jobs (CDF, 0-1)", fontsize=8)
    ax.grid(alpha=0.3)
    legend_above(ax, 1.0, columns=2)
    return True


def utilization(ax, runs: dict[str, dict], resources: list[str]) -> bool:
    """The share of each resource in use over time (hours), a colour per run (name) and a
    line style per resource; ``runs``: name -> {"from", "to", "share" (intervals x
    resources)}. False when no run has an interval."""
    drawn = False
    for i, (name, over) in enumerate(runs.items()):
        start = np.asarray(over["from"], dtype=float)
        if not start.size:
            continue
        end = np.asarray(over["to"], dtype=float)
        for r, resource in enumerate(resources):
            share = np.asarray(over["share"])[:, r]
            ax.step(np.r_[start, end[-1]] / HOUR, np.r_[share, share[-1]], where="post",
                    color=f"C{i % 10}", linestyle=STYLES[r % len(STYLES)],
                    linewidth=0.9,
                    label=f"{name}: {resource}" if len(runs) > 1 else resource)
        drawn = True
    if not drawn:
        return False
    ax.set_xlabel("simulated time (h)", fontsize=8)
    ax.set_ylabel("share of the resource in use (0-1)", fontsize=8)
    ax.set_ylim(0, 1.0)
    ax.grid(alpha=0.3)
    legend_above(ax, 1.0, columns=min(3, max(len(resources), 1)))
    return True


def against_rate(ax, lines: dict[str, tuple[list, list, list, list]], rate: str,
                 label: str) -> bool:
    """A value against the input rate, a line per policy: ``lines`` name -> (rates, means,
    low, high) with the band between low and high (a 95% interval over seeds)."""
    top = 0.0
    for i, (name, (xs, mean, low, high)) in enumerate(lines.items()):
        if not xs:
            continue
        line, = ax.plot(xs, mean, marker="osD^v"[i % 5], markersize=4,
                        linestyle=STYLES[i % len(STYLES)], label=name)
        ax.fill_between(xs, low, high, alpha=0.2, color=line.get_color())
        top = max(top, float(np.nanmax(high)))
    if not top:
        return False
    ax.set_xlabel(rate, fontsize=8)
    ax.set_ylabel(label, fontsize=8)
    ax.set_ylim(0, top)
    ax.grid(alpha=0.3)
    legend_above(ax, top, columns=2)
    return True


def verdicts(ax, counts: dict[str, dict[str, float]]) -> bool:
    """Stacked bars, one per (policy: check), of the share of the allocations judged that
    each verdict was (``counts``: bar -> verdict -> count). False when nothing was judged."""
    bars = {name: c for name, c in counts.items() if sum(c.values()) > 0}
    if not bars:
        return False
    names = list(bars)
    bottom = np.zeros(len(names))
    for verdict, color in VERDICT_COLORS.items():
        totals = np.array([sum(bars[n].values()) for n in names])
        share = np.array([bars[n].get(verdict, 0.0) for n in names]) / totals
        if share.any():
            ax.bar(range(len(names)), share, bottom=bottom, color=color, label=verdict,
                   width=0.6)
        bottom += share
    ax.set_xticks(range(len(names)), [f"{n}\n({int(sum(bars[n].values()))} judged)"
                                      for n in names], fontsize=7)
    ax.set_xlabel("policy: check", fontsize=8)
    ax.set_ylabel("share of allocations judged (0-1)", fontsize=8)
    ax.set_ylim(0, 1.0)
    legend_above(ax, 1.0, columns=4)
    return True

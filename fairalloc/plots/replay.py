"""Pictures of replays (matplotlib), shared by every kind with a replay: JCT against the input
rate per policy (the shape of Gavel's figure 8), CDFs of JCT and of finish-time fairness rho,
the share of each resource in use over time, and the checks' verdicts over the allocations
judged. Each draws on the axes it is given; ``plots.replay_run`` (``fairalloc replay FILE
--plot``) and ``plots.replay_study`` (a replay study's figure) put them together.

Every legend sits below its axes, under the x axis's label, so it neither covers a line nor
takes room from the data; every axis names its quantity and unit. A ratio whose values span
more than a decade (finish-time fairness: rho reaches 100 under FIFO) is drawn on a log axis.
"""

from __future__ import annotations

import numpy as np

HOUR = 3600.0
STYLES = ("-", "--", ":", "-.")     # a policy's (or a resource's) dash, beside its colour
VERDICT_COLORS = {"holds": "tab:green", "fails": "tab:red", "unrefuted": "tab:orange",
                  "unchecked": "tab:gray"}


LEGEND_DROP_PT = 36      # below the axes: tick labels (a log axis's 10^k too) and the x label


def legend_below(ax, columns: int = 3) -> None:
    """The axes' legend below them, under the x axis's label: a fixed drop in points, so it
    clears the labels whatever the panel's height (``fig.tight_layout`` makes room for it)."""
    from matplotlib import transforms  # lazy: importing fairalloc must not load matplotlib

    below = transforms.offset_copy(ax.transAxes, fig=ax.figure, y=-LEGEND_DROP_PT,
                                   units="points")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, 0.0), bbox_transform=below,
              ncol=columns, frameon=False, borderaxespad=0.0)


def spans_decades(values: dict[str, np.ndarray]) -> bool:
    """Whether the finite positive values span more than a decade (a log axis shows them).

    >>> spans_decades({"a": np.array([0.5, 2.0])}), spans_decades({"a": [0.9], "b": [181.0]})
    (False, True)
    """
    xs = np.concatenate([np.asarray(v, dtype=float).ravel() for v in values.values()])
    xs = xs[np.isfinite(xs) & (xs > 0)]
    return bool(xs.size) and float(xs.max()) > 10.0 * float(xs.min())


def cdf(ax, values: dict[str, np.ndarray], label: str, reference: float | None = None,
        log: bool | None = False) -> bool:
    """Empirical CDFs, one step line per name (the finite values only); ``reference`` a dashed
    vertical line there (rho = 1); ``log`` a log x axis (None: when the values span more than
    a decade, the label then saying so). False when no name has a value (nothing drawn)."""
    if log is None:
        log = spans_decades(values)
        label = f"{label}, log scale" if log else label
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
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    legend_below(ax, columns=2)
    return True


def utilization(ax, runs: dict[str, dict], resources: list[str]) -> bool:
    """The share of each resource in use over time (hours): of one run a colour per resource;
    of several a colour per run (name) and a line style per resource. ``runs``: name ->
    {"from", "to", "share" (intervals x resources)}. False when no run has an interval."""
    drawn = False
    for i, (name, over) in enumerate(runs.items()):
        start = np.asarray(over["from"], dtype=float)
        if not start.size:
            continue
        end = np.asarray(over["to"], dtype=float)
        for r, resource in enumerate(resources):
            share = np.asarray(over["share"])[:, r]
            alone = len(runs) == 1
            ax.step(np.r_[start, end[-1]] / HOUR, np.r_[share, share[-1]], where="post",
                    color=f"C{(r if alone else i) % 10}",
                    linestyle="-" if alone else STYLES[r % len(STYLES)], linewidth=0.9,
                    label=resource if alone else f"{name}: {resource}")
        drawn = True
    if not drawn:
        return False
    ax.set_xlabel("simulated time (h)", fontsize=8)
    ax.set_ylabel("share of the resource in use (0-1)", fontsize=8)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    legend_below(ax, columns=min(3, max(len(resources), 1)))
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
    ax.set_ylim(0, top * 1.02)
    ax.grid(alpha=0.3)
    legend_below(ax, columns=2)
    return True


def verdicts(ax, counts: dict[str, dict[str, float]]) -> bool:
    """Stacked horizontal bars, one per (policy: check) named beside it, of the share of the
    allocations judged that each verdict was (``counts``: bar -> verdict -> count): names of
    any length and number stay apart. False when nothing was judged."""
    bars = {name: c for name, c in counts.items() if sum(c.values()) > 0}
    if not bars:
        return False
    names = list(bars)
    totals = np.array([sum(bars[n].values()) for n in names])
    left = np.zeros(len(names))
    for verdict, color in VERDICT_COLORS.items():
        share = np.array([bars[n].get(verdict, 0.0) for n in names]) / totals
        if share.any():
            ax.barh(range(len(names)), share, left=left, color=color, label=verdict,
                    height=0.6)
        left += share
    ax.set_yticks(range(len(names)), [f"{n} ({int(t)} judged)" for n, t in zip(names, totals)],
                  fontsize=7)
    ax.invert_yaxis()        # the first bar on top, as the names were given
    ax.set_xlabel("share of allocations judged (0-1)", fontsize=8)
    ax.set_ylabel("policy: check", fontsize=8)
    ax.set_xlim(0, 1.0)
    legend_below(ax, columns=4)
    return True

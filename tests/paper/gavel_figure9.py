"""Gavel's printed figure 9 values (continuous multi-GPU jobs), which the paper test, the figure
script and docs/replay.md compare against, and Gavel's own simulator re-run on this machine on
the same points (papers' printed numbers and other reference numbers live here, never in
library code).

scheduler/notebooks/figures/evaluation/continuous_jobs_multigpu.ipynb (stanford-futuredata/
gavel, MIT): 36 V100 + 36 P100 + 36 K80, rounds of 360 s, jobs at Philly's scale factors
1/2/4/8 GPUs, seed 0, the average over jobs 4000-4999. A rate the notebook prints as nan or
does not print (the run did not finish the window) is absent here. Policies fairalloc has are
keyed by fairalloc's name (``GAVEL_NAMES`` gives Gavel's); those it has not yet by Gavel's."""

import json
from pathlib import Path

FIGURE_9_RATES = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.2, 2.4, 2.6, 2.8, 3.0)

# fairalloc's name -> Gavel's (docs/replay.md)
GAVEL_NAMES = {"agnostic-max-min": "max_min_fairness", "max-min": "max_min_fairness_perf",
               "fifo": "fifo", "fifo-aware": "fifo_perf",
               "agnostic-finish-time": "finish_time_fairness",
               "finish-time": "finish_time_fairness_perf",
               "max-min-packed": "max_min_fairness_packed", "fifo-packed": "fifo_packed",
               "gandiva": "gandiva"}


def _by_rate(*values: float | None) -> dict[float, float]:
    """Values in ``FIGURE_9_RATES`` order, None (printed nan or not printed) left out."""
    return {x: v for x, v in zip(FIGURE_9_RATES, values) if v is not None}


# Cell 10 (``plot_jct_cdf`` over min_job_id=4000, max_job_id=5000): the average JCT in hours
# by input rate (jobs/hour), as printed under "Input job rate: R"
FIGURE_9 = {
    "fifo": _by_rate(
        18.56, 18.61, 18.95, 19.21, 19.92, 22.20, 23.70, 30.82, 31.54, 37.56, 65.45, 129.27,
        304.76, 414.68, 537.18),
    "fifo-aware": _by_rate(
        16.91, 16.96, 17.01, 17.10, 17.34, 17.65, 18.29, 20.02, 23.71, 27.68, 33.05, 43.94,
        93.60, 204.44, 301.75),
    "fifo-packed": _by_rate(
        16.91, 16.96, 17.01, 17.10, 17.34, 17.65, 18.29, 19.95, 23.44, 27.34, 32.37, 42.34,
        82.18, None, None),
    "agnostic-max-min": _by_rate(
        25.93, 25.92, 25.88, 26.08, 26.10, 26.10, 26.23, 26.51, 27.29, 28.91, 30.82, 38.71,
        70.54, 169.93, None),
    "gandiva": _by_rate(
        18.55, 18.59, 18.66, 18.76, 18.96, 19.23, 19.58, 20.47, 22.32, 25.16, 30.02, 38.79,
        60.43, None, None),
    "max-min": _by_rate(
        18.55, 18.58, 18.59, 18.51, 18.54, 18.49, 18.55, 19.12, 20.35, 21.90, 24.61, 30.03,
        36.44, 55.78, None),
    "max-min-packed": _by_rate(
        18.72, 18.95, 19.09, 18.98, 19.01, 18.78, 18.68, 18.90, 19.66, 20.85, 22.89, 26.22,
        30.51, 38.25, 46.94),
    "agnostic-finish-time": _by_rate(
        25.93, 25.92, 25.89, 26.06, 26.12, 26.12, 26.24, 26.50, 27.23, 28.87, None, 38.65,
        64.38, None, None),
    "finish-time": _by_rate(
        18.55, 18.57, 18.58, 18.46, 18.51, 18.55, 18.67, 19.14, 20.12, 21.80, 24.36, 27.93,
        33.90, 41.56, 52.19),
}

# The highest rate at which Gavel printed both LASes, and their ratio there (169.93 / 55.78)
FIGURE_9_RATIO_RATE = 2.8

# Cell 11 (the same call with finish_time_fairness=True): the mean over jobs 4000-4999 of rho,
# a job's JCT over its JCT under Gavel's isolated policy on the same trace, by input rate
FIGURE_9_RHO = {
    "agnostic-max-min": _by_rate(
        1.00, 1.00, 1.00, 1.00, 1.01, 1.00, 1.01, 1.00, 1.01, 1.03, 1.02, 1.10, 1.00, 1.02,
        None),
    "max-min": _by_rate(
        0.80, 0.80, 0.80, 0.78, 0.78, 0.76, 0.75, 0.76, 0.77, 0.79, 0.82, 0.85, 0.81, 0.91,
        None),
    "max-min-packed": _by_rate(
        0.82, 0.83, 0.84, 0.82, 0.82, 0.79, 0.77, 0.75, 0.75, 0.76, 0.78, 0.76, 0.76, 0.86,
        None),
    "gandiva": _by_rate(
        0.80, 0.80, 0.80, 0.79, 0.81, 0.81, 0.80, 0.83, 0.86, 0.92, 0.98, 1.09, 1.23, None,
        None),
    "agnostic-finish-time": _by_rate(
        1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.01, 1.02, None, 1.12, 1.40, None,
        None),
    "finish-time": _by_rate(
        0.80, 0.80, 0.80, 0.77, 0.77, 0.76, 0.74, 0.75, 0.75, 0.76, 0.78, 0.78, 0.79, 0.86,
        None),
}

# Gavel's own simulator (its code, not its printed values) re-run on this machine on the same
# points: gavel_figure9_reruns.json says how (command, dates, Gavel's commit) and holds, per
# Gavel policy and rate, the window's average JCT and how many of its 1,000 jobs finished
RERUNS_FILE = Path(__file__).with_name("gavel_figure9_reruns.json")


def reruns() -> dict[str, dict[float, dict]]:
    """Gavel's re-runs by fairalloc's policy name (Gavel's where fairalloc has none) and rate:
    ``{"hours": window average JCT, "finished": window jobs finished}``."""
    data = json.loads(RERUNS_FILE.read_text())
    ours = {gavel: mine for mine, gavel in GAVEL_NAMES.items()}
    return {ours.get(policy, policy): {float(x): point for x, point in points.items()}
            for policy, points in data["points"].items()}


FIGURE_9_RERUN = {p: {x: point["hours"] for x, point in points.items()}
                  for p, points in reruns().items()}

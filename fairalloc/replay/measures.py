"""What a replay measures: per job and per run.

Per job: arrival, start (first progress), finish, JCT (finish - arrival), queueing delay
(start - arrival), and finish-time fairness rho = JCT / JCT under the isolated share. As in
Gavel (``notebooks/figures/evaluation/plotting_utils.py``, ``plot_jct_cdf`` with
``finish_time_fairness``), the reference JCT is the job's JCT in a replay of the same trace under
the ``isolated`` policy (Themis's rho, each job's 1/N share of the cluster, measured rather than
estimated). Per run: average JCT over a window of job positions (Gavel: jobs 4000-5000 of a
continuous trace), percentiles, makespan, utilisation per resource, the worst rho and the shares
of jobs above 1 and above a tolerance, and sharing incentive over the jobs' lives as a verdict
with the worst job as witness.
"""

from __future__ import annotations

import numpy as np

from fairalloc.replay.engine import Timeline
from fairalloc.replay.trace import Trace

RHO_SLACK = 1e-9          # rho within this of 1 counts as 1 (floats)


def jobs(trace: Trace, timeline: Timeline, reference: np.ndarray | None = None) -> dict:
    """Per job (trace order): id, arrival, start, finish, jct, queueing and rho (NaN without
    a reference, or where either run did not finish the job). ``reference``: each job's JCT
    under the isolated share."""
    jct = timeline.finish - trace.arrival
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = jct / reference if reference is not None else np.full(trace.n, np.nan)
    return {"id": np.asarray(trace.ids, dtype=object), "arrival": trace.arrival,
            "start": timeline.start, "finish": timeline.finish, "jct": jct,
            "queueing": timeline.start - trace.arrival, "rho": rho}


def window_of(n: int, window: tuple[int, int] | None) -> slice:
    """The jobs measured: positions [a, b) in arrival order (Gavel's job ids), all without."""
    if window is None:
        return slice(0, n)
    return slice(min(window[0], n), min(window[1], n))


def summary(per_job: dict, timeline: Timeline, resources: tuple[str, ...],
            window: tuple[int, int] | None = None,
            tolerance: float = 1.0) -> dict:
    """The run's measures (JCT in seconds) over the window's jobs, utilisation over the
    whole run."""
    chosen = window_of(len(per_job["id"]), window)
    jct = per_job["jct"][chosen]
    done = jct[np.isfinite(jct)]
    out = {"status": timeline.status, "error": timeline.error,
           "jobs": int(len(per_job["id"])), "finished": int(np.isfinite(per_job["jct"]).sum()),
           "window": list(window) if window else None, "window_jobs": int(jct.size),
           "window_finished": int(done.size),
           "average_jct_s": _mean(done),
           "p50_jct_s": _percentile(done, 50), "p90_jct_s": _percentile(done, 90),
           "p99_jct_s": _percentile(done, 99),
           "average_queueing_s": _mean(per_job["queueing"][chosen]),
           "makespan_s": _makespan(per_job),
           # True: the last job arrived before the window was done, so the window's last
           # jobs ran on an emptying cluster (a continuous trace should be longer)
           "arrivals_ended_first": bool(window is not None and len(per_job["arrival"])
                                        and per_job["arrival"][-1] < timeline.end),
           "last_arrival_s": float(per_job["arrival"].max()) if len(per_job["arrival"])
           else None,
           "end_s": timeline.end,
           "utilization": dict(zip(resources, utilization(timeline, len(resources)).tolist())),
           "allocations": timeline.allocations, "solve_s": timeline.solve_s,
           "wall_s": timeline.wall_s,
           "jobs_per_s": (int(np.isfinite(per_job["jct"]).sum()) / timeline.wall_s
                          if timeline.wall_s > 0 else None)}
    out.update(fairness(per_job, chosen, tolerance))
    return out


def utilization(timeline: Timeline, resources: int) -> np.ndarray:
    """Share of each resource in use over the run: the shares held, integrated over time,
    over the run's span (first arrival to last event)."""
    if not len(timeline.intervals):
        return np.zeros(resources)
    span = timeline.intervals[-1, 1] - timeline.intervals[0, 0]
    return timeline.busy.sum(axis=0) / span if span > 0 else np.zeros(resources)


def utilization_over_time(timeline: Timeline) -> dict:
    """Per plan interval: from, to and the share of each resource in use."""
    width = np.diff(timeline.intervals, axis=1)[:, 0] if len(timeline.intervals) else \
        np.zeros(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(width[:, None] > 0, timeline.busy / width[:, None], 0.0)
    return {"from": timeline.intervals[:, 0], "to": timeline.intervals[:, 1], "share": share}


def fairness(per_job: dict, chosen: slice, tolerance: float) -> dict:
    """Worst rho (and its job), the shares of jobs with rho above 1 and above ``tolerance``,
    and sharing incentive over the jobs' lives: ``holds`` when every measured job had rho <= 1,
    ``fails`` with the worst job as witness, ``unchecked`` without rho."""
    rho = per_job["rho"][chosen]
    ids = per_job["id"][chosen]
    known = np.isfinite(rho)
    if not known.any():
        return {"worst_rho": None, "worst_rho_job": None, "share_rho_above_1": None,
                "average_rho": None,
                "share_rho_above_tolerance": None, "tolerance": tolerance,
                "sharing_incentive": {"verdict": "unchecked", "detail": "no job has a rho "
                                      "(finish-time fairness not measured, or no job "
                                      "finished in both runs)", "witness": None}}
    measured = rho[known]
    worst = int(np.flatnonzero(known)[np.argmax(measured)])
    top = float(rho[worst])
    above = float(np.mean(measured > 1 + RHO_SLACK))
    if top <= 1 + RHO_SLACK:
        verdict = {"verdict": "holds", "detail": f"every one of {measured.size} jobs finished "
                   "no later than under its isolated share (rho <= 1)", "witness": None}
    else:
        verdict = {"verdict": "fails", "detail": f"job {ids[worst]} took {top:.3g} x its JCT "
                   f"under its isolated share ({above:.1%} of jobs have rho > 1)",
                   "witness": {"job": str(ids[worst]), "rho": top,
                               "time": float(per_job["finish"][chosen][worst])}}
    return {"worst_rho": top, "worst_rho_job": str(ids[worst]), "share_rho_above_1": above,
            "share_rho_above_tolerance": float(np.mean(measured > tolerance + RHO_SLACK)),
            "average_rho": float(measured.mean()),
           "tolerance": tolerance, "sharing_incentive": verdict}


def _mean(values: np.ndarray) -> float | None:
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else None


def _percentile(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) if values.size else None


def _makespan(per_job: dict) -> float | None:
    finish = per_job["finish"]
    if not len(finish) or not np.isfinite(finish).all():
        return None
    return float(finish.max() - per_job["arrival"].min())


HOURS = "h"               # the unit a replay's durations are printed in (Gavel's for JCT)


def hours_text(seconds: float) -> str:
    """A duration (seconds) as the text of its hours, as a replay's printed summaries show
    JCT, queueing and makespan (in ``HOURS``).

    >>> hours_text(118_500.0)
    '32.92'
    """
    return f"{seconds / 3600.0:.2f}"

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

The verdict over the jobs' lives claims only what was measured: ``holds`` when every job it is
taken over has a rho and none is above 1 (to ``RHO_SLACK``, the two runs' floats); a job
without a rho (a run did not finish it) makes it ``unrefuted`` at best, saying for how many
jobs rho was measured. A mechanism that delivers allocations in steps (Gavel's rounds) makes a
job late against its isolated run by up to its granularity even when the policy gives every
job its isolated share at every allocation: a job late by no more than the mechanism's
``Slack`` is ``unrefuted`` (its slack stated), one late by more ``fails``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fairalloc.replay.engine import Timeline
from fairalloc.replay.trace import Trace

RHO_SLACK = 1e-9          # rho within this of 1 counts as 1 (floats)


@dataclass(frozen=True)
class Slack:
    """How much later than under its isolated share (seconds of JCT) a job may finish by the
    mechanism's granularity alone, and why (0: the allocations are applied exactly)."""

    seconds: float = 0.0
    why: str = ""

    def text(self) -> str:
        """The slack as the verdict states it."""
        return f"slack {self.seconds:,.0f} s: {self.why}" if self.seconds else \
            f"rho to {RHO_SLACK:g}"


EXACT = Slack()           # ``ideal``: no slack beyond the floats


def jobs(trace: Trace, timeline: Timeline, reference: np.ndarray | None = None) -> dict:
    """Per job (trace order): id, arrival, start, finish, jct, queueing, isolated_jct (its JCT
    under the isolated share, ``reference``) and rho = jct / isolated_jct (NaN without a
    reference, or where either run did not finish the job)."""
    jct = timeline.finish - trace.arrival
    if reference is None:
        reference = np.full(trace.n, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = jct / reference
    return {"id": np.asarray(trace.ids, dtype=object), "arrival": trace.arrival,
            "start": timeline.start, "finish": timeline.finish, "jct": jct,
            "queueing": timeline.start - trace.arrival, "isolated_jct": reference, "rho": rho}


def window_of(n: int, window: tuple[int, int] | None) -> slice:
    """The jobs measured: positions [a, b) in arrival order (Gavel's job ids), all without."""
    if window is None:
        return slice(0, n)
    return slice(min(window[0], n), min(window[1], n))


# The run's measures taken over the window's jobs (``summary``'s ``window``); ``jobs``,
# ``finished``, ``makespan_s`` and ``jobs_per_s`` are over every job of the trace, and
# utilisation, ``end_s``, allocations and times over the whole run.
OVER_WINDOW = ("average_jct_s", "p50_jct_s", "p90_jct_s", "p99_jct_s", "average_queueing_s",
               "rho_measured", "worst_rho", "share_rho_above_1", "share_rho_above_tolerance",
               "average_rho", "sharing_incentive")


def summary(per_job: dict, timeline: Timeline, resources: tuple[str, ...],
            window: tuple[int, int] | None = None,
            tolerance: float = 1.0, slack: Slack = EXACT) -> dict:
    """The run's measures (JCT in seconds): ``OVER_WINDOW`` over the window's jobs (``window``:
    their positions ``from``-``to`` in arrival order, both included, how many and how many
    finished, ``given`` False when the document names no window and it is every job), the
    others over every job or the whole run; ``slack``: the mechanism's, for the verdict over
    the jobs' lives."""
    chosen = window_of(len(per_job["id"]), window)
    jct = per_job["jct"][chosen]
    done = jct[np.isfinite(jct)]
    out = {"status": timeline.status, "error": timeline.error,
           "jobs": int(len(per_job["id"])), "finished": int(np.isfinite(per_job["jct"]).sum()),
           "window": {"from": chosen.start, "to": chosen.stop - 1, "jobs": int(jct.size),
                      "finished": int(done.size), "given": window is not None,
                      "measures": list(OVER_WINDOW)},
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
    out.update(fairness(per_job, chosen, tolerance, slack))
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


def fairness(per_job: dict, chosen: slice, tolerance: float, slack: Slack = EXACT) -> dict:
    """Over the ``chosen`` jobs: how many have a rho, the worst rho (its job and how much
    later than under its isolated share it finished), the shares of measured jobs with rho
    above 1 and above ``tolerance``, and sharing incentive over the jobs' lives: ``holds``
    when every chosen job has a rho and none is above 1, ``fails`` with the worst job as
    witness when one is later than its isolated JCT by more than ``slack``, else
    ``unrefuted`` (some rho above 1 within the slack, or some job without a rho), and
    ``unchecked`` when no job has a rho."""
    rho = per_job["rho"][chosen]
    ids = per_job["id"][chosen]
    known = np.isfinite(rho)
    counted = {"rho_measured": int(known.sum()), "slack_s": slack.seconds,
               "tolerance": tolerance}
    if not known.any():
        return {**counted, "worst_rho": None, "worst_rho_job": None, "worst_rho_late_s": None,
                "share_rho_above_1": None, "average_rho": None,
                "share_rho_above_tolerance": None,
                "sharing_incentive": {"verdict": "unchecked", "detail": "no job has a rho "
                                      "(finish-time fairness not measured, or no job "
                                      "finished in both runs)", "witness": None,
                                      "slack_s": slack.seconds}}
    measured = rho[known]
    late = (per_job["jct"] - per_job["isolated_jct"])[chosen]
    worst = int(np.flatnonzero(known)[np.argmax(measured)])
    above = measured > 1 + RHO_SLACK
    beyond = known & (rho > 1 + RHO_SLACK) & (late > slack.seconds)
    witness = int(np.flatnonzero(beyond)[np.argmax(rho[beyond])]) if beyond.any() else worst
    verdict = _over_lives(ids, rho, late, witness, known, above, beyond.any(), slack)
    if verdict["verdict"] == "fails":
        verdict["witness"] = {"job": str(ids[witness]), "rho": float(rho[witness]),
                              "late_s": float(late[witness]),
                              "time": float(per_job["finish"][chosen][witness])}
    return {**counted, "worst_rho": float(rho[worst]), "worst_rho_job": str(ids[worst]),
            "worst_rho_late_s": float(late[worst]), "share_rho_above_1": float(above.mean()),
            "share_rho_above_tolerance": float(np.mean(measured > tolerance + RHO_SLACK)),
            "average_rho": float(measured.mean()), "sharing_incentive": verdict}


def _over_lives(ids: np.ndarray, rho: np.ndarray, late: np.ndarray, witness: int,
                known: np.ndarray, above: np.ndarray, fails: bool, slack: Slack) -> dict:
    """The verdict over the jobs' lives and its detail (see ``fairness``)."""
    n, k = known.size, int(known.sum())
    share = f"{above.mean():.1%} of the {k} jobs with a rho have rho > 1"
    job = (f"job {ids[witness]} took {rho_text(rho[witness])} x its JCT under its isolated "
           f"share ({late[witness]:+,.0f} s)")
    unmeasured = "" if k == n else (f"; rho measured for {k} of {n} jobs (the rest did not "
                                    "finish in both runs)")
    if fails:
        return {"verdict": "fails", "detail": f"{job}, later by more than the {slack.text()} "
                f"({share}){unmeasured}", "witness": None, "slack_s": slack.seconds}
    if above.any():
        return {"verdict": "unrefuted", "detail": f"no job later than its isolated JCT by "
                f"more than the {slack.text()}; worst: {job} ({share}){unmeasured}",
                "witness": None, "slack_s": slack.seconds}
    if k < n:
        return {"verdict": "unrefuted", "detail": f"rho <= 1 for the {k} jobs measured, but "
                f"rho measured for {k} of {n} jobs (the rest did not finish in both runs)",
                "witness": None, "slack_s": slack.seconds}
    return {"verdict": "holds", "detail": f"every one of {n} jobs finished no later than "
            f"under its isolated share (rho <= 1, to {RHO_SLACK:g})", "witness": None,
            "slack_s": slack.seconds}


def rho_text(rho: float) -> str:
    """A rho with the digits that show how far it is from 1 (one past the first that
    differs, at least two), so that a rho just above 1 never prints as 1.

    >>> rho_text(1.001383522), rho_text(1 + 3e-9), rho_text(4.1), rho_text(0.97), rho_text(1)
    ('1.0014', '1.0000000030', '4.10', '0.970', '1.00')
    """
    off = abs(rho - 1.0)
    digits = 2 if off == 0 or off >= 0.1 else min(12, math.ceil(-math.log10(off)) + 1)
    return f"{rho:.{digits}f}"


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

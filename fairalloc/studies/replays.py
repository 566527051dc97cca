"""A replay as a study task: the replay document of a study's instance, with its grid point's
keys set and the task's policy, played; its row in ``runs`` (settings and summary) and its
rows in ``replay_jobs`` (one a job) and ``replay_utilization`` (the share of each resource in
use over time, in at most ``UTILIZATION_BINS`` bins). Shared code: it names no kind.
"""

from __future__ import annotations

import json

import numpy as np

from fairalloc.replay import document as replays
from fairalloc.replay.run import ReplayRun, play
from fairalloc.studies.plan import Task, make_instance, with_policy

# the run's measures kept as ``metric.<name>`` columns (seconds, shares, counts, and 1 for a
# run whose window ended after its last arrival, 0 otherwise)
MEASURES = ("average_jct_s", "p50_jct_s", "p90_jct_s", "p99_jct_s", "average_queueing_s",
            "makespan_s", "end_s", "last_arrival_s", "arrivals_ended_first", "worst_rho",
            "average_rho", "share_rho_above_1", "share_rho_above_tolerance", "rho_measured",
            "jobs", "finished", "allocations", "solve_s", "jobs_per_s")
# the window's positions (both included) and counts, kept as ``metric.window_<key>``: the
# figure's CDFs take each run's window from them
WINDOW = ("from", "to", "jobs", "finished")
JOB_COLUMNS = ("arrival", "start", "finish", "jct", "queueing", "rho")
UTILIZATION_BINS = 200          # a run's utilisation over time, kept at this resolution
VERDICTS = ("holds", "fails", "unrefuted", "unchecked")
OVER_TIME = "finish_time_fairness"   # sharing incentive over the jobs' lives: rho <= 1


def task_document(task: Task) -> dict:
    """The replay document a task plays: its instance's, with the grid point's keys set and
    the task's policy."""
    raw = make_instance(task.kind, task.recipe, task.instance.seed, task.edits)
    return with_policy(raw, task.method)


def replay_fields(task: Task) -> dict:
    """Play a task's replay: the fields of its row (status, error, time, the run's measures
    as ``metric.*``, each check's verdict over the run as ``check.*``, the whole run but its
    jobs as ``result``) and its jobs and utilisation for their tables."""
    run = play(replays.load(task_document(task), task.recipe[2]))
    return run_fields(run)


def run_fields(run: ReplayRun) -> dict:
    """A played replay's row fields (see ``replay_fields``)."""
    s = run.summary
    fields: dict = {"status": run.status, "error": s["error"], "time_s": s["wall_s"]}
    fields.update({f"metric.{name}": float(s[name]) for name in MEASURES
                   if s.get(name) is not None})
    fields.update({f"metric.utilization.{r}": float(v) for r, v in s["utilization"].items()})
    fields.update({f"metric.window_{k}": float(s["window"][k]) for k in WINDOW})
    fields[f"check.{OVER_TIME}"] = s["sharing_incentive"]["verdict"]
    for check, counts in run.verdicts.items():
        fields[f"check.{check}"] = run_verdict(counts)
        fields.update({f"metric.verdicts.{check}.{v}": float(counts[v]) for v in VERDICTS})
    fields["result"] = json.dumps(run.to_dict(with_jobs=False), allow_nan=False)
    fields["replay_jobs"] = {"job": np.asarray(run.jobs["id"], dtype=object),
                             **{c: np.asarray(run.jobs[c], dtype=float) for c in JOB_COLUMNS}}
    fields["replay_utilization"] = binned_utilization(run.utilization, run.resources)
    return fields


def run_verdict(counts: dict) -> str:
    """A check's verdict over a run from its counts over the allocations judged: ``fails``
    when one failed, else ``unrefuted`` when one was only probed, else ``holds`` when every
    judged allocation held, else ``unchecked`` (none judged)."""
    for verdict in ("fails", "unrefuted", "holds"):
        if counts.get(verdict):
            return verdict
    return "unchecked"


def binned_utilization(over: dict, resources: tuple[str, ...],
                       bins: int = UTILIZATION_BINS) -> dict:
    """Utilisation over time (per plan interval: from, to, share of each resource) as the
    time-weighted mean share of each resource in ``bins`` equal bins of the run's span:
    columns ``from``, ``to``, ``resource``, ``share`` (one row a bin and resource)."""
    start, end = np.asarray(over["from"], dtype=float), np.asarray(over["to"], dtype=float)
    if not start.size or end[-1] <= start[0]:
        return {"from": np.zeros(0), "to": np.zeros(0), "resource": np.zeros(0, dtype=object),
                "share": np.zeros(0)}
    edges = np.linspace(start[0], end[-1], bins + 1)
    # the busy time of each resource up to each edge: the integral of share over time
    # (each interval's start and end: the busy time stands still across a gap between two)
    after = np.cumsum(over["share"] * (end - start)[:, None], axis=0)
    before = np.vstack([np.zeros(len(resources)), after[:-1]])
    busy = np.stack([before, after], axis=1).reshape(-1, len(resources))
    times = np.column_stack([start, end]).reshape(-1)
    at_edges = np.column_stack([np.interp(edges, times, busy[:, r])
                                for r in range(len(resources))])
    share = np.diff(at_edges, axis=0) / np.diff(edges)[:, None]
    k = len(resources)
    return {"from": np.repeat(edges[:-1], k), "to": np.repeat(edges[1:], k),
            "resource": np.tile(np.asarray(resources, dtype=object), bins),
            "share": share.reshape(-1)}

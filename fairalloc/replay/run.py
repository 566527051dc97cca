"""Play a replay document: the policy's run and (for finish-time fairness) the isolated
policy's run of the same trace, measured. What ``api.replay`` returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from fairalloc.allocation import _pandas, plain_value
from fairalloc.replay import measures
from fairalloc.replay.document import IDEAL, Document, longer, policies
from fairalloc.replay.engine import Checking, Ideal, Policy, Progress, Timeline, run
from fairalloc.result import MARKS

ISOLATED = "isolated"       # the reference policy of finish-time fairness (Gavel's "isolated")
TENANT = "tenant"           # the trace column naming each job's tenant (fair share)
# replays of a continuous generated trace made longer because its window ran dry: each one
# arrives until the last one's end and a quarter more (at most twice the jobs), so one is the
# rule; a second is for a cluster whose load makes the window end later as the trace grows.
# A replay costs at most 1 + 2 + 4 times its trace's, and an overloaded one says it ran dry
MOST_LONGER = 2


class ReplayFrames(NamedTuple):
    """A replay as pandas frames: one row a job, one row the run, one row a plan interval."""

    jobs: Any
    summary: Any
    utilization: Any


@dataclass
class ReplayRun:
    """A replay's outcome: ``jobs`` (column -> array, trace order: id, arrival, start, finish,
    jct, queueing, isolated_jct, rho), ``summary`` (the run's measures, ``status`` ``done`` or
    ``error`` with ``error`` saying when and why), ``verdicts`` (per check of the kind: counts
    of each verdict over the allocations judged, ``holds``, the worst witness), ``utilization``
    (per plan interval: from, to, share of each resource) and ``settings`` (what was
    replayed)."""

    name: str
    kind: str
    settings: dict
    jobs: dict
    summary: dict
    verdicts: dict
    utilization: dict = field(repr=False)
    resources: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        return self.summary["status"]

    @property
    def window(self) -> slice:
        """The positions of the jobs the window's measures are over (every job without a
        window)."""
        w = self.summary["window"]
        return slice(w["from"], w["to"] + 1)

    @property
    def window_text(self) -> str:
        """The jobs the window's measures are over: "jobs 4000-4999 in arrival order", or
        "all jobs" when the document names no window."""
        w = self.summary["window"]
        return f"jobs {w['from']}-{w['to']} in arrival order" if w["given"] else "all jobs"

    def to_dict(self, with_jobs: bool = True) -> dict:
        """Plain data (``fairalloc replay --format json``)."""
        out = {"replay": self.name, "kind": self.kind, "settings": self.settings,
               "summary": self.summary, "verdicts": self.verdicts}
        if with_jobs:
            out["jobs"] = [dict(zip(self.jobs, row)) for row in zip(*self.jobs.values())]
        return plain_value(out)

    def ran_dry(self) -> str | None:
        """Why the window's average is not a continuous experiment's, when its last arrival
        came before the window was done (None otherwise)."""
        s = self.summary
        if not s["arrivals_ended_first"]:
            return None
        return (f"the trace's last job arrived at {_hours(s['last_arrival_s'])}, before the "
                f"window ({self.window_text}) was done at "
                f"{_hours(s['end_s'])}: its last jobs ran on an emptying cluster (give the "
                "trace more jobs)")

    def rows(self) -> list[tuple[str, str]]:
        """The summary as (measure, value) text rows: JCT in hours (as Gavel reports it), each
        measure labelled with the jobs it is over: "(window)", the jobs the ``window`` row
        names (every job without one), "(all jobs)" or "(whole run)"."""
        s = self.summary
        w = s["window"]
        over = "(window)" if w["given"] else "(all jobs)"
        rows = [("status", s["status"] + (f": {s['error']}" if s["error"] else "")),
                ("jobs finished (all jobs)", f"{s['finished']} of {s['jobs']}")]
        if w["given"]:
            rows.append(("window", f"{self.window_text}: {w['jobs']} jobs, {w['finished']} "
                         "finished"))
        rows += [(f"average JCT {over}", _hours(s["average_jct_s"])),
                *([("ran dry", self.ran_dry())] if s["arrivals_ended_first"] else []),
                (f"JCT p50 / p90 / p99 {over}", " / ".join(_hours(s[f"p{q}_jct_s"])
                                                          for q in (50, 90, 99))),
                (f"average queueing {over}", _hours(s["average_queueing_s"])),
                ("makespan (all jobs)", _hours(s["makespan_s"])),
                ("utilization (whole run)", ", ".join(f"{r} {v:.1%}" for r, v in
                                                      s["utilization"].items()))]
        if s["worst_rho"] is not None:
            rows += [(f"rho measured {over}", f"for {s['rho_measured']} of {w['jobs']} jobs"),
                     (f"worst rho {over}", f"{measures.rho_text(s['worst_rho'])} (job "
                      f"{s['worst_rho_job']}, {s['worst_rho_late_s']:+,.0f} s against its "
                      "isolated JCT)"),
                     (f"rho > 1 / > tolerance {over}", f"{s['share_rho_above_1']:.1%} / "
                      f"{s['share_rho_above_tolerance']:.1%} (tolerance {s['tolerance']:g})")]
        rows.append((f"sharing incentive over time {over}", _verdict(s["sharing_incentive"])))
        for check, v in self.verdicts.items():
            counts = ", ".join(f"{v[k]} {k}" for k in ("holds", "fails", "unrefuted",
                                                      "unchecked") if v[k])
            mark = {True: "✓", False: "✗", None: "?"}[v["passed"]]
            worst = v["worst"]
            rows.append((f"check {check}", f"{mark} {counts}" + (
                f"; worst at {worst['time']:.0f} s: {worst['detail']}" if worst else "")))
        rows.append(("allocations / policy time", f"{s['allocations']} / "
                     f"{s['solve_s']:.2f} s"))
        rows.append(("wall time", f"{s['wall_s']:.2f} s"))
        return rows

    def to_pandas(self) -> ReplayFrames:
        """The jobs, the summary (flattened, one row) and utilisation over time as frames."""
        pd = _pandas("ReplayRun.to_pandas")
        summary = {k: v for k, v in self.summary.items()
                   if not isinstance(v, dict)}
        summary.update({f"utilization.{r}": v for r, v in
                        self.summary["utilization"].items()})
        summary.update({f"window.{k}": v for k, v in self.summary["window"].items()
                        if k != "measures"})
        summary["sharing_incentive"] = self.summary["sharing_incentive"]["verdict"]
        summary.update({f"check.{c}": v["passed"] for c, v in self.verdicts.items()})
        over = self.utilization
        util = pd.DataFrame({"from": over["from"], "to": over["to"],
                             **{r: over["share"][:, i] for i, r in
                                enumerate(self.resources)}})
        return ReplayFrames(pd.DataFrame(self.jobs), pd.DataFrame([summary]), util)


def play(doc: Document, progress: Progress | None = None) -> ReplayRun:
    """Replay the document's trace under its policy and mechanism; with finish-time fairness,
    the isolated policy's replay first (Gavel's reference for rho). A continuous generated
    trace whose window ended after its last arrival (its last jobs measured on an emptying
    cluster) is replayed again twice as long, until it no longer does (Gavel's simulator
    generates jobs until the window is done), at most ``MOST_LONGER`` times (an overloaded
    cluster may never finish the window: Gavel's loop would not end), or until the
    document's checks refuse a longer one; the summary's ``arrivals_ended_first`` says when
    the run still ran dry."""
    run = _played(doc, progress)
    for _ in range(MOST_LONGER):
        if run.status != "done" or not run.summary["arrivals_ended_first"]:
            break
        doc = longer(doc, run.summary["end_s"])
        if doc is None:
            break
        run = _played(doc, progress)
    return run


def _played(doc: Document, progress: Progress | None) -> ReplayRun:
    reference = None
    if doc.finish_time_fairness:
        if doc.policy == ISOLATED:
            reference = None        # rho against itself: 1 for every job that finished
        else:
            iso, _ = _timeline(doc, ISOLATED, policies(doc.kind)[ISOLATED], {}, Checking(),
                               None)
            reference = iso.finish - doc.trace.arrival
    timeline, slack = _timeline(doc, doc.policy, doc.run, doc.options, doc.checking,
                                progress)
    if doc.finish_time_fairness and reference is None:
        reference = timeline.finish - doc.trace.arrival
    per_job = measures.jobs(doc.trace, timeline, reference)
    replay = doc.kind.replay
    names = tuple(replay.resources(doc.cluster))
    summary = measures.summary(per_job, timeline, names, doc.window, doc.tolerance, slack)
    settings = {"trace": doc.trace.source, "jobs": doc.trace.n,
                "ignored_columns": list(doc.trace.ignored),
                "dropped_jobs": list(doc.trace.dropped), "policy": doc.policy,
                "options": doc.options, "mechanism": doc.mechanism, **doc.settings,
                "checks": {"every": doc.checking.every,
                           "names": list(doc.checking.names or doc.kind.check_names())
                           if doc.checking.every else []}}
    return ReplayRun(doc.name, doc.kind.name, plain_value(settings), per_job,
                     plain_value(summary), plain_value(timeline.verdicts),
                     measures.utilization_over_time(timeline), names)


def _timeline(doc: Document, name: str, function, options: dict, checking: Checking,
              progress: Progress | None) -> tuple[Timeline, measures.Slack]:
    """The run of policy ``name`` on the document's trace, and its mechanism's slack (how
    late its granularity alone may make a job: ``slack`` of the mechanism, none for
    ``ideal``)."""
    replay = doc.kind.replay
    seed = int(doc.settings.get("seed", 0))
    policy = Policy(doc.kind, doc.cluster, doc.jobs, name, function, options, checking, seed,
                    doc.trace.columns.get(TENANT))
    if doc.mechanism == IDEAL:
        mechanism = Ideal(replay, policy)
    else:
        mechanism = replay.mechanisms[doc.mechanism](doc.cluster, doc.jobs, policy,
                                                     doc.settings)
    watch = measures.window_of(doc.trace.n, doc.window) if doc.window else None
    return run(doc.trace, replay.work(doc.jobs), mechanism, policy,
               len(replay.resources(doc.cluster)), progress, watch,
               budget=getattr(mechanism, "budget", math.inf)), \
        getattr(mechanism, "slack", measures.EXACT)


def _hours(seconds: float | None) -> str:
    return "-" if seconds is None else f"{measures.hours_text(seconds)} {measures.HOURS}"


def _verdict(finding: dict) -> str:
    return f"{MARKS[finding['verdict']]} {finding['detail']}"

"""Issue 32, hangs and memory: a replay either runs in bounded time and memory or is refused
up front with the path at fault. ``rounds`` plays rounds where nothing can change as one
plan; what must still be played round by round is bounded when the document is read (rounds
a replay needs, jobs it holds at once); and the engine stops any run at a bound on its plans
computed at start.

The commands that could hang run in a subprocess under a timeout and a memory cap: the
timeout only guards against a hang, it measures nothing."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fairalloc import api
from fairalloc.cli import main
from fairalloc.errors import SpecError
from fairalloc.replay import clock, hetero
from fairalloc.replay.trace import Trace

ROOT = Path(__file__).resolve().parents[2]
QUICK = json.loads((ROOT / "specs/replay/quick.json").read_text())
GUARD_S = 120                  # a command past this hangs
MEMORY = 3 * 2 ** 30           # bytes of address space a command may map
EXAMPLES = int(os.environ.get("FAIRALLOC_FUZZ_EXAMPLES", "5"))
CAMPAIGN = "FAIRALLOC_FUZZ_EXAMPLES" in os.environ


def quick(**changes) -> dict:
    """The quick template with top-level parts replaced."""
    doc = copy.deepcopy(QUICK)
    doc.update(changes)
    return doc


def lone(steps: float, throughput: float = 1.0) -> dict:
    """A listed trace of one job of ``steps`` at ``throughput`` on every type."""
    return {"jobs": [{"id": "a", "arrival": 0, "steps": steps,
                      "throughput": {t: throughput for t in ("v100", "p100", "k80")}}]}


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def fairalloc(tmp_path: Path, command: str, doc: dict) -> subprocess.CompletedProcess:
    """``fairalloc COMMAND doc`` in a subprocess, memory capped, under the hang guard."""
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    return subprocess.run([sys.executable, "-m", "fairalloc.cli", command, str(path)],
                          capture_output=True, text=True, timeout=GUARD_S,
                          preexec_fn=_capped)


def problems(doc: dict) -> list[str]:
    """The JSON paths a document is refused for (none: it loads)."""
    try:
        api.replays.load(doc)
    except SpecError as exc:
        return [v.path for v in exc.violations]
    return []


# --- rounds where nothing changes are one plan ------------------------------------------------

@pytest.mark.parametrize("policy", ["max-min", "isolated"])     # aware, agnostic
def test_a_lone_long_job_is_one_plan_not_a_round_each(policy):
    # 3.6e6 steps at 1 step/s: 10,000 rounds of 360 s, which were 10,000 plans
    doc = quick(trace=lone(3.6e6), policy={"method": policy},
                measure={"finish_time_fairness": False})
    played = api.replay(doc)
    assert played.status == "done"
    assert played.jobs["finish"][0] == pytest.approx(3.6e6, rel=1e-12)
    assert len(played.utilization["from"]) <= 3


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "stream"), [
    ("max-min", "numpy"), ("agnostic-max-min", "numpy"), ("isolated", "gavel"),
    ("fifo", "numpy")])
def test_rounds_played_ahead_change_no_result(monkeypatch, policy, stream):
    doc = quick(policy={"method": policy}, measure={"finish_time_fairness": False},
                mechanism={"name": "rounds", "round_s": 120, "seed": 0, "stream": stream})
    ahead = api.replay(doc)
    monkeypatch.setattr(hetero.Rounds, "_unchanging", lambda self, state, needs: 1)
    one_by_one = api.replay(doc)
    assert len(ahead.utilization["from"]) < len(one_by_one.utilization["from"])
    np.testing.assert_allclose(ahead.jobs["finish"], one_by_one.jobs["finish"], rtol=1e-12)
    np.testing.assert_allclose(ahead.jobs["start"], one_by_one.jobs["start"], rtol=1e-12)
    assert ahead.summary["allocations"] == one_by_one.summary["allocations"]
    for kind, share in ahead.summary["utilization"].items():
        assert share == pytest.approx(one_by_one.summary["utilization"][kind], rel=1e-9)


# --- refused up front, with the path ----------------------------------------------------------

@pytest.mark.parametrize(("changes", "path"), [
    ({"mechanism": {"name": "rounds", "round_s": 1e-9}}, "mechanism.round_s"),
    ({"mechanism": {"name": "rounds", "round_s": 0.5}}, "mechanism.round_s"),
    ({"trace": lone(1e12)}, "trace.jobs.a.steps"),
    ({"trace": lone(1000, throughput=1e-6)}, "trace.jobs.a.steps"),
    ({"trace": lone(1e308, throughput=1e-6),
      "mechanism": {"name": "rounds", "round_s": 1e-300}}, "trace.jobs.a.steps"),
    ({"trace": {"generator": "static", "seed": 0, "jobs": 20_000},
      "mechanism": {"name": "ideal"}}, "trace.jobs"),
    ({"trace": {"generator": "gavel", "seed": 0, "jobs": 20_000, "rate": 2.0},
      "mechanism": {"name": "ideal"}}, "trace.jobs"),
])
def test_a_replay_too_long_or_too_wide_is_refused_naming_the_path(tmp_path, changes, path):
    done = fairalloc(tmp_path, "replay", quick(**changes))
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert f"  {path}: " in done.stderr


def test_drf_jobs_all_at_once_are_refused():
    doc = {"replay": "wide", "kind": "drf",
           "cluster": {"capacity": {"cpu": 64, "mem": 512, "gpu": 8}},
           "trace": {"generator": "static", "seed": 0, "jobs": 20_000}}
    assert problems(doc) == ["trace.jobs"]


def test_the_largest_shipped_replays_stay_within_the_bounds():
    for name in ("elasticflow-all", "fig8-gavel-stream", "fig8-base", "fig9-gavel-stream",
                 "quick"):
        assert problems(json.loads((ROOT / f"specs/replay/{name}.json").read_text())) == []


def test_figure_9s_trace_is_not_refused_at_its_studys_lowest_rate():
    """20,000 jobs at 0.2 jobs/hour arrive over 100,000 h: within the rounds a replay plays
    (24,000 would be refused), so every point of specs/studies/gavel-fig9.json runs."""
    doc = json.loads((ROOT / "specs/replay/fig9-gavel-stream.json").read_text())
    doc["trace"]["rate"] = 0.2
    assert problems(doc) == []


def test_figure_8_at_its_lowest_rate_is_not_refused():
    for policy in ("max-min", "agnostic-max-min"):
        assert problems(hetero.figure_8_document(policy, 0.4)) == []


def test_validate_refuses_a_count_of_jobs_beyond_the_schema_quickly(tmp_path):
    done = fairalloc(tmp_path, "validate", quick(trace={"generator": "gavel", "seed": 0,
                                                        "jobs": 10_000_000, "rate": 2.0}))
    assert done.returncode == 2, done.stderr
    assert "  trace.jobs: " in done.stderr


# --- the engine's own bound -----------------------------------------------------------------

class _Forever:
    """Holds its one job at no progress, one round after another."""

    def plan(self, state):
        return clock.Plan(np.zeros(state.active.size), np.zeros((state.active.size, 0)),
                    state.now + 1.0, held=True)

    def ran(self, state, plan, seconds):
        pass


def test_the_engine_stops_at_its_budget_with_an_error():
    trace = Trace.of(["a"], [0.0], {}, source="one")
    timeline = clock.run(trace, np.array([1.0]), _Forever(), budget=50)
    assert timeline.status == "error"
    assert "stopped after 50 plans" in timeline.error
    assert len(timeline.intervals) == 50
    assert math.isnan(timeline.finish[0])


def test_a_replay_past_its_budget_ends_in_error_exit_1(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(hetero, "most_plans", lambda jobs, round_s: 10)
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(quick(measure={"finish_time_fairness": False})))
    assert main(["replay", str(path)]) == 1
    err = capsys.readouterr().err
    assert "status error" in err and "stopped after 10 plans" in err
    played = api.replay(str(path))
    assert played.status == "error"
    assert 0 < len(played.utilization["from"]) <= 10
    assert played.summary["finished"] < played.summary["jobs"]


def test_at_once_counts_jobs_that_cannot_have_ended():
    arrival = np.array([0.0, 0.0, 1.0, 5.0, 5.0])
    active = clock.at_once(arrival, np.array([2.0, 0.5, 10.0, 1.0, 1.0]), np.zeros(5))
    assert active.tolist() == [2, 2, 3]          # at 0 (both), at 1, at 5 (both)
    assert clock.at_once(np.zeros(0), np.zeros(0), np.zeros(0)).size == 0


def test_at_once_counts_jobs_the_cluster_cannot_have_ended():
    # each job takes 1 s of the whole cluster: by 3 s at most 3 can have ended, not the 21
    # whose own least time is past
    arrival = np.arange(31) * 0.1
    assert clock.at_once(arrival, np.ones(31), np.ones(31)).max() == 28


@pytest.mark.slow
def test_the_plan_budget_bounds_the_plans_of_a_real_run():
    doc = api.replays.load(quick(measure={"finish_time_fairness": False},
                                 mechanism={"name": "rounds", "round_s": 36, "seed": 0}))
    played = api.replay(doc)
    assert played.status == "done"
    assert len(played.utilization["from"]) <= hetero.most_plans(doc.jobs, 36)


# --- whatever the sizes: exit 0/1/2, no traceback, within the guard ---------------------------

SIZES = st.sampled_from([1e-300, 1e-9, 1e-3, 1.5, 360, 1e6, 1e300])
TRACES = st.one_of(
    st.builds(lambda steps, t: lone(steps, t), st.sampled_from([1e-6, 1, 1e6, 1e9, 1e12,
                                                                1e300]),
              st.sampled_from([1e-9, 1e-3, 1, 1e3])),
    st.builds(lambda g, jobs, rate: {"generator": g, "seed": 0, "jobs": jobs,
                                     **({"rate": rate} if g == "gavel" else {})},
              st.sampled_from(["gavel", "static"]),
              st.sampled_from([1, 16, 20_000, 1_000_001, 10_000_000]),
              st.sampled_from([1e-300, 1e-3, 2.0, 1e6, 1e300])))


@pytest.mark.slow
@settings(max_examples=EXAMPLES, deadline=None, derandomize=not CAMPAIGN,
          suppress_health_check=list(HealthCheck))
@given(round_s=SIZES, trace=TRACES, ideal=st.booleans(),
       command=st.sampled_from(["replay", "validate"]))
def test_extreme_sizes_end_with_an_exit_code_within_the_guard(tmp_path_factory, round_s, trace,
                                                             ideal, command):
    mechanism = {"name": "ideal"} if ideal else {"name": "rounds", "round_s": round_s}
    doc = quick(trace=trace, mechanism=mechanism, measure={"finish_time_fairness": False})
    done = fairalloc(tmp_path_factory.mktemp("sizes"), command, doc)
    assert done.returncode in (0, 1, 2), done.stderr
    assert "Traceback" not in done.stderr and "Warning" not in done.stderr
    if done.returncode == 2:        # nothing else: one line per problem, each with its path
        assert done.stdout == ""
        assert all(re.match(r"  \S+: \S", line) for line in done.stderr.splitlines()[1:])

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
from pathlib import Path

import numpy as np
import pytest

from fairalloc import api
from fairalloc.replay import hetero

ROOT = Path(__file__).resolve().parents[2]
QUICK = json.loads((ROOT / "specs/replay/quick.json").read_text())


def quick(**changes) -> dict:
    """The quick template with top-level parts replaced."""
    doc = copy.deepcopy(QUICK)
    doc.update(changes)
    return doc


def lone(steps: float, throughput: float = 1.0) -> dict:
    """A listed trace of one job of ``steps`` at ``throughput`` on every type."""
    return {"jobs": [{"id": "a", "arrival": 0, "steps": steps,
                      "throughput": {t: throughput for t in ("v100", "p100", "k80")}}]}


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

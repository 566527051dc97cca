"""Space sharing in the replay: ``max-min-packed`` under Gavel's rounds (``PackedRounds``) and
``ideal`` runs a pair of jobs on one GPU, each at its co-located throughput from Gavel's
table."""

from __future__ import annotations

import pytest

from fairalloc import api
from fairalloc.models.hetero import measured, measured_pairs

# Gavel's table measures these two on a V100 side by side at their speeds alone
A, B = "ResNet-18 (batch size 32)", "ResNet-18 (batch size 64)"


def replay_pair(policy: str, mechanism: dict, workers: dict | None = None):
    """A and B, an hour's work alone on a V100 each, arriving at 0 on one V100."""
    jobs = [{"id": "a", "model": A, "duration": 3600.0},
            {"id": "b", "model": B, "duration": 3600.0}]
    run = api.replay({"replay": "pair", "kind": "hetero",
                      "cluster": {"workers": workers or {"v100": 1}},
                      "trace": {"jobs": jobs}, "policy": {"method": policy},
                      "mechanism": mechanism, "measure": {"finish_time_fairness": False}})
    assert run.status == "done"
    return run


def test_the_table_measures_the_pair_at_its_speeds_alone():
    together = measured_pairs()[((A, 1), (B, 1))]["v100"]
    assert together == pytest.approx((measured()[(A, 1)]["v100"], measured()[(B, 1)]["v100"]))


@pytest.mark.parametrize(("packed", "alone"), [("max-min-packed", "max-min"),
                                               ("fifo-packed", "fifo-aware")])
@pytest.mark.parametrize("mechanism", [{"name": "rounds"}, {"name": "ideal"}])
def test_a_pair_that_packs_well_shares_the_gpu(mechanism, packed, alone):
    """Sharing the V100 at full speed, both finish their hour at 3,600 s (ten rounds); time
    alone (max-min, FIFO) leaves one job its GPU for less, the later done at 7,200 s.
    fifo-packed pairs b, at the queue's head, with a: 1 + 1 of their speeds alone > 1.5."""
    run = replay_pair(packed, mechanism)
    assert run.jobs["finish"].tolist() == pytest.approx([3600.0, 3600.0], rel=1e-6)
    assert max(replay_pair(alone, mechanism).jobs["finish"]) >= 7200.0 * (1 - 1e-6)


def test_fifo_packs_only_above_gavels_threshold():
    """Two Recommendation jobs that make 0.22 + 0.18 of their speeds alone side by side (Gavel's
    table): below 1.5, so fifo-packed runs them one after the other, as fifo-aware."""
    jobs = [{"id": "a", "model": "Recommendation (batch size 1024)", "duration": 3600.0},
            {"id": "b", "model": "Recommendation (batch size 512)", "duration": 3600.0}]
    finish = []
    for policy in ("fifo-packed", "fifo-aware"):
        run = api.replay({"replay": "pair", "kind": "hetero", "cluster": {"workers": {"v100": 1}},
                          "trace": {"jobs": jobs}, "policy": {"method": policy},
                          "mechanism": {"name": "rounds"},
                          "measure": {"finish_time_fairness": False}})
        finish.append(run.jobs["finish"].tolist())
    assert finish[0] == pytest.approx(finish[1], rel=1e-9)


def test_with_a_gpu_each_no_pair_runs():
    """On two V100s each job has one alone: the LP's second stage shares nothing."""
    run = replay_pair("max-min-packed", {"name": "rounds"}, {"v100": 2})
    assert run.jobs["finish"].tolist() == pytest.approx([3600.0, 3600.0], rel=1e-6)

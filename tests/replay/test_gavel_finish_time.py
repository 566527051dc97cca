"""Gavel's finish-time fairness policies in a replay: the denominator of a job's ratio is the
time its progress so far would have taken at its isolated throughput, summed call by call
(``_cumulative_isolated_time``, ``scheduler/policies/finish_time_fairness.py`` lines 81-95),
not its time elapsed; a static spec has no history and keeps the time elapsed. A study that
varies ``policy.method`` keeps the options the new policy takes."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fairalloc.errors import SpecError
from fairalloc.models.hetero import (
    HeteroProblem,
    effective,
    isolated_throughput,
    largest_finish_time_ratio,
    time_of,
)
from fairalloc.registry import KINDS
from fairalloc.replay.document import policies
from fairalloc.replay.hetero import IsolatedProgress
from fairalloc.solvers.hetero import agnostic_finish_time, finish_time
from fairalloc.studies.plan import load_study, with_policy


def test_the_cumulative_isolated_time_adds_each_calls_steps_at_its_throughput():
    """Call 1: jobs 0 and 1 new (0 s). Call 2: job 1 did 20 steps at the previous call's
    isolated throughput 1 (20 s), job 2 is new. Call 3: job 1 did 20 steps at 4 (5 s more),
    job 2 none."""
    state = IsolatedProgress()
    first = state.advance([0, 1], np.array([100.0, 50.0]), np.array([2.0, 1.0]))
    second = state.advance([1, 2], np.array([30.0, 10.0]), np.array([4.0, 4.0]))
    third = state.advance([1, 2], np.array([10.0, 10.0]), np.array([1.0, 1.0]))
    assert first.tolist() == [0.0, 0.0]
    assert second.tolist() == [20.0, 0.0]
    assert third.tolist() == [25.0, 0.0]


def two_jobs_on_one_gpu(isolated_time: np.ndarray | None) -> HeteroProblem:
    """Two jobs of 1 step/s on one GPU, 3600 steps left each, both 3600 s in."""
    return HeteroProblem(ids=("a", "b"), types=("v100",), workers=np.array([1.0]),
                         throughput=np.array([[1.0], [1.0]]), scale=np.ones(2),
                         weights=np.ones(2), steps=np.full(2, 3600.0),
                         elapsed=np.full(2, 3600.0), isolated_time=isolated_time)


@pytest.mark.parametrize("method", [finish_time, agnostic_finish_time])
def test_a_job_behind_its_isolated_progress_gets_more(method):
    """Job a's progress would have taken 0 s at its isolated share, b's 3600 s (the time
    elapsed): the ratios (3600 + 3600 / x_j) / (I_j + 7200) are equal at x_a^2 + 4 x_a - 3 = 0,
    x_a = sqrt(7) - 2. Without a history (the static spec) both ratios are 1 at the halves."""
    gavel = two_jobs_on_one_gpu(np.array([0.0, 3600.0]))
    x = time_of(gavel, method(gavel).allocation)
    assert x[:, 0] == pytest.approx([math.sqrt(7) - 2, 3 - math.sqrt(7)], rel=1e-6)
    static = two_jobs_on_one_gpu(None)
    assert time_of(static, method(static).allocation)[:, 0] == pytest.approx([0.5, 0.5])


def test_the_replay_feeds_gavels_cumulative_isolated_time():
    """The replay's ``finish-time`` at its second call: its rho is the largest ratio over
    I_j = the steps done since the first call at the first call's isolated throughput."""
    run = policies(KINDS["hetero"])["finish-time"]
    throughput = np.array([[3.0, 1.0], [2.0, 2.0], [1.0, 1.0]])
    memory = {"seed": 0, "active": np.arange(3)}

    def problem(steps: list[float], elapsed: float) -> HeteroProblem:
        return HeteroProblem(ids=("a", "b", "c"), types=("v100", "k80"),
                             workers=np.array([1.0, 1.0]), throughput=throughput,
                             scale=np.ones(3), weights=np.ones(3),
                             steps=np.array(steps), elapsed=np.full(3, elapsed))

    first = problem([9000.0, 9000.0, 9000.0], 0.0)
    run(first, memory=memory)
    second = problem([7000.0, 8500.0, 8800.0], 1800.0)
    solution = run(second, memory=memory)
    done = np.array([2000.0, 500.0, 200.0])
    expected = HeteroProblem(**{**second.__dict__,
                                "isolated_time": done / isolated_throughput(first)})
    x = time_of(second, solution.allocation)
    assert solution.solver["rho"] == pytest.approx(
        largest_finish_time_ratio(expected, effective(second, x)), rel=1e-9)
    assert solution.solver["rho"] != pytest.approx(
        largest_finish_time_ratio(second, effective(second, x)), rel=1e-3)


def test_a_study_keeps_the_options_the_new_policy_takes(tmp_path):
    """A grid's ``policy.reference_type`` beside a ``max-min`` document reaches
    ``agnostic-finish-time`` (it takes it) and not ``finish-time`` (it does not); the
    document's ``point`` reaches both finish-time methods and ``max-min-isolated``, which
    take it."""
    document = {"replay": "tiny", "kind": "hetero",
                "cluster": {"workers": {"v100": 1, "k80": 1}},
                "trace": {"generator": "gavel", "seed": 0, "jobs": 4, "rate": 4.0},
                "policy": {"method": "max-min", "point": "centre"},
                "mechanism": {"name": "rounds"}}
    (tmp_path / "tiny.json").write_text(json.dumps(document))
    study = {"study": "ftf", "kind": "hetero", "instances": {"base": "tiny.json"},
             "grid": {"policy.method": ["agnostic-finish-time", "finish-time",
                                        "max-min-isolated"],
                      "policy.reference_type": ["v100"]}}
    (tmp_path / "study.json").write_text(json.dumps(study))
    loaded = load_study(str(tmp_path / "study.json"))
    instance = next(iter(loaded.instances()))
    assert loaded.instance_spec(instance, "agnostic-finish-time")["policy"] == {
        "method": "agnostic-finish-time", "point": "centre", "reference_type": "v100"}
    assert loaded.instance_spec(instance, "finish-time")["policy"] == {
        "method": "finish-time", "point": "centre"}
    assert with_policy(document, "max-min-isolated")["policy"] == {
        "method": "max-min-isolated", "point": "centre"}


@pytest.mark.parametrize("policies, option", [(["max-min", "finish-time"], "reference_type"),
                                              (["fifo", "gandiva"], "memory")])
def test_a_grid_option_no_policy_of_the_study_takes_is_refused(tmp_path, policies, option):
    """``policy.reference_type`` beside ``max-min`` and ``finish-time`` alone would reach
    no run: a bad study naming the key, not a silent sweep without it. ``memory`` is the
    state the engine hands a stateful policy (``fifo``, ``gandiva``), no option of the user's
    (the study took it as one)."""
    document = {"replay": "tiny", "kind": "hetero",
                "cluster": {"workers": {"v100": 1, "k80": 1}},
                "trace": {"generator": "gavel", "seed": 0, "jobs": 4, "rate": 4.0},
                "policy": {"method": "max-min"}, "mechanism": {"name": "rounds"}}
    (tmp_path / "tiny.json").write_text(json.dumps(document))
    study = {"study": "ftf", "kind": "hetero", "instances": {"base": "tiny.json"},
             "grid": {"policy.method": policies, f"policy.{option}": ["v100"]}}
    (tmp_path / "study.json").write_text(json.dumps(study))
    with pytest.raises(SpecError) as refused:
        load_study(str(tmp_path / "study.json"))
    assert [v.path for v in refused.value.violations] == [f'grid["policy.{option}"]']
    assert "no policy of the study takes" in refused.value.violations[0].rule

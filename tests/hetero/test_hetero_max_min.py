"""hetero's default ``max-min`` does Gavel's second stage: at the max-min level, the most
total normalised throughput, so capacity that no job's minimum needs is not left idle."""

from __future__ import annotations

import json

import numpy as np
import pytest
from clitools import ROOT

import fairalloc
from fairalloc.models.hetero import effective, isolated_throughput, throughput_program, time_of
from fairalloc.solvers.hetero import max_min_value
from fairalloc.spec import load_spec

GAVEL_MIX = ROOT / "specs" / "hetero" / "gavel-mix.json"


def level_only_total(path) -> float:
    """The total steps/s of the max-min LP's own optimum (the first stage alone)."""
    p = load_spec(path).problem
    program = throughput_program(p)
    _, v, _ = max_min_value(p, program, p.weights * isolated_throughput(p))
    return float(effective(p, program.to_time(v, p.k)).sum())


def idle_but_wanted(result, path) -> list[tuple[str, str]]:
    """(type, job) pairs where the type has free GPUs and the job could run on it for time it
    does not yet use."""
    p = load_spec(path).problem
    x = time_of(p, result.allocation)
    used = (p.scale[:, None] * x).sum(axis=0)
    spare_time = x.sum(axis=1) < 1 - 1e-9
    return [(p.types[k], p.ids[j]) for k in range(p.k) for j in range(p.n)
            if used[k] < p.workers[k] - 1e-9 and p.throughput[j, k] > 0
            and p.scale[j] <= p.workers[k] - used[k] + 1e-9 and spare_time[j]]


def test_max_min_keeps_leximins_minimum_and_leaves_no_capacity_idle():
    max_min = fairalloc.solve(str(GAVEL_MIX), "max-min")
    leximin = fairalloc.solve(str(GAVEL_MIX), "leximin")
    assert max_min.objective == pytest.approx(leximin.objective, rel=1e-9)
    assert max_min.metrics["min_normalized_throughput"] == pytest.approx(leximin.objective,
                                                                         rel=1e-8)
    assert max_min.metrics["total_throughput"] >= level_only_total(GAVEL_MIX) * (1 + 0.2)
    verdicts = {f.check: f.verdict for f in max_min.validation}
    assert verdicts["pareto_efficiency"] == "holds" and verdicts["max_min"] == "holds"
    assert idle_but_wanted(max_min, GAVEL_MIX) == []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_both_formulations_fill_above_the_level_alike(seed):
    from fairalloc.studies.hetero import random_spec

    spec = random_spec(seed, jobs=12)
    matrix = fairalloc.solve(spec, "max-min")
    pyomo = fairalloc.solve({**spec, "options": {"formulation": "pyomo"}}, "max-min")
    for result in (matrix, pyomo):
        assert {f.check: f.verdict for f in result.validation}["pareto_efficiency"] == "holds"
    assert pyomo.metrics["total_normalized_throughput"] == pytest.approx(
        matrix.metrics["total_normalized_throughput"], rel=1e-7)
    assert np.isfinite(json.loads(matrix.to_json())["objective"])

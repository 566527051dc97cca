"""The hetero kind on hand-worked instances: heterogeneity-aware against agnostic max-min, the
isolated reference, finish-time fairness against a brute-force search, the checks' verdicts
with witnesses, and the measured Gavel table."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from clitools import ROOT, cli, write

import fairalloc
from fairalloc.errors import SpecError
from fairalloc.models.hetero import measured

UNFAIR = ROOT / "specs" / "hetero" / "agnostic-unfair.json"


def verdicts(result) -> dict[str, str]:
    return {f.check: f.verdict for f in result.validation}


def test_agnostic_max_min_wastes_the_v100():
    """Hand-worked: 1 K80 + 1 V100, R jobs 10/80 steps/s, L jobs 10/12. The isolated share is
    a quarter of each GPU (E_R = 22.5, E_L = 5.5). With the L jobs on the K80 (5 steps/s each)
    topped up by b of the V100 each and the R jobs splitting the rest, every job reaches level
    z when 5 + 12 b = 5.5 z and 40 (1 - 2 b) = 22.5 z: z = 88/71."""
    aware = fairalloc.solve(UNFAIR, "max-min")
    agnostic = fairalloc.solve(UNFAIR, "agnostic-max-min")
    assert aware.objective == pytest.approx(88 / 71, rel=1e-9)
    assert agnostic.objective == pytest.approx(1.0, rel=1e-9)
    for job in ("L1", "L2"):                  # agnostic: a quarter of the V100 to each L job
        assert agnostic.allocation[job]["time"]["v100"] == pytest.approx(0.25)
    v100_to_l = sum(aware.allocation[j]["time"]["v100"] for j in ("L1", "L2"))
    assert v100_to_l == pytest.approx(1 - 2 * 22.5 * 88 / 71 / 80, rel=1e-6)   # 2 b
    assert verdicts(agnostic)["pareto_efficiency"] == "fails"
    assert verdicts(agnostic)["max_min"] == "fails"
    assert verdicts(aware)["max_min"] == "holds"
    assert verdicts(aware)["sharing_incentive"] == "holds"
    leximin = fairalloc.solve(UNFAIR, "leximin")
    assert verdicts(leximin)["pareto_efficiency"] == "holds"
    assert min(leximin.allocation[j]["normalized"] for j in leximin.allocation) == \
        pytest.approx(88 / 71, rel=1e-9)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_pyomo_and_matrix_formulations_reach_the_same_optimum(seed):
    from fairalloc.studies.hetero import random_spec

    spec = random_spec(seed, jobs=25, workers=4, weighted=True)
    matrix = fairalloc.solve(spec, "max-min")
    spec["options"] = {"formulation": "pyomo"}
    pyomo = fairalloc.solve(spec, "max-min")
    assert pyomo.objective == pytest.approx(matrix.objective, rel=1e-7)
    assert {f.check: f.verdict for f in pyomo.validation}["max_min"] == "holds"


def test_one_type_makes_aware_and_agnostic_agree():
    spec = {"problem": "hetero", "workers": {"v100": 3},
            "jobs": [{"id": f"j{i}", "throughput": {"v100": t}, "weight": w}
                     for i, (t, w) in enumerate([(5, 1), (20, 2), (7, 1), (1, 3)])]}
    aware = fairalloc.solve(spec, "leximin")
    agnostic = fairalloc.solve(spec, "agnostic-max-min")
    for job in aware.allocation:
        assert aware.allocation[job]["normalized"] == \
            pytest.approx(agnostic.allocation[job]["normalized"], rel=1e-7)


def test_isolated_share_scales_rows_to_one():
    """2 jobs, 4 K80s and 2 V100s, scale factors 1 and 2: x = W_k / (n s_j) = (2, 1) for the
    first job, scaled to (2/3, 1/3); (1, 0.5) for the second, scaled to (2/3, 1/3)."""
    spec = {"problem": "hetero", "workers": {"k80": 4, "v100": 2},
            "jobs": [{"id": "a", "throughput": {"k80": 3, "v100": 9}},
                     {"id": "b", "throughput": {"k80": 2, "v100": 8}, "scale_factor": 2}]}
    result = fairalloc.solve(spec, "isolated")
    assert result.allocation["a"]["time"] == pytest.approx({"k80": 2 / 3, "v100": 1 / 3})
    assert result.allocation["b"]["time"] == pytest.approx({"k80": 2 / 3, "v100": 1 / 3})
    assert result.allocation["a"]["throughput"] == pytest.approx(2 + 3)
    assert all(f.verdict == "holds" for f in result.validation
               if f.check in ("feasibility", "sharing_incentive"))


def test_finish_time_without_elapsed_time_is_max_min():
    """With t_j = 0, rho_j = E_j^iso / E_j: minimising the largest is maximising the smallest
    normalised throughput."""
    spec = json.loads(UNFAIR.read_text(encoding="utf-8"))
    for job in spec["jobs"]:
        job |= {"steps_remaining": 1000, "time_elapsed": 0}
    result = fairalloc.solve(spec, "finish-time")
    assert result.status == "optimal"
    assert result.metrics["max_finish_time_ratio"] == pytest.approx(71 / 88, rel=1e-8)
    assert result.metrics["finish_time_bound"] <= 71 / 88 + 1e-12


@pytest.mark.slow
def test_finish_time_matches_a_brute_force_search():
    """Two jobs, one K80 and one V100, time elapsed and steps that differ: the bisection's
    rho against a grid over every split of both GPUs (the grid is an upper bound on the
    optimum, within its step of it)."""
    spec = {"problem": "hetero", "workers": {"k80": 1, "v100": 1},
            "jobs": [{"id": "a", "throughput": {"k80": 2, "v100": 3},
                      "steps_remaining": 500, "time_elapsed": 400},
                     {"id": "b", "throughput": {"k80": 1, "v100": 5},
                      "steps_remaining": 900, "time_elapsed": 50}]}
    result = fairalloc.solve(spec, "finish-time")
    rho = result.metrics["max_finish_time_ratio"]
    p = fairalloc.load_spec(spec).problem
    from fairalloc.models.hetero import finish_time_ratio

    grid = np.linspace(0, 1, 401)
    order = np.argsort(-p.throughput[1])          # b fills its best type first
    best = np.inf
    for a_k80, a_v100 in itertools.product(grid, grid):
        if a_k80 + a_v100 > 1:
            continue
        left, room = np.array([1 - a_k80, 1 - a_v100]), 1.0
        b = np.zeros(2)
        for k in order:
            b[k] = min(left[k], room)
            room -= b[k]
        x = np.array([[a_k80, a_v100], b])
        best = min(best, finish_time_ratio(p, (p.throughput * x).sum(axis=1)).max())
    assert rho <= best + 1e-9
    assert rho >= best - 0.01
    assert result.status == "optimal"


def test_envy_is_found_with_its_witness(tmp_path):
    """A gets the whole V100, B the K80; B makes 4 steps/s of A's V100 time against 1."""
    spec = write(tmp_path, {"problem": "hetero", "workers": {"k80": 1, "v100": 1},
                            "jobs": [{"id": "A", "throughput": {"k80": 1, "v100": 1}},
                                     {"id": "B", "throughput": {"k80": 1, "v100": 4}}]})
    allocation = {"A": {"time": {"k80": 0, "v100": 1}}, "B": {"time": {"k80": 1, "v100": 0}}}
    result = fairalloc.validate(spec, allocation)
    found = {f.check: f for f in result.validation}
    assert found["envy_freeness"].verdict == "fails"
    assert found["envy_freeness"].witness == {"envious": "B", "envied": "A", "own": 1.0,
                                              "from_bundle": 4.0}
    assert found["pareto_efficiency"].verdict == "fails"       # swap: both gain
    assert found["feasibility"].verdict == "holds"


def test_an_over_allocation_is_infeasible():
    spec = {"problem": "hetero", "workers": {"v100": 1},
            "jobs": [{"id": "A", "throughput": {"v100": 1}},
                     {"id": "B", "throughput": {"v100": 1}}]}
    result = fairalloc.validate(spec, {"A": {"time": {"v100": 0.7}},
                                       "B": {"time": {"v100": 0.6}}})
    assert result.status == "infeasible"
    assert "v100: 1.3 GPUs in use of 1" in result.validation[0].detail


def test_model_lookups_use_the_measured_table():
    spec = {"problem": "hetero", "workers": {"k80": 1, "p100": 1, "v100": 1},
            "jobs": [{"id": "r", "model": "ResNet-50 (batch size 64)"},
                     {"id": "t", "model": "Transformer (batch size 64)", "scale_factor": 1}]}
    p = fairalloc.load_spec(spec).problem
    row = measured()[("ResNet-50 (batch size 64)", 1)]
    assert p.throughput[0].tolist() == [row["k80"], row["p100"], row["v100"]]
    assert len({m for m, _ in measured()}) == 26
    assert {s for _, s in measured()} == {1, 2, 4, 8}


@pytest.mark.parametrize("job, path, rule", [
    ({"id": "x", "model": "ResNet-50 (batch 64)"}, "jobs[0].model",
     "did you mean 'ResNet-50 (batch size 64)'"),
    ({"id": "x", "model": "A3C", "scale_factor": 2}, "jobs[0].scale_factor",
     "A3C is measured at scale factors 1 only"),
    ({"id": "x", "throughput": {"tpu": 5}}, "jobs[0].throughput.tpu", "unknown worker type"),
    ({"id": "x", "throughput": {"k80": 0, "v100": 0}}, "jobs[0].throughput",
     "can run on no worker type"),
    ({"id": "x", "throughput": {"k80": 5}, "scale_factor": 8}, "jobs[0].throughput",
     "needs 8 GPU(s)"),
])
def test_preconditions_name_path_and_rule(job, path, rule):
    spec = {"problem": "hetero", "workers": {"k80": 2, "v100": 2}, "jobs": [job]}
    with pytest.raises(SpecError) as caught:
        fairalloc.load_spec(spec)
    assert any(v.path == path and rule in v.rule for v in caught.value.violations), \
        caught.value.report()


def test_finish_time_needs_steps_and_time(capsys):
    code, out, err = cli(capsys, "solve", str(UNFAIR), "--method", "finish-time")
    assert code == 2 and "finish-time needs steps_remaining and time_elapsed" in err


def test_random_specs_draw_from_the_table_and_solve():
    from fairalloc.studies.hetero import random_spec

    a, b = random_spec(3, jobs=30), random_spec(4, jobs=30)
    assert a != b and a == random_spec(3, jobs=30)
    for spec in (a, b):
        result = fairalloc.solve(spec, "max-min")
        assert result.status == "optimal" and verdicts(result)["sharing_incentive"] == "holds"
        assert fairalloc.solve(spec, "finish-time").status == "optimal"


def test_the_study_preset_runs(tmp_path, capsys):
    study = json.loads((ROOT / "specs" / "studies" / "hetero-aware-vs-agnostic.json")
                       .read_text(encoding="utf-8"))
    study["instances"]["count"] = 2
    study["grid"] = {"jobs": [12]}
    path = write(tmp_path, study, "study.json")
    code, _, _ = cli(capsys, "study", "run", path, "--store", str(tmp_path / "s.duckdb"),
                     "--workers", "1", "-q")
    assert code == 0
    code, out, _ = cli(capsys, "study", "summary", str(tmp_path / "s.duckdb"), "--values",
                       "metric.min_normalized_throughput", "--format", "csv")
    assert code == 0 and "agnostic-max-min" in out and "max-min" in out

"""hetero's ``max-min-packed`` (Gavel's ``max_min_fairness_packed``): max-min over allocations
in which two jobs may share a GPU at their co-located throughputs (the spec's ``colocated``),
with cases computed by hand, and the checks that judge shared time."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc
from fairalloc.errors import SpecError
from fairalloc.models.hetero import colocated, measured_pairs, shared_of, throughput_of
from fairalloc.spec import load_spec


def two_on_one_v100(together: tuple[float, float]) -> dict:
    """Two jobs of 10 steps/s alone on one V100, ``together`` steps/s side by side."""
    return {"problem": "hetero", "workers": {"v100": 1},
            "jobs": [{"id": "a", "throughput": {"v100": 10}},
                     {"id": "b", "throughput": {"v100": 10}}],
            "colocated": {"pairs": [{"jobs": ["a", "b"], "throughput": {"v100": together}}]}}


def verdicts(result) -> dict[str, str]:
    return {f.check: f.verdict for f in result.validation}


def test_two_jobs_that_pack_well_share_the_gpu_and_each_gets_more_than_alone():
    """By hand: with a and b alone for x_a, x_b and together for y (x_a + x_b + y <= 1), the
    symmetric point gives each 10 x + 8 y with 2 x + y = 1, i.e. 5 + 3 y: y = 1, 8 steps/s
    each, where time alone gives 5 each (max-min)."""
    spec = two_on_one_v100((8, 8))
    packed = fairalloc.solve(spec, "max-min-packed")
    alone = fairalloc.solve(spec, "max-min")
    p = load_spec(spec).problem
    assert throughput_of(p, packed.allocation) == pytest.approx([8, 8], rel=1e-8)
    assert throughput_of(p, alone.allocation) == pytest.approx([5, 5], rel=1e-8)
    assert packed.allocation["a"]["shared"]["b"]["v100"] == pytest.approx(1.0)
    assert packed.metrics["gavel_level"] == pytest.approx(0.8)     # 8 / (10 x 1/1)
    assert packed.objective == pytest.approx(1.6)                   # 8 / E_iso = 8 / 5
    assert verdicts(packed)["feasibility"] == "holds"
    assert verdicts(packed)["max_min"] == "holds"
    assert verdicts(packed)["sharing_incentive"] == "holds"


def test_two_jobs_that_pack_badly_do_not_share():
    """By hand: at 6 and 3 steps/s together, equal throughputs need x_b = x_a + 0.3 y, so
    each gets 5 - 0.5 y: sharing only loses, y = 0, 5 each."""
    packed = fairalloc.solve(two_on_one_v100((6, 3)), "max-min-packed")
    p = load_spec(two_on_one_v100((6, 3))).problem
    assert throughput_of(p, packed.allocation) == pytest.approx([5, 5], rel=1e-8)
    assert shared_of(p, packed.allocation) is None or not shared_of(
        p, packed.allocation).any()


def test_without_colocated_it_is_max_min():
    spec = two_on_one_v100((8, 8))
    del spec["colocated"]
    packed = fairalloc.solve(spec, "max-min-packed")
    assert packed.objective == pytest.approx(fairalloc.solve(spec, "max-min").objective)
    assert "no two jobs can share" in packed.solver["name"]


def test_measured_pairs_come_from_gavels_file_by_scale_factor():
    """Gavel keys a pair by both jobs' (model, scale factor); jobs of different scale factors
    never share."""
    spec = {"problem": "hetero", "workers": {"v100": 2, "k80": 2},
            "jobs": [{"id": "r", "model": "ResNet-18 (batch size 64)"},
                     {"id": "l", "model": "LM (batch size 20)"},
                     {"id": "w", "model": "LM (batch size 20)", "scale_factor": 2}],
            "colocated": {"measured": True}}
    p = load_spec(spec).problem
    c = colocated(p)
    row = measured_pairs()[(("ResNet-18 (batch size 64)", 1), ("LM (batch size 20)", 1))]
    v100 = p.types.index("v100")
    expected = row["v100"] if min(row["v100"]) > 0 else (0.0, 0.0)
    assert (c[0, 1, v100], c[1, 0, v100]) == pytest.approx(expected)
    assert not c[2].any() and not c[:, 2].any()


def test_a_pair_may_share_only_what_it_can():
    """feasibility refuses shared time where the two cannot share, and asymmetric time."""
    spec = two_on_one_v100((8, 0))          # b makes nothing beside a: no pair
    spec["jobs"].append({"id": "c", "throughput": {"v100": 10}})
    shared = {"a": {"b": 0.5}, "b": {"a": 0.5}}
    data = {job: {"time": {"v100": 0.5 if job == "c" else 0},
                  "shared": {other: {"v100": shared.get(job, {}).get(other, 0)}
                             for other in "abc"}}
            for job in "abc"}
    found = fairalloc.validate(spec, data)
    feasibility = next(f for f in found.validation if f.check == "feasibility")
    assert feasibility.verdict == "fails"
    assert "a and b cannot share v100" in feasibility.detail


def test_envy_is_unchecked_on_shared_time_and_pareto_judged_with_pairs():
    packed = fairalloc.solve(two_on_one_v100((8, 8)), "max-min-packed")
    assert verdicts(packed)["envy_freeness"] == "unchecked"
    assert verdicts(packed)["pareto_efficiency"] == "holds"


def test_pareto_fails_when_a_pair_leaves_its_gpu_half_idle():
    """a and b share the V100 half the time and the other half it idles: both could share it
    all the time (8 each instead of 4): refuted with a witness among allocations with pairs."""
    half = {job: {"time": {"v100": 0}, "shared": {other: {"v100": 0.5 if other != job else 0}
                                                   for other in "ab"}}
            for job in "ab"}
    found = fairalloc.validate(two_on_one_v100((8, 8)), half)
    pareto = next(f for f in found.validation if f.check == "pareto_efficiency")
    assert pareto.verdict == "fails"
    assert pareto.witness["could_have"] == pytest.approx(8.0, rel=1e-6)


@pytest.mark.parametrize(("pair", "path", "rule"), [
    ({"jobs": ["a", "z"], "throughput": {"v100": [1, 1]}}, "colocated.pairs[0].jobs[1]",
     "no job 'z'"),
    ({"jobs": ["a", "a"], "throughput": {"v100": [1, 1]}}, "colocated.pairs[0].jobs",
     "two different jobs"),
    ({"jobs": ["a", "b"], "throughput": {"tpu": [1, 1]}}, "colocated.pairs[0].throughput.tpu",
     "unknown worker type"),
])
def test_a_bad_pair_is_named_by_its_path(pair, path, rule):
    spec = two_on_one_v100((8, 8))
    spec["colocated"]["pairs"] = [pair]
    with pytest.raises(SpecError) as caught:
        load_spec(spec)
    assert any(path == v.path and rule in v.rule for v in caught.value.violations), \
        caught.value


def test_a_measured_mix_packs_and_beats_max_min():
    """Gavel's measured pairs on a loaded V100-only cluster: packing raises the level."""
    models = ["ResNet-18 (batch size 64)", "LM (batch size 20)", "A3C",
              "Transformer (batch size 64)", "CycleGAN", "ResNet-50 (batch size 64)"]
    spec = {"problem": "hetero", "workers": {"v100": 2},
            "jobs": [{"id": f"j{i}", "model": m} for i, m in enumerate(models)],
            "colocated": {"measured": True}}
    packed = fairalloc.solve(spec, "max-min-packed")
    alone = fairalloc.solve(spec, "max-min")
    assert packed.metrics["gavel_level"] > alone.metrics["gavel_level"] * (1 + 1e-6)
    assert verdicts(packed)["feasibility"] == "holds"
    assert verdicts(packed)["max_min"] == "holds"
    assert np.isclose(sum(packed.metrics["utilization"].values()), 1.0)


def measured_mix_written_out(factor: float) -> dict:
    """The measured mix above with every throughput, alone and side by side, given by hand
    and multiplied by ``factor`` (steps in another unit; time unchanged)."""
    models = ["ResNet-18 (batch size 64)", "LM (batch size 20)", "A3C",
              "Transformer (batch size 64)", "CycleGAN", "ResNet-50 (batch size 64)"]
    p = load_spec({"problem": "hetero", "workers": {"v100": 2},
                   "jobs": [{"id": f"j{i}", "model": m} for i, m in enumerate(models)],
                   "colocated": {"measured": True}}).problem
    c = colocated(p)
    pairs = [{"jobs": [p.ids[i], p.ids[j]],
              "throughput": {"v100": [c[i, j, 0] * factor, c[j, i, 0] * factor]}}
             for i in range(p.n) for j in range(i + 1, p.n) if c[i, j, 0] > 0]
    return {"problem": "hetero", "workers": {"v100": 2},
            "jobs": [{"id": uid, "throughput": {"v100": float(t[0]) * factor}}
                     for uid, t in zip(p.ids, p.throughput)],
            "colocated": {"pairs": pairs}}


@pytest.mark.parametrize("factor", [1e-9, 1e9])
def test_the_same_allocation_in_any_unit_of_steps(factor):
    reference = fairalloc.solve(measured_mix_written_out(1.0), "max-min-packed")
    scaled = fairalloc.solve(measured_mix_written_out(factor), "max-min-packed")
    p = load_spec(measured_mix_written_out(1.0)).problem
    assert shared_of(p, scaled.allocation) == pytest.approx(
        shared_of(p, reference.allocation), abs=1e-7)
    assert scaled.objective == pytest.approx(reference.objective, rel=1e-7)
    assert verdicts(scaled) == verdicts(reference)

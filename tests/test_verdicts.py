"""Issue 10's verdict holes, each pinned: a check says ``holds`` only when it checked the whole
property on the allocation at hand."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import fairalloc

ROOT = Path(__file__).resolve().parents[1]
CLASSIC = ROOT / "specs" / "drf" / "classic.json"


def verdicts(result) -> dict[str, str]:
    return {f.check: f.verdict for f in result.validation}


def drf_allocation(a: dict, b: dict) -> dict:
    return {"A": a, "B": b}


def test_pareto_judges_the_units_not_the_bundles():
    """Everything handed out, but A holds 1 CPU and 4 GB its 2 tasks do not use: it can run a
    third task with nobody's tasks shrinking. The slack is the witness."""
    alloc = drf_allocation({"tasks": 2, "resources": {"cpu": 3, "mem": 12}},
                           {"tasks": 2, "resources": {"cpu": 6, "mem": 2}})
    result = fairalloc.validate(CLASSIC, alloc)
    pe = result.finding("pareto_efficiency")
    assert result.finding("feasibility").verdict == "holds"
    assert pe.verdict == "fails"
    assert pe.witness["slack"] == {"cpu": 1, "mem": 8}
    assert pe.witness["user"] == "A"


def test_a_negative_bundle_amount_is_infeasible():
    """A's -3 CPUs would let B hold 12 of 9 with the sum still 9."""
    alloc = drf_allocation({"tasks": 0, "resources": {"cpu": -3, "mem": 12}},
                           {"tasks": 2, "resources": {"cpu": 12, "mem": 6}})
    result = fairalloc.validate(CLASSIC, alloc)
    assert result.status == "infeasible"
    assert result.finding("feasibility").verdict == "fails"
    assert "negative amount" in json.dumps(result.finding("feasibility").witness)


def test_strategy_proofness_without_a_mechanism_is_unchecked_and_with_one_unrefuted():
    alloc = fairalloc.solve(CLASSIC).allocation
    alone = fairalloc.validate(CLASSIC, alloc).finding("strategy_proofness")
    assert alone.verdict == "unchecked" and "--method" in alone.detail
    probed = fairalloc.validate(CLASSIC, alloc, method="progressive-filling")
    sp = probed.finding("strategy_proofness")
    assert sp.verdict == "unrefuted" and sp.holds is None
    assert "misreports" in sp.detail


def accelos_spec(k: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    kernels = [{"id": f"k{i}", "work_group_size": int(rng.choice([64, 128, 256])),
                "local_memory_per_group": int(rng.choice([0, 1024, 4096])),
                "registers_per_thread": int(rng.choice([8, 16, 32])),
                "work_groups": int(rng.integers(20, 50))} for i in range(k)]
    need = {"threads": sum(kn["work_group_size"] for kn in kernels),
            "local_memory": sum(kn["local_memory_per_group"] for kn in kernels),
            "registers": sum(kn["work_group_size"] * kn["registers_per_thread"]
                             for kn in kernels)}
    return {"problem": "accelos", "device": {r: 3 * v for r, v in need.items()},
            "kernels": kernels}


def test_accelos_max_min_is_decided_above_200_kernels():
    """Exact at any size (it used to say "holds" unchecked above 200 kernels): on 300 kernels
    the ILP's allocation holds, and one group each is judged against the ILP's level."""
    spec = accelos_spec(300)
    ilp = fairalloc.solve(spec, "ilp")
    assert ilp.status == "optimal"
    assert ilp.finding("max_min").verdict == "holds"
    ones = {kid: {"work_groups": 1} for kid in ilp.to_dict()["allocation"]}
    judged = fairalloc.validate(spec, ones)
    low = judged.metrics["min_weighted_dominant_share"]
    expected = "fails" if ilp.objective > low * (1 + 1e-9) else "holds"
    assert judged.finding("max_min").verdict == expected
    assert expected == "fails"                   # the instance is one where it matters


def etf_spec(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"problem": "etf", "quantum": 10 * n, "phi": 0.5,
            "apps": [{"id": f"a{i}", "power": float(rng.choice([2, 3, 5, 8, 13])),
                      "weight": float(rng.choice([1, 2]))} for i in range(n)]}


def test_etf_max_min_is_decided_above_40_apps():
    """Exact at any size (it used to say "holds" unchecked above 40 apps): on 120 apps the
    greedy (Theorem 3) holds, and the time-fair split is judged against the exact level."""
    spec = etf_spec(120)
    greedy = fairalloc.solve(spec, "greedy")
    assert greedy.finding("max_min").verdict == "holds"
    weights = {a["id"]: a["weight"] for a in spec["apps"]}
    share = spec["quantum"] / sum(weights.values())
    fair = {a: {"time": int(w * share)} for a, w in weights.items()}
    judged = fairalloc.validate(spec, fair).finding("max_min")
    assert judged.verdict == "fails"
    assert judged.witness["minimum"] < greedy.metrics["min_weighted_energy"]

"""An allocation given to ``validate`` is judged by its decision variables: every column that
follows from them (throughput from time, energy from slices, resources from work groups, ...)
is recomputed, and a given value that disagrees is refused naming its JSON path, never echoed.
(accelOS checks its resource columns in its feasibility check instead: a mismatch is a
finding, ``infeasible``, tested in tests/accelos.)"""

from __future__ import annotations

import json

import pytest
from clitools import ROOT, run, slow_cases

import fairalloc
from fairalloc.errors import SpecError

# kind: (example spec, a derived key of each entry)
DERIVED = {
    "drf": ("drf/classic.json", ("dominant_share",)),
    "emrf": ("emrf/example1-knob0.5.json", ("fair_share",)),
    "etf": ("etf/example.json", ("energy",)),
    "hetero": ("hetero/gavel-mix.json", ("throughput",)),
    "token": ("token/kmeans-pagerank.json", ("mean_tokens",)),
}


def solved(kind: str) -> tuple[str, dict]:
    spec = str(ROOT / "specs" / DERIVED[kind][0])
    return spec, json.loads(fairalloc.solve(spec).to_json())["allocation"]


def entry(allocation: dict, key: tuple[str, ...]) -> tuple[dict, str]:
    """The dict holding ``key``'s last part in the first id's entry, and that part."""
    node = next(iter(allocation.values()))
    for part in key[:-1]:
        node = node[part]
    return node, key[-1]


@pytest.mark.parametrize("kind", slow_cases(sorted(DERIVED), ["token"]))
def test_a_derived_value_given_wrong_is_refused_or_recomputed(kind):
    spec, allocation = solved(kind)
    node, last = entry(allocation, DERIVED[kind][1])
    truth = node[last]
    node[last] = truth * 3 + 1e9
    if kind == "token":        # token's feasibility check judges the mean it is given
        result = fairalloc.validate(spec, allocation)
        assert result.status == "infeasible"
        assert result.finding("feasibility").witness["type"] == next(iter(allocation))
        return
    with pytest.raises(SpecError) as caught:
        fairalloc.validate(spec, allocation)
    path = ".".join([next(iter(allocation)), *DERIVED[kind][1]])
    assert [v.path for v in caught.value.violations] == [path]
    assert "decision variables give" in caught.value.violations[0].rule


@pytest.mark.parametrize("kind", slow_cases(sorted(DERIVED), ["token"]))
def test_derived_values_left_out_are_recomputed(kind):
    spec, allocation = solved(kind)
    assert fairalloc.validate(spec, allocation).allocation.to_dict() == allocation
    key = DERIVED[kind][1]
    truth = entry(allocation, key)[0][key[-1]]
    for uid in allocation:                                 # left out for every id
        entry({uid: allocation[uid]}, key)[0].pop(key[-1])
    again = fairalloc.validate(spec, allocation).allocation.to_dict()
    assert entry(again, key)[0][key[-1]] == pytest.approx(truth, rel=1e-12)


def test_hetero_no_time_but_claimed_throughput_exits_2_naming_the_path(tmp_path):
    spec, allocation = solved("hetero")
    for job in allocation.values():
        job["time"] = dict.fromkeys(job["time"], 0)
        job["throughput"] = 1e9
    path = tmp_path / "alloc.json"
    path.write_text(json.dumps(allocation))
    out = run("validate", spec, "--allocation", str(path), "--format", "json")
    assert out.returncode == 2 and out.stdout == "" and "Traceback" not in out.stderr
    assert "resnet50.throughput: is 1000000000, but the allocation's decision variables " \
           "give 0" in out.stderr

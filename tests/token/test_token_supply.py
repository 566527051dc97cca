"""The token supply: an equilibrium is the spec's only when its agents hold initial_tokens on
average. With plentiful boosts Algorithm 1 reaches only equilibria of a larger supply; the
result then says so (status ``infeasible``, a message, ``token_supply`` fails with the mean)
instead of ``converged``/``feasible`` with every check holding."""

from __future__ import annotations

import json

import pytest
from clitools import ROOT

import fairalloc

SPEC = json.loads((ROOT / "specs" / "token" / "kmeans-pagerank.json").read_text())
SPEC.pop("simulation")


@pytest.mark.parametrize("boosts, mean", [(150, 1.16), (200, 1.54), (400, 3.17)])
def test_plentiful_boosts_miss_the_supply_and_say_so(boosts, mean):
    result = fairalloc.solve({**SPEC, "boosts": boosts})
    assert result.metrics["mean_tokens"] == pytest.approx(mean, abs=0.01)
    assert result.status == "infeasible"
    supply = result.finding("token_supply")
    assert supply.verdict == "fails"
    assert supply.witness["mean_tokens"] == pytest.approx(mean, abs=0.01)
    assert supply.witness["initial_tokens"] == 1
    message = result.solver["message"]
    assert f"holds {result.metrics['mean_tokens']:.4g} tokens per agent, not " \
           "initial_tokens = 1" in message
    assert f"spends n/m = {boosts / 1000:.3g} tokens" in message


def test_the_papers_population_holds_its_supply():
    result = fairalloc.solve(SPEC)
    assert result.status == "feasible"
    assert result.metrics["mean_tokens"] == pytest.approx(1, abs=1e-9)
    assert result.finding("token_supply").verdict == "holds"


def test_an_allocation_of_another_supply_fails_the_check():
    plentiful = fairalloc.solve({**SPEC, "boosts": 400})
    judged = fairalloc.validate({**SPEC, "boosts": 400}, plentiful.allocation.to_dict())
    assert judged.finding("token_supply").verdict == "fails"
    assert judged.finding("stationarity").verdict == "holds"

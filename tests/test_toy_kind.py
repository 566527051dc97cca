"""A kind added the way CONTRIBUTING.md says, from outside fairalloc: a budget split among
weighted users. It passes the conformance battery and works through the API. Its name has a
dash, which no module in fairalloc/kinds/ can have, so it never meets a shipped kind."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from conformance import check_kind

import fairalloc
from fairalloc import arguments
from fairalloc.allocation import Allocation, read_allocation
from fairalloc.cli import main
from fairalloc.contract import Experiment, Kind, Parameter
from fairalloc.errors import Violations
from fairalloc.preconditions import check_unique_ids
from fairalloc.registry import KINDS, register_kind, shipped_kinds
from fairalloc.result import Finding, Solution
from fairalloc.spec import forget_schemas

ROOT = Path(__file__).resolve().parents[1]
NAME = "toy-budget"

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "additionalProperties": False, "required": ["problem", "budget", "users"],
    "properties": {
        "problem": {"const": NAME},
        "name": {"type": "string"},
        "options": {"type": "object", "additionalProperties": False, "properties": {
            "method": {"enum": ["proportional", "equal"]},
            "rounding": {"enum": ["none", "cents"]}}},
        "budget": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000000000},
        "users": {"type": "array", "minItems": 1, "items": {
            "type": "object", "additionalProperties": False, "required": ["id"],
            "properties": {"id": {"type": "string", "minLength": 1},
                           "weight": {"type": "number", "exclusiveMinimum": 0,
                                      "maximum": 1000000}}}},
    },
}

TEMPLATE = """{
  // a budget split among weighted users
  "problem": "toy-budget",
  "budget": 100,
  "users": [{"id": "a", "weight": 1}, {"id": "b", "weight": 3}]
}
"""


@dataclass(frozen=True)
class Budget:
    ids: tuple[str, ...]
    budget: float
    weights: np.ndarray

    @classmethod
    def from_spec(cls, data: dict, found: Violations) -> Budget | None:
        check_unique_ids(data["users"], "users", found)
        if found:
            return None
        return cls(tuple(u["id"] for u in data["users"]), float(data["budget"]),
                   np.array([u.get("weight", 1.0) for u in data["users"]]))

    def allocation(self, amounts: np.ndarray) -> Allocation:
        return Allocation(self.ids, {("amount",): np.asarray(amounts, float)})

    def read_allocation(self, data) -> Allocation:
        return read_allocation(data, self.ids, [("amount",)])


def proportional(problem: Budget, rounding: str = "none") -> Solution:
    amounts = problem.budget * problem.weights / problem.weights.sum()
    if rounding == "cents":
        amounts = np.floor(amounts * 100) / 100
    return Solution(problem.allocation(amounts), "optimal",
                    float((amounts / problem.weights).min()), solver={"name": "closed form"})


def equal(problem: Budget) -> Solution:
    amounts = np.full(len(problem.ids), problem.budget / len(problem.ids))
    return Solution(problem.allocation(amounts), "heuristic",
                    float((amounts / problem.weights).min()), solver={"name": "equal split"})


def feasibility(problem: Budget, allocation: Allocation, **_) -> Finding:
    x = allocation.column("amount")
    if (x < 0).any() or x.sum() > problem.budget * (1 + 1e-12):
        return Finding("feasibility", False, "negative or over budget", {"total": x.sum()})
    return Finding("feasibility", True, f"{x.sum():g} of {problem.budget:g} handed out")


def proportionality(problem: Budget, allocation: Allocation, **_) -> Finding:
    x, share = allocation.column("amount"), problem.budget * problem.weights / problem.weights.sum()
    short = np.flatnonzero(x < share * (1 - 1e-9))
    if short.size:
        i = int(short[0])
        return Finding("proportionality", False, f"{problem.ids[i]} gets less than its share",
                       {"user": problem.ids[i], "gets": x[i], "share": share[i]})
    return Finding("proportionality", True, "everyone gets its weighted share")


def metrics(problem: Budget, allocation: Allocation) -> dict:
    return {"handed_out": float(allocation.column("amount").sum() / problem.budget)}


def random_spec(seed: int, users: int = 5) -> dict:
    rng = np.random.default_rng(seed)
    return {"problem": NAME, "budget": float(rng.integers(1, 1000)),
            "users": [{"id": f"u{i}", "weight": float(w)}
                      for i, w in enumerate(rng.integers(1, 10, users))]}


KIND = Kind(name=NAME, summary="a budget split among weighted users (a toy)",
            from_spec=Budget.from_spec, methods={"proportional": proportional, "equal": equal},
            default="proportional", exact="proportional",
            checks=(feasibility, proportionality), metrics=metrics,
            random_spec=random_spec, schema=SCHEMA, sweep_metrics=("handed_out",),
            units={"objective": "smallest amount per weight (currency)",
                   "handed_out": "share of the budget handed out"},
            experiment=Experiment(
                summary="random budgets: the smallest amount per weight of each method",
                parameters=(Parameter("users", arguments.whole(1, 100), 5, "users per budget"),
                            Parameter("instances", arguments.whole(1, 1000), 10, "budgets")),
                study=lambda seed, users, instances: {
                    "study": "budgets", "kind": NAME, "seed": seed,
                    "instances": {"generate": {"users": users}, "count": instances}},
                values={"objective": "smallest amount per weight"},
                title=lambda seed, users, instances: f"{instances} budgets of {users} users"),
            template=TEMPLATE)


@pytest.fixture(scope="module", autouse=True)
def toy_kind():
    """Registered once a process: register_kind refuses a second record of that name."""
    assert NAME not in shipped_kinds()
    if KINDS.get(NAME) is not KIND:
        register_kind(KIND)


def test_the_toy_kind_solves_and_compares():
    spec = {"problem": NAME, "budget": 100, "users": [{"id": "a"}, {"id": "b", "weight": 3}]}
    result = fairalloc.solve(spec)
    assert result.allocation["b"]["amount"] == pytest.approx(75)
    assert {f.check: f.verdict for f in result.validation} == {
        "feasibility": "holds", "proportionality": "holds"}
    rows = dict(fairalloc.compare(spec))
    assert rows["equal"].finding("proportionality").verdict == "fails"
    with pytest.raises(fairalloc.SpecError, match="options.rounding: method equal does not"):
        fairalloc.solve({**spec, "options": {"rounding": "cents"}}, "equal")


def test_the_toy_kind_runs_its_experiment_from_the_command_line(capsys, tmp_path):
    """The command line offers a kind's experiment by capability: a kind it never heard of."""
    assert main(["experiment", NAME, "--users", "3", "--instances", "4", "--workers", "1",
                 "--format", "json", "--plot", str(tmp_path / "b.svg")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["title"] == "4 budgets of 3 users"
    shares = data["values"]["objective"]
    assert set(shares) == {"proportional", "equal"} and len(shares["equal"]) == 4
    # proportional gives every user its weighted share, so its minimum share is never smaller
    assert all(p >= e - 1e-12 for p, e in zip(shares["proportional"], shares["equal"]))
    assert (tmp_path / "b.svg").read_text().startswith("<?xml")
    assert main(["experiment", NAME, "--users", "0"]) == 2
    assert "--users" in capsys.readouterr().err


@pytest.mark.parametrize("name", [name for name, _ in check_kind(NAME, KIND)])
def test_the_toy_kind_passes_the_battery(name):
    dict(check_kind(NAME, KIND))[name]()


def test_the_battery_runs_on_a_kind_never_registered(monkeypatch, request):
    """An out-of-tree author runs the battery on their record alone (CONTRIBUTING.md): it is
    lent the registry while each check runs, and the registry is as it was after."""
    monkeypatch.setattr(KINDS, "_names", tuple(n for n in KINDS if n != NAME))
    monkeypatch.setattr(KINDS, "_built", {k: v for k, v in KINDS._built.items() if k != NAME})
    request.addfinalizer(forget_schemas)
    forget_schemas()
    for _, check in check_kind(NAME, KIND):
        check()
    assert NAME not in KINDS
    with pytest.raises(ValueError, match="brings its schema and template"):
        dict(check_kind(NAME, dataclasses.replace(KIND, schema=None)))[
            "check_schema_is_draft_2020_12"]()


def test_a_registered_method_gets_every_check_and_the_probe(monkeypatch, request):
    """register_method: the user's scheduler is solved, compared and probed like the shipped
    ones, and options.method names it."""
    monkeypatch.setattr(KINDS, "_built", dict(KINDS._built))      # undone after the test,
    request.addfinalizer(forget_schemas)                          # and the schemas re-read
    etf = KINDS["etf"]

    def energy_first(problem, *, tie: str = "first"):
        return etf.methods["energy-fair"](problem)

    with pytest.raises(ValueError, match="give each a JSON Schema"):
        fairalloc.register_method("etf", "energy-first", energy_first)     # tie undocumented
    fairalloc.register_method("etf", "energy-first", energy_first,
                              options={"tie": {"enum": ["first", "x"]}})
    spec = json.loads((ROOT / "specs" / "etf" / "example.json").read_text())
    result = fairalloc.solve({**spec, "options": {"method": "energy-first", "tie": "x"}})
    assert result.method == "energy-first"
    assert result.finding("strategy_proofness").verdict in ("fails", "unrefuted")
    assert "energy-first" in dict(fairalloc.compare(spec))
    probed = fairalloc.validate(spec, result.allocation, method="energy-first")
    assert probed.finding("strategy_proofness").verdict != "unchecked"
    with pytest.raises(fairalloc.SpecError, match="options.tie: must be one of"):
        fairalloc.solve({**spec, "options": {"method": "energy-first", "tie": "y"}})
    with pytest.raises(ValueError, match="already has a method"):
        fairalloc.register_method("etf", "energy-first", energy_first)
    with pytest.raises(KeyError):
        fairalloc.register_method("nosuch", "x", energy_first)

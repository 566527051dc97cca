"""Dominant Resource Fairness: the problem data, its checks and the exact leximin LP.

Users need a fixed vector of resources per task (Leontief); DRF equalises the *weighted dominant
shares* ``x_i * max_d(a_id / C_d) / w_i`` (eq. 5-6 in the EMRF paper), raising them together
by progressive filling. Two stopping rules:

* ``continue`` (Ghodsi et al.): when a resource saturates, its users freeze and the others keep
  growing — the leximin of weighted dominant shares;
* ``stop`` (EMRF paper eq. 7-8): everything stops at the first saturated resource.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from operator import itemgetter

import numpy as np

from fairalloc import startup
from fairalloc.allocation import Allocation, Key
from fairalloc.errors import Violations
from fairalloc.models.leontief import (
    Leontief,
    check_leontief_floors,
    leontief_rows,
    utilization,
)
from fairalloc.preconditions import check_names, check_unique_ids, numbers_of

SMALLEST_DEMAND = 1e-9     # of the resource's capacity: at most 1e9 tasks of it fit


@dataclass(frozen=True, eq=False)
class DrfProblem:
    """Capacities, users (demand per task, weight, optional task cap) and the stopping rule."""

    market: Leontief
    saturation: str = "continue"

    @property
    def divisible(self) -> bool:
        return not self.market.integral

    @property
    def ids(self) -> tuple[str, ...]:
        return self.market.ids

    @classmethod
    def from_spec(cls, data: dict, found: Violations) -> DrfProblem | None:
        """Build from a schema-valid spec, adding a violation for each broken precondition."""
        resources = tuple(data["capacity"])
        capacity = np.array([data["capacity"][r] for r in resources], dtype=float)
        users = data["users"]
        divisible = data.get("divisible", True)
        check_unique_ids(users, "users", found)
        check_names(users, "users", "demand", resources, "resource", found)
        check_leontief_floors(data, found)
        demand = leontief_rows(users, "demand", resources)
        for i in np.flatnonzero(~(demand > 0).any(axis=1)):
            found.add(["users", int(i), "demand"],
                      "must ask for a positive amount of some resource")
        tiny = (demand > 0) & (demand < SMALLEST_DEMAND * capacity)
        for i, r in zip(*np.nonzero(tiny)):
            found.add(["users", int(i), "demand", resources[r]],
                      f"a positive demand must be at least {SMALLEST_DEMAND:g} of the capacity "
                      f"({SMALLEST_DEMAND * capacity[r]:g}): more tasks than that are beyond the "
                      "solvers' precision")
        caps = numbers_of(users, "max_tasks", np.inf)
        if not divisible:
            for i in np.flatnonzero(np.isfinite(caps) & (caps != np.floor(caps))):
                found.add(["users", int(i), "max_tasks"],
                          "must be a whole number when divisible is false")
        if found:
            return None
        market = Leontief(
            ids=tuple(map(itemgetter("id"), users)),
            resources=resources,
            capacity=capacity,
            demand=demand,
            weights=numbers_of(users, "weight", 1.0),
            caps=caps,
            integral=not divisible,
            unit_key="tasks",
            bundle_key="resources",
        )
        return cls(market=market, saturation=data.get("saturation", "continue"))

    def with_demand(self, i: int, demand: np.ndarray) -> DrfProblem:
        """The same problem with user i reporting ``demand`` (for strategy-proofness probes)."""
        return replace(self, market=self.market.with_demand(i, demand))

    def allocation(self, tasks: np.ndarray) -> Allocation:
        """Result-format allocation: tasks, dominant share, resources held."""
        return self.market.allocation(tasks, self.derived(tasks))

    def derived(self, tasks: np.ndarray) -> dict[Key, np.ndarray]:
        """The column that follows from the tasks: the dominant share x_i s_i."""
        return {("dominant_share",): tasks * self.market.dominant()}

    def read_allocation(self, data) -> Allocation:
        """An allocation made elsewhere: tasks and bundles; dominant shares must be theirs."""
        return self.market.read(data, (("dominant_share",),), self.derived)


def metrics(problem: DrfProblem, allocation: Allocation) -> dict:
    """Utilisation per resource, total tasks, and the spread of weighted dominant shares."""
    m = problem.market
    x = m.units(allocation)
    level = m.weighted_levels(x)
    return {
        **utilization(m, allocation),
        "total_tasks": float(x.sum()),
        "min_weighted_dominant_share": float(level.min()),
        "max_weighted_dominant_share": float(level.max()),
    }


def leximin_model(problem: DrfProblem):
    """The Pyomo LP behind one round of the exact DRF: maximise the common level ``t``.

    Variables: tasks ``x_i`` (0 <= x_i <= max_tasks_i) and the level ``t``.
    Constraints: capacity ``sum_i a_id x_i <= C_d`` and, for each user still growing,
    ``x_i * s_i / w_i >= t`` (weighted dominant share at least the level; ``s_i`` eq. 5).
    Frozen users are fixed by the caller; ``level[i]`` is deactivated for them.
    """
    pyo = startup.pyomo()

    m = problem.market
    s = m.dominant()
    model = pyo.ConcreteModel(name="drf-leximin-round")
    model.U = pyo.RangeSet(0, m.n - 1)
    model.R = pyo.RangeSet(0, len(m.resources) - 1)
    model.x = pyo.Var(
        model.U, bounds=lambda _, i: (0, None if np.isinf(m.caps[i]) else float(m.caps[i]))
    )
    model.t = pyo.Var()
    model.capacity = pyo.Constraint(
        model.R, doc="capacity: sum_i a_id x_i <= C_d for every resource d",
        rule=lambda mdl, d: sum(float(m.demand[i, d]) * mdl.x[i] for i in mdl.U
                                if m.demand[i, d] > 0) <= float(m.capacity[d])
        if (m.demand[:, d] > 0).any() else pyo.Constraint.Skip,
    )
    model.level = pyo.Constraint(
        model.U, doc="level: x_i s_i / w_i >= t, the weighted dominant share (s_i eq. 5)",
        rule=lambda mdl, i: mdl.x[i] * float(s[i] / m.weights[i]) >= mdl.t
    )
    model.objective = pyo.Objective(expr=model.t, sense=pyo.maximize,
                                    doc="maximise the common level t (one leximin round)")
    return model

"""Elastic Multi-Resource Fairness (Tang et al., paper 000): data, closed forms and the LP.

Devices d have capacities C_d (GFLOPS); user i sends the fraction xi_id of its work to device d
(sum_d xi_id = 1) and receives F_i GFLOPS in all, F_i * xi_id from device d. The paper has two
devices (cpu, gpu); everything here holds for any number. Notation: gamma_id = xi_id / C_d and
g_i = max_d gamma_id.

EMRF with knob eta: the fairness-oriented part gives every user eta * F_i^max (its DRF ceiling,
eq. 8), the efficiency LP (15)-(17) shares the residual capacity C', and F_i = eta F_i^max + F'_i
(eq. 10).

The paper's Example 1 (C = 100/800, rho_1 = 1/9, rho_2 = 4/6, eta = 0.5):

>>> spec = {"capacity": {"cpu": 100, "gpu": 800}, "knob": 0.5, "users": [
...     {"id": "user1", "split": {"cpu": 0.1, "gpu": 0.9}},
...     {"id": "user2", "split": {"cpu": 0.4, "gpu": 0.6}}]}
>>> p = EmrfProblem.from_spec(spec, Violations())
>>> fair_share(p.market).round(1).tolist()                      # S_i, eq. 3
[444.4, 125.0]
>>> drf_ceiling(p.market).round(2).tolist()                     # F_i^max, eq. 8
[470.59, 132.35]
>>> residual_capacity(p.market, 0.5).round(2).tolist()          # C'
[50.0, 548.53]
>>> round(delta_bound(p.market, 0.5), 3)                        # Theorem 1, as derived
1.125
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
    per_market,
    row_max,
    row_min,
    utilization,
)
from fairalloc.preconditions import check_names, check_unique_ids, numbers_of, values_of

# emrf's own tolerances, beside drf's and emrf's shared ones (``models.leontief``):
SPLIT_TOLERANCE = 1e-9   # absolute, on a user's split: its fractions sum to 1 within this
RESIDUE = 1e-12          # relative to a capacity: residual capacity below this is none


@dataclass(frozen=True, eq=False)
class EmrfProblem:
    """Devices, users (weight, split xi) and either the knob eta or a maximum unfairness delta."""

    market: Leontief
    knob: float | None = None
    max_unfairness: float | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        return self.market.ids

    @classmethod
    def from_spec(cls, data: dict, found: Violations) -> EmrfProblem | None:
        """Build from a schema-valid spec, adding a violation for each broken precondition."""
        devices = tuple(data["capacity"])
        users = data["users"]
        check_unique_ids(users, "users", found)
        check_names(users, "users", "split", devices, "device", found)
        check_leontief_floors(data, found)
        split = leontief_rows(users, "split", devices)
        given = np.fromiter(map(sum, map(dict.values, values_of(users, "split"))), dtype=float,
                            count=len(users))
        for i in np.flatnonzero(np.abs(given - 1.0) > SPLIT_TOLERANCE):
            found.add(["users", int(i), "split"],
                      f"fractions must sum to 1 (they sum to {given[i]:.12g})")
        if found:
            return None
        market = Leontief(
            ids=tuple(map(itemgetter("id"), users)),
            resources=devices,
            capacity=np.array([data["capacity"][d] for d in devices], dtype=float),
            demand=split,
            weights=numbers_of(users, "weight", 1.0),
            caps=np.full(len(users), np.inf),
            unit_key="total",
            bundle_key="devices",
        )
        return cls(market, data.get("knob"), data.get("max_unfairness"))

    def effective_knob(self) -> float:
        """The knob given, or the smallest knob whose Theorem 1 bound meets ``max_unfairness``
        (above 1 when no knob can)."""
        if self.knob is not None:
            return float(self.knob)
        return knob_for_delta(self.market, float(self.max_unfairness))

    def with_demand(self, i: int, split: np.ndarray) -> EmrfProblem:
        """User i reports another split (renormalised to sum 1), for strategy-proofness probes."""
        return replace(self, market=self.market.with_demand(i, split / split.sum()))

    def allocation(self, total: np.ndarray) -> Allocation:
        """Result-format allocation: total GFLOPS, per device, and the user's S_i and F_i^max."""
        return self.market.allocation(total, self.derived(total))

    def derived(self, total: np.ndarray) -> dict[Key, np.ndarray]:
        """The user's S_i and F_i^max beside its allocation (they follow from the spec)."""
        m = self.market
        return {("fair_share",): fair_share(m), ("drf_ceiling",): drf_ceiling(m)}

    def read_allocation(self, data) -> Allocation:
        """An allocation made elsewhere: totals and devices; S_i and F_i^max must be the spec's."""
        return self.market.read(data, (("fair_share",), ("drf_ceiling",)), self.derived)


def gamma(m: Leontief) -> np.ndarray:
    """gamma_id = xi_id / C_d, the share of device d one GFLOP of user i takes."""
    return m.demand / m.capacity


@per_market
def fair_share(m: Leontief) -> np.ndarray:
    """S_i = w_i / (sum_k w_k * max_d gamma_id): what i gets from its weighted slice (eq. 3)."""
    return m.weights / (m.weights.sum() * m.dominant())


@per_market
def drf_ceiling(m: Leontief) -> np.ndarray:
    """F_i^max = w_i / (max_d sum_k w_k gamma_kd / g_k) / g_i, DRF stopped at the first
    saturated device (eq. 8)."""
    dominant = m.dominant()
    load = (m.weights / dominant) @ gamma(m)
    return m.weights / load.max() / dominant


def residual_capacity(m: Leontief, knob: float) -> np.ndarray:
    """C'_d = C_d - eta * sum_k F_k^max xi_kd, what the fairness-oriented part leaves
    (section V-B). At eta = 1 the saturated device is exactly full: rounding residue below
    ``RESIDUE`` of a capacity is zero, not a sliver of capacity for the efficiency LP."""
    residual = m.capacity - knob * (drf_ceiling(m) @ m.demand)
    return np.where(residual > RESIDUE * m.capacity, residual, 0.0)


def solo_ceiling(m: Leontief, residual: np.ndarray) -> np.ndarray:
    """F'_i^max = 1 / max_d (xi_id / C'_d): what user i gets holding all of C' alone (eq. 14)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(m.demand > 0, m.demand / residual, 0.0)
        return 1.0 / row_max(ratio)


def delta_bound(m: Leontief, knob: float) -> float:
    """Theorem 1's unfairness bound delta = max_i F'_i^max / S_i, as derived in eq. 11-14.

    Written out, F'_i^max / S_i = (sum_k w_k / w_i) * g_i / max_d(xi_id / C'_d). The paper prints
    ``g_i / (sum_k (w_i / w_k) * max_d(xi_id / C'_d))`` instead: the weight sum sits in the wrong
    place, and for Example 1 the printed form gives 0.28 where the paper's own number is 1.125
    (tests/paper/test_emrf_paper.py shows both).
    """
    return float((solo_ceiling(m, residual_capacity(m, knob)) / fair_share(m)).max())


def knob_for_delta(m: Leontief, delta: float) -> float:
    """The smallest knob eta whose Theorem 1 bound is at most ``delta`` (may exceed 1: none).

    delta(eta) = max_i a_i min_{d: xi_id > 0} C'_d(eta) / xi_id with a_i = W g_i / w_i and
    C'_d(eta) = C_d - eta U_d (U = DRF usage) is non-increasing and piecewise linear, so user i
    is within delta as soon as one of its devices has C'_d <= delta xi_id / a_i, i.e. at
    eta_i = min_d (C_d - delta xi_id / a_i) / U_d; the answer is max(0, max_i eta_i).
    """
    a = m.weights.sum() * m.dominant() / m.weights
    usage = drf_ceiling(m) @ m.demand
    need = m.capacity[None, :] - delta * m.demand / a[:, None]          # C'_d must fall to this
    with np.errstate(divide="ignore", invalid="ignore"):
        eta = np.where(usage > 0, need / usage, np.where(need <= 0, 0.0, np.inf))
    eta = float(max(0.0, row_min(np.where(m.demand > 0, eta, np.inf)).max()))
    return 1.0 if 1.0 < eta <= 1.0 + RESIDUE else eta  # DRF's own rounding, not a shortfall


def share_ratio(m: Leontief, total: np.ndarray) -> np.ndarray:
    """F_i / S_i, the quantity delta-fairness (eq. 9) compares across users."""
    return total / fair_share(m)


def proportional_share(m: Leontief) -> np.ndarray:
    """Proportional sharing of total GFLOPS by weight (WFQ, the paper's Fig. 2(a)): F_i = w_i T / W
    with T as large as every device allows."""
    per_weight = m.weights / m.weights.sum()
    scale = (m.capacity / (per_weight @ m.demand)).min()
    return per_weight * scale


def metrics(problem: EmrfProblem, allocation: Allocation) -> dict:
    """Utilisation per device, total GFLOPS, delta_observed (max |F_i/S_i - F_j/S_j|) and
    delta_bound (Theorem 1 at the spec's knob; null when no knob meets max_unfairness)."""
    m = problem.market
    total = m.units(allocation)
    ratio = share_ratio(m, total)
    knob = problem.effective_knob()
    return {
        **utilization(m, allocation),
        "total": float(total.sum()),
        "delta_observed": float(ratio.max() - ratio.min()),
        "delta_bound": delta_bound(m, knob) if knob <= 1 else None,
        "min_share_ratio": float(ratio.min()),
        "max_share_ratio": float(ratio.max()),
    }


def efficiency_model(m: Leontief, residual: np.ndarray):
    """The efficiency LP (15)-(17) literally, one variable F'_i per user:

    maximise sum_i F'_i (15) s.t. sum_i F'_i xi_id <= C'_d for every device (16), and
    F'_i / S_i = F'_j / S_j for users with the same split (17), chained user to user.
    F' is in the unit of ``residual``; (17) is homogeneous, so S is taken relative to its
    largest value (coefficients near 1 whatever the capacities).
    """
    pyo = startup.pyomo()

    S = fair_share(m) / fair_share(m).max()
    classes = m.classes()
    chain = [
        (int(prev), int(cur))
        for c in range(classes.count)
        for prev, cur in zip(np.flatnonzero(classes.label == c)[:-1],
                             np.flatnonzero(classes.label == c)[1:])
    ]
    model = pyo.ConcreteModel(name="emrf-efficiency")
    model.U = pyo.RangeSet(0, m.n - 1)
    model.D = pyo.RangeSet(0, len(m.resources) - 1)
    model.F = pyo.Var(model.U, domain=pyo.NonNegativeReals)
    model.objective = pyo.Objective(expr=sum(model.F[i] for i in model.U), sense=pyo.maximize,
                                    doc="eq. 15 in the EMRF paper: maximise sum_i F'_i")
    model.capacity = pyo.Constraint(
        model.D, doc="eq. 16 in the EMRF paper: sum_i F'_i xi_id <= C'_d (residual capacity)",
        rule=lambda mdl, d: sum(float(m.demand[i, d]) * mdl.F[i] for i in mdl.U
                                if m.demand[i, d] > 0) <= float(residual[d])
        if (m.demand[:, d] > 0).any() else pyo.Constraint.Skip,
    )
    model.same_ratio = pyo.Constraint(
        range(len(chain)),
        doc="eq. 17 in the EMRF paper: F'_i / S_i = F'_j / S_j for users with the same split",
        rule=lambda mdl, k: mdl.F[chain[k][0]] / float(S[chain[k][0]])
        == mdl.F[chain[k][1]] / float(S[chain[k][1]]),
    )
    return model


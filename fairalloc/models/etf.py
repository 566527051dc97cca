"""Energy-Time Fairness (Liang et al., paper 001): GPU time slices between time and energy fairness.

A quantum of T whole slices is shared by apps with weight w_i and power P_i (and an optional
demand d_i in slices; none = backlogged). App i's *weighted energy* with t_i slices is
``t_i * P_i / w_i``. ETF guarantees every app a fraction phi of its time-fair share (eq. 7),
then spends the rest raising the smallest weighted energy (Algorithm 1).

Whole slices: the guarantee of Algorithm 1 line 1, ``min(w_i / W * T * phi, d_i)``, is rounded
*down* to a whole slice, so that the guarantees always fit in the quantum (rounding up can exceed
T, e.g. at phi = 1); the slices this leaves go through the energy-fair step like the rest.

The paper's example (T = 30, P = 2, 3, 8 W, equal weights, phi = 0.7):

>>> p = EtfProblem.from_spec({"quantum": 30, "phi": 0.7, "apps": [
...     {"id": "A", "power": 2}, {"id": "B", "power": 3}, {"id": "C", "power": 8}]}, Violations())
>>> guarantee(p).tolist()
[7, 7, 7]
>>> round(phi_fair(p), 4)        # above this phi, the guarantees alone break energy fairness
0.3913
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fairalloc.allocation import Allocation, Key, read_allocation
from fairalloc.errors import Violations
from fairalloc.preconditions import check_at_least, check_unique_ids

SMALLEST_POWER = 1e-3  # watts; with power <= 1e6 and weights in 1e-6..1e6 weighted energies
SMALLEST_WEIGHT = 1e-6  # stay ordinary floats and the leximin MILP well scaled

# The kind's tolerances: its methods and checks import them from here.
# The tie rule, the one answer to "same energy?": weighted energies (and times, and gains in
# either) a relative TIE apart are one (3 x 0.1 / 0.1 is 3.0000000000000004), and ties go to
# the app listed first
TIE = 1e-12
# slices: a count within this of a whole number is that number (float noise: a guarantee of
# 6.999999999 slices is 7); relative to the count for a computed guarantee, absolute for the
# slices of an allocation and a rounded split
ROUNDING_SLACK = 1e-9
# The leximin MILP's own numerics, coarser than TIE because HiGHS can be no finer (1e-10 is the
# smallest feasibility tolerance it takes): absolute, on weighted energies scaled so the largest
# per slice is 1 (weighted energies a relative 1e-5 apart differ by less than HiGHS's default;
# found by the Theorem 3 property test: 1.0 against 0.99999 was taken for a tie). Its slices
# are rounded and each round's level recomputed exactly from them, so TIE decides the result.
MILP_TOLERANCE = 1e-10
# relative to max(1, level): a round's optimal level is kept to within this in the next rounds
# (10 x MILP_TOLERANCE, so HiGHS's noise cannot make the level it found infeasible)
LEVEL_SLACK = 1e-9
# energy units: a relative energy gain divides by at least one slice's energy at the app's
# power, as a time gain by one slice (an app at 0 slices has none), and by this for power 0
ENERGY_FLOOR = 1e-12


@dataclass(frozen=True, eq=False)
class EtfProblem:
    """The quantum T, the knob phi, and the apps (weight, power, demand; inf = backlogged)."""

    ids: tuple[str, ...]
    quantum: int
    phi: float
    weights: np.ndarray
    power: np.ndarray
    demand: np.ndarray

    @property
    def n(self) -> int:
        return len(self.ids)

    @classmethod
    def from_spec(cls, data: dict, found: Violations) -> EtfProblem | None:
        """Build from a schema-valid spec, adding a violation for each broken precondition."""
        apps = data["apps"]
        check_unique_ids(apps, "apps", found)
        check_at_least(((["apps", i, "power"], a["power"]) for i, a in enumerate(apps)),
                       SMALLEST_POWER, found)
        check_at_least(((["apps", i, "weight"], a.get("weight", 1.0)) for i, a in enumerate(apps)),
                       SMALLEST_WEIGHT, found)
        if found:
            return None
        return cls(
            ids=tuple(a["id"] for a in apps),
            quantum=int(data["quantum"]),
            phi=float(data["phi"]),
            weights=np.array([a.get("weight", 1.0) for a in apps], dtype=float),
            power=np.array([a["power"] for a in apps], dtype=float),
            demand=np.array([a.get("demand", np.inf) for a in apps], dtype=float),
        )

    def with_report(self, i: int, power: float | None = None,
                    demand: float | None = None) -> EtfProblem:
        """App i reports another power or demand (strategy-proofness probes)."""
        new_power, new_demand = self.power.copy(), self.demand.copy()
        if power is not None:
            new_power[i] = power
        if demand is not None:
            new_demand[i] = demand
        return replace(self, power=new_power, demand=new_demand)

    def allocation(self, slices: np.ndarray) -> Allocation:
        """Result-format allocation: slices (time) and energy P_i * t_i per app."""
        t = np.asarray(slices, dtype=float)
        return Allocation(self.ids, {("time",): t, **self.derived(t)})

    def derived(self, t: np.ndarray) -> dict[Key, np.ndarray]:
        """The column that follows from the slices: energy P_i t_i."""
        return {("energy",): t * self.power}

    def read_allocation(self, data) -> Allocation:
        """An allocation made elsewhere: the slices; energies given must be theirs."""
        return read_allocation(data, self.ids, [("time",)], [("energy",)],
                               derived=lambda read: self.derived(read.column("time")))


def energy_key(t, power, weights):
    """Weighted energy t * P / w, computed one way everywhere so that ties are the same ties."""
    return t * power / weights


def time_fair_share(p: EtfProblem) -> np.ndarray:
    """T_i^TF = w_i / sum_k w_k * T (eq. 5), in (fractional) slices."""
    return p.weights / p.weights.sum() * p.quantum


def guarantee(p: EtfProblem) -> np.ndarray:
    """Whole slices guaranteed by Algorithm 1 line 1: min(phi T_i^TF, d_i) rounded down (eq. 7)."""
    share = p.phi * time_fair_share(p)
    whole = np.floor(share + ROUNDING_SLACK * np.maximum(1.0, share))
    return np.minimum(whole, p.demand).astype(np.int64)


def water_level(rate: np.ndarray, caps: np.ndarray, total: float) -> np.ndarray:
    """Continuous water-filling: t_i = min(caps_i, lam * rate_i) with sum t_i = min(total,
    sum caps); O(n log n) by sorting the levels at which apps reach their caps."""
    if caps.sum() <= total:
        return caps.astype(float).copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        full_at = np.where(rate > 0, caps / rate, np.inf)       # lam where app i is capped
    order = np.argsort(full_at, kind="stable")
    capped_sum = np.concatenate([[0.0], np.cumsum(caps[order])])
    free_rate = rate.sum() - np.concatenate([[0.0], np.cumsum(rate[order])])
    # with the first j apps (by full_at) capped: lam_j = (total - capped_sum_j) / free_rate_j;
    # the answer is the first j whose lam_j does not reach the next app's cap
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = (total - capped_sum) / free_rate
    ok = np.append(lam[:-1] <= full_at[order], True) & (free_rate > 0)
    return np.minimum(caps, lam[int(np.argmax(ok))] * rate)


def energy_fair_time(p: EtfProblem) -> np.ndarray:
    """The energy-fair time split in continuous slices: t_i proportional to w_i / P_i (so that
    t_i P_i / w_i is equal, eq. 3), capped by demands, the rest to those who can use it.

    The paper's eq. 2, (1 - w_i P_i / sum_k w_k P_k) T, sums to (N - 1) T and is proportional
    to nothing in particular; it is right only for N = 2.
    """
    return water_level(p.weights / p.power, p.demand, p.quantum)


def phi_fair(p: EtfProblem) -> float:
    """The largest phi whose guarantees still allow perfect energy fairness (eq. 15): every
    guarantee fits under the energy-fair time, phi T_i^TF <= T_i^EF where the demand does not
    bind first. Computed on continuous slices."""
    fair = energy_fair_time(p)
    tf = time_fair_share(p)
    binding = p.demand > fair * (1 + TIE)          # apps the energy-fair split leaves wanting
    if not binding.any():
        return 1.0
    return float(min(1.0, (fair[binding] / tf[binding]).min()))


def weighted(values: np.ndarray, p: EtfProblem) -> np.ndarray:
    return values / p.weights


def fairness_index(values: np.ndarray) -> float:
    """min / max of non-negative values (section 6.1); 1 when all are zero."""
    top = float(values.max()) if len(values) else 0.0
    return 1.0 if top <= 0 else float(values.min()) / top


def metrics(p: EtfProblem, allocation: Allocation) -> dict:
    """F_T, F_E, F_S on weight-normalised time and energy (section 6.1), utilisation, phi_fair."""
    t = np.asarray(allocation.column("time"), dtype=float)
    e = t * p.power
    f_t = fairness_index(weighted(t, p))
    f_e = fairness_index(weighted(e, p))
    return {
        "time_fairness": f_t,
        "energy_fairness": f_e,
        "system_fairness": min(f_t, f_e),
        "utilization": float(t.sum() / p.quantum),
        "phi_fair": phi_fair(p),
        "min_weighted_energy": float(weighted(e, p).min()),
    }

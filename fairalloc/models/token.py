"""The token mechanism (Zahedi, Fan, Lee, paper 004): m agents compete each round for n boosts.

An agent holding t tokens signals Y when its utility u this round exceeds its threshold
u_thr(t); the n signalling agents with the most tokens get boosts (ties at random) and spend a
token each; the spent tokens go back to the agents not boosted, each receiving one with
probability P_R = n / (m - n). An agent with 0 tokens cannot signal, an agent at t_max must take
a boost. Agent types differ in their utility distribution h(u), discrete here (values with
probabilities; ``uniform`` = ``points`` equally spaced values, equally likely; ``samples`` =
the empirical distribution).

This module holds the problem data and the mean-field formulas the solver, the checks and
the tests share: thresholds (eq. 4), signal probabilities (eq. 5), the token chain (eq. 6 with
the boundary rows the paper omits), its stationary distribution (eq. 7), signalling strength
(eq. 8), the thresholds of a given strategy (eq. 1-4 with the strategy fixed) and how much a
one-step deviation from it gains.

Units. Thresholds scale linearly with the utilities (eq. 1-4 are linear in u), so every formula
runs on utilities divided by their scale, the largest |u| of the spec (``TokenProblem.grid``):
the cost and the accuracy of a solve are the same for utilities near 1e-290 as near 1e290.
Reported thresholds and utilities are multiplied back.

>>> u = Utility.from_spec({"values": [0.3, 0.1, 0.2], "probabilities": [0.25, 0.5, 0.25]})
>>> u.values.tolist(), u.probabilities.tolist()
([0.1, 0.2, 0.3], [0.5, 0.25, 0.25])
>>> g, c = UtilityGrid.of((u,)), np.array([[0.15]])
>>> float(g.prob_above(c)[0, 0]), float(g.expected_excess(c)[0, 0])    # Pr(u > c), E[(u - c)^+]
(0.5, 0.05)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np

from fairalloc.allocation import Allocation, read_allocation
from fairalloc.errors import Violations
from fairalloc.preconditions import check_unique_ids

# The kind's tolerances: its solvers and checks import them from here.
# probabilities and fractions, absolute: within this of [0, 1], or of summing to 1 (float noise)
PROBABILITY_SLACK = 1e-9
# a token distribution f, absolute: |f P - f| and |sum f - 1| at most this (f is solved, not
# sampled); mean tokens agree with sum_t t f(t) to this times max(1, t_max)
STATIONARY_TOL = 1e-9
# of the utility scale (``TokenProblem.scale``): thresholds may rise by this from one token count
# to the next and still count as non-increasing (float noise of solved values)
THRESHOLD_SLACK = 1e-9
# of the utility scale: policy iteration switches an action only to gain more than this, the
# kind's tie between two values
TIE = 1e-12
# of the utility scale: a flip of the best response is placed this close, or closer when the
# spec's tolerance asks for it (down to 2 TIE)
FLIP = 1e-10
# of t_max: the bracket on a best response's cutoff closes at this width
RESOLUTION = 1e-12
# of its interval: a root of a monotone function (the solver's Illinois + bisection) is found
# to within this
ROOT_XTOL = 1e-14
# The largest |utility| accepted. A threshold is worth up to 2 / (1 - discount) <= 1.8e16
# utilities (differences of values bounded by max |u| / (1 - discount)) and the simulation sums
# up to 3e7 of them (agents x rounds): below 1e290 both stay under the largest double, 1.8e308.
UTILITY_MAX = 1e290
SIMULATION_MAX_AGENTS = 10_000          # the envy-free index compares every pair of agents
SIMULATION_MAX_CELLS = 30_000_000       # agents x rounds: utilities and boosts are held whole


def simulation_too_big(agents: int, rounds: int) -> str | None:
    """Why a simulation of this size is refused, or None."""
    if agents > SIMULATION_MAX_AGENTS:
        return (f"simulates at most {SIMULATION_MAX_AGENTS:,} agents (the envy-free index "
                f"compares every pair), not {agents:,}")
    if agents * rounds > SIMULATION_MAX_CELLS:
        return (f"agents x rounds must be at most {SIMULATION_MAX_CELLS:,} (utilities and "
                f"boosts are held for every agent and round), not {agents * rounds:,}")
    return None


@dataclass(frozen=True, eq=False)
class Utility:
    """A discrete utility distribution h(u): sorted distinct values and their probabilities.
    ``uniform: [a, b], points: k`` is k equally spaced values from a to b (the midpoint when
    k = 1), equally likely; ``samples`` the empirical distribution."""

    values: np.ndarray
    probabilities: np.ndarray

    @classmethod
    def from_spec(cls, spec: dict) -> Utility:
        """From a schema-valid, precondition-checked ``utility`` object."""
        if "samples" in spec:
            values, counts = np.unique(np.asarray(spec["samples"], dtype=float),
                                       return_counts=True)
            return cls(values, counts / counts.sum())
        if "uniform" in spec:
            a, b = map(float, spec["uniform"])
            k = int(spec["points"])
            values = np.full(1, (a + b) / 2) if k == 1 else np.linspace(a, b, k)
            return cls.merged(values, np.full(len(values), 1.0 / len(values)))
        return cls.merged(np.asarray(spec["values"], dtype=float),
                          np.asarray(spec["probabilities"], dtype=float))

    @classmethod
    def merged(cls, values: np.ndarray, probabilities: np.ndarray) -> Utility:
        """Sorted distinct values, the probabilities of equal values added up, normalised."""
        distinct, where = np.unique(values, return_inverse=True)
        p = np.bincount(where, weights=probabilities, minlength=len(distinct))
        return cls(distinct, p / p.sum())



@dataclass(frozen=True, eq=False)
class UtilityGrid:
    """All types' utility distributions as one padded (types, G) grid, so that a Bellman step
    for every type and token count is a single vectorised binary search.

    Rows are padded with their largest value at probability 0. ``merged`` holds every distinct
    value of every row; ``below[k, r]`` counts row k's values <= merged[r - 1], so that for a
    threshold c, with r = #(merged <= c), row k's values above c start at index below[k, r]
    (exact: no shifting of values, so a threshold equal to a value stays equal).
    ``tail_p[k, j]`` and ``tail_pu[k, j]`` are the sums of p and p u over values[k, j:].
    """

    values: np.ndarray
    probabilities: np.ndarray
    tail_p: np.ndarray
    tail_pu: np.ndarray
    merged: np.ndarray
    below: np.ndarray

    @classmethod
    def of(cls, utilities: tuple[Utility, ...], scale: float = 1.0) -> UtilityGrid:
        """The grid of the utilities divided by ``scale`` (see the module's note on units)."""
        width = max(len(u.values) for u in utilities)
        values = np.stack([np.pad(u.values / scale, (0, width - len(u.values)), mode="edge")
                           for u in utilities])
        probs = np.stack([np.pad(u.probabilities, (0, width - len(u.values)))
                          for u in utilities])
        tail_p = np.concatenate([np.cumsum(probs[:, ::-1], axis=1)[:, ::-1],
                                 np.zeros((len(utilities), 1))], axis=1)
        tail_pu = np.concatenate([np.cumsum((probs * values)[:, ::-1], axis=1)[:, ::-1],
                                  np.zeros((len(utilities), 1))], axis=1)
        merged = np.unique(values)
        below = np.stack([np.concatenate([[0], np.searchsorted(row, merged, side="right")])
                          for row in values])
        return cls(values, probs, tail_p, tail_pu, merged, below)

    def _above(self, c: np.ndarray) -> np.ndarray:
        """Per row k and column: index into values[k] of the first value > c[k, col]."""
        return np.take_along_axis(self.below, np.searchsorted(self.merged, c, side="right"),
                                  axis=1)

    def prob_above(self, c: np.ndarray) -> np.ndarray:
        """Pr(u > c) per type (rows of c)."""
        return np.take_along_axis(self.tail_p, self._above(c), axis=1)

    def expected_excess(self, c: np.ndarray) -> np.ndarray:
        """E[(u - c)^+] per type (rows of c)."""
        j = self._above(c)
        return (np.take_along_axis(self.tail_pu, j, axis=1)
                - c * np.take_along_axis(self.tail_p, j, axis=1))

    @property
    def means(self) -> np.ndarray:
        return self.tail_pu[:, 0]

    def top_mass_utility(self, q: np.ndarray) -> np.ndarray:
        """E[u sigma(u)] for the strategy that signals on the highest utilities of total
        probability q (per type, rows of q): the values above the marginal one fully, the
        marginal value with the mass left. A threshold rule whose agents at u = u_thr signal
        only sometimes is such a strategy; P_Y(t) = q describes it completely."""
        rows, width = self.tail_p.shape
        offsets = 2.0 * np.arange(rows)[:, None]
        flat = (offsets - self.tail_p).ravel()               # increasing within each row
        j = np.searchsorted(flat, offsets - q, side="left") - np.arange(rows)[:, None] * width
        marginal = np.take_along_axis(self.values, np.maximum(j - 1, 0), axis=1)
        rest = q - np.take_along_axis(self.tail_p, j, axis=1)
        return np.take_along_axis(self.tail_pu, j, axis=1) + rest * marginal

    def signal_share(self, q: np.ndarray) -> np.ndarray:
        """sigma(t, j): the chance of signalling at utility values[k, j] under the top-mass
        strategy of probability q[k, t]; shape (types, t, G)."""
        above = self.tail_p[:, None, 1:]                     # mass strictly above value j
        with np.errstate(divide="ignore", invalid="ignore"):
            share = (q[:, :, None] - above) / self.probabilities[:, None, :]
        return np.clip(np.nan_to_num(share, nan=0.0, posinf=1.0, neginf=0.0), 0.0, 1.0)


@dataclass(frozen=True, eq=False)
class Simulation:
    """The round-by-round simulation asked for in the spec: rounds, seed, mechanisms."""

    rounds: int
    seed: int
    mechanisms: tuple[str, ...] | None = None


@dataclass(frozen=True, eq=False)
class TokenProblem:
    """m agents, n boosts, tokens 0..t_max, discount gamma, and the agent types (fraction of the
    population, utility distribution, optional trace replayed by the simulation)."""

    ids: tuple[str, ...]
    agents: int
    boosts: int
    initial_tokens: int
    max_tokens: int
    discount: float
    tolerance: float
    max_iterations: int
    fractions: np.ndarray
    utilities: tuple[Utility, ...]
    traces: tuple[np.ndarray | None, ...]
    simulation: Simulation | None = None

    @property
    def type_count(self) -> int:
        return len(self.ids)

    @property
    def redistribution(self) -> float:
        """P_R = n / (m - n) (section 3.1)."""
        return self.boosts / (self.agents - self.boosts)

    @cached_property
    def scale(self) -> float:
        """The utility scale, max |u| over every type (1 when every utility is 0): the unit
        of ``grid`` and of every threshold the formulas compute."""
        return max(float(np.abs(u.values).max()) for u in self.utilities) or 1.0

    @cached_property
    def grid(self) -> UtilityGrid:
        """Every type's utilities in units of ``scale``."""
        return UtilityGrid.of(self.utilities, self.scale)

    @classmethod
    def from_spec(cls, data: dict, found: Violations) -> TokenProblem | None:
        """Build from a schema-valid spec, adding a violation for each broken precondition."""
        types = data["types"]
        check_unique_ids(types, "types", found)
        m, n = data["agents"], data["boosts"]
        if 2 * n > m:
            found.add(["boosts"], f"must be at most agents / 2 = {m / 2:g}, since P_R = "
                      f"n / (m - n) is a probability ({n} boosts for {m} agents)")
        if data["max_tokens"] < data["initial_tokens"]:
            found.add(["max_tokens"], f"must be >= initial_tokens ({data['initial_tokens']})")
        total = sum(t["fraction"] for t in types)
        if not abs(total - 1.0) <= PROBABILITY_SLACK:
            found.add(["types"], f"fractions must sum to 1 (they sum to {total:.12g})")
        for i, t in enumerate(types):
            _check_utility(t["utility"], ["types", i, "utility"], found)
            _check_magnitudes(t.get("trace", []), ["types", i, "trace"], found)
        if "simulation" in data:
            why = simulation_too_big(m, data["simulation"]["rounds"])
            if why:
                found.add(["simulation"], why)
        if found:
            return None
        sim = data.get("simulation")
        return cls(
            ids=tuple(t["id"] for t in types),
            agents=int(m),
            boosts=int(n),
            initial_tokens=int(data["initial_tokens"]),
            max_tokens=int(data["max_tokens"]),
            discount=float(data["discount"]),
            tolerance=float(data.get("tolerance", 1e-3)),
            max_iterations=int(data.get("max_iterations", 200)),
            fractions=np.array([t["fraction"] for t in types], dtype=float),
            utilities=tuple(Utility.from_spec(t["utility"]) for t in types),
            traces=tuple(np.asarray(t["trace"], dtype=float) if "trace" in t else None
                         for t in types),
            simulation=None if sim is None else Simulation(
                int(sim["rounds"]), int(sim.get("seed", 0)),
                tuple(sim["mechanisms"]) if "mechanisms" in sim else None),
        )

    def allocation(self, thresholds: np.ndarray, distribution: np.ndarray,
                   signal: np.ndarray, mean: np.ndarray | None = None) -> Allocation:
        """Result-format allocation, one row per type: thresholds (NaN, shown as null, at t = 0
        and t = t_max), token distribution f, signal probability P_Y, mean tokens (``mean``,
        else sum_t t f(t); of an allocation read from a file, whatever its numbers: the
        checks judge them)."""
        if mean is None:
            with np.errstate(over="ignore", invalid="ignore"):
                mean = distribution @ np.arange(self.max_tokens + 1)
        return Allocation(self.ids, {
            ("thresholds",): thresholds,
            ("token_distribution",): distribution,
            ("signal_probability",): signal,
            ("mean_tokens",): mean,
        })

    def read_allocation(self, data) -> Allocation:
        """An allocation produced elsewhere, in the result's format (``mean_tokens`` may be
        left out, then it is computed from the distribution; given, it is kept for the
        ``feasibility`` check to judge)."""
        size = self.max_tokens + 1
        parsed = {(key,): partial(number_list, size=size, nullable=key == "thresholds")
                  for key in LIST_KEYS}
        read = read_allocation(data, self.ids, [(key,) for key in LIST_KEYS],
                               parsed={**parsed, ("mean_tokens",): finite_number})
        given = read.columns.get(("mean_tokens",))
        return self.allocation(*(np.stack(read.column(key)) for key in LIST_KEYS),
                               mean=None if given is None else given.astype(float))


LIST_KEYS = ("thresholds", "token_distribution", "signal_probability")


def finite_number(value) -> float:
    """A JSON number as a finite float; ValueError for anything else (a bool, a string, NaN,
    an integer too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("must be a finite number")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError("must be a finite number (this one is too large for a float)") from None
    if not np.isfinite(number):
        raise ValueError("must be a finite number")
    return number


def number_list(value, size: int, nullable: bool) -> np.ndarray:
    """A list of ``size`` finite numbers; where ``nullable`` (thresholds), null at t = 0 and
    t = max_tokens, which have no threshold, read as NaN. ValueError naming the first element
    that is not. Numbers out of range (a probability above 1) are read: the checks judge them."""
    if not isinstance(value, list) or len(value) != size:
        raise ValueError(f"must be a list of {size} numbers (t = 0..max_tokens)")
    out = np.empty(size)
    for t, v in enumerate(value):
        if v is None and nullable and t in (0, size - 1):
            out[t] = np.nan
            continue
        try:
            out[t] = finite_number(v)
        except ValueError as error:
            rule = " (null only at t = 0 and t = max_tokens)" if nullable else ""
            raise ValueError(f"element {t} {error}{rule}") from None
    return out


def _check_utility(spec: dict, where: list, found: Violations) -> None:
    """Exactly one form; probabilities as long as the values, non-negative, summing to 1;
    a uniform range [a, b] with a <= b and a number of points."""
    forms = [f for f in ("values", "uniform", "samples") if f in spec]
    if len(forms) != 1:
        found.add(where, "exactly one of values (with probabilities), uniform (with points), "
                  "samples is required")
        return
    partner = {"values": "probabilities", "uniform": "points"}.get(forms[0])
    strays = {"values": {"points"}, "uniform": {"probabilities"},
              "samples": {"probabilities", "points"}}[forms[0]] & set(spec)
    for stray in sorted(strays):
        found.add(where + [stray], f"does not go with {forms[0]}")
    if partner and partner not in spec:
        found.add(where + [partner], f"required key is missing (with {forms[0]})")
        return
    _check_magnitudes(spec[forms[0]], where + [forms[0]], found)
    if forms[0] == "values":
        values, probs = spec["values"], spec["probabilities"]
        if len(values) != len(probs):
            found.add(where + ["probabilities"], f"must have one entry per value "
                      f"({len(values)}, not {len(probs)})")
        elif not abs(sum(probs) - 1.0) <= PROBABILITY_SLACK:
            found.add(where + ["probabilities"], f"must sum to 1 (they sum to {sum(probs):.12g})")
    elif forms[0] == "uniform" and not spec["uniform"][0] <= spec["uniform"][1]:
        found.add(where + ["uniform"], f"[a, b] needs a <= b ({spec['uniform'][0]:g} > "
                  f"{spec['uniform'][1]:g})")


def _check_magnitudes(numbers: list, where: list, found: Violations) -> None:
    """Every utility within +-UTILITY_MAX (the first one beyond is reported)."""
    for i, v in enumerate(numbers):
        if not abs(v) <= UTILITY_MAX:
            found.add(where + [i], f"must be a finite number within +-{UTILITY_MAX:g} (a "
                      f"threshold can reach 2 / (1 - discount) utilities and the simulation "
                      f"sums them over agents and rounds; beyond this they overflow)")
            return


# --------------------------------------------------------------------------- mean-field formulas


def thresholds_from_differences(D: np.ndarray, p_r: float, gamma: float) -> np.ndarray:
    """u_thr(t) = gamma (P_R W(t+1) + (1 - P_R) W(t) - W(t-1)) = gamma (P_R D(t+1) + D(t)) for
    0 < t < t_max (eq. 4 in the token paper), from D(t) = W(t) - W(t-1), t = 1..t_max, the
    value of one more token; NaN at t = 0 (cannot signal) and t = t_max (must take a boost).
    W(t) is the paper's V(t) = E_u[V(t, u)], one row per type."""
    thr = np.full((D.shape[0], D.shape[1] + 1), np.nan)
    thr[:, 1:-1] = gamma * (p_r * D[:, 1:] + D[:, :-1])
    return thr


def thresholds_from_values(W: np.ndarray, p_r: float, gamma: float) -> np.ndarray:
    """Eq. 4 from the values W(t) themselves (see ``thresholds_from_differences``)."""
    return thresholds_from_differences(np.diff(W, axis=1), p_r, gamma)


def signal_probability(grid: UtilityGrid, thresholds: np.ndarray) -> np.ndarray:
    """P_Y(t) = Pr(u > u_thr(t)) (eq. 5; the strict inequality of eq. 4, which matters for
    discrete utilities: at u = u_thr the agent is indifferent and does not signal);
    P_Y(0) = 0 and P_Y(t_max) = 1 (the boundary rules)."""
    p_y = grid.prob_above(np.nan_to_num(thresholds[:, 1:-1]))
    k = thresholds.shape[0]
    return np.concatenate([np.zeros((k, 1)), p_y, np.ones((k, 1))], axis=1)


def spend_probability(p_y: np.ndarray, p_b: np.ndarray) -> np.ndarray:
    """The chance of spending a token in a round: P_Y(t) P_B(t), 0 at t = 0, 1 at t = t_max."""
    s = p_y * p_b
    s[..., 0], s[..., -1] = 0.0, 1.0
    return s


@dataclass(frozen=True, eq=False)
class Chain:
    """The token chain (eq. 6 in the token paper), one row of bands per type: with s = P_Y P_B,
    ``down[t]`` = p_{t,t-1} = s(t), ``stay[t]`` = p_{t,t} = (1 - P_R)(1 - s(t)) and ``up[t]`` =
    p_{t,t+1} = P_R (1 - s(t)). Boundary rows (omitted in the paper): t = 0 cannot signal
    (s = 0, no way down), t = t_max is boosted and spends (p_{t_max, t_max - 1} = 1, no way
    up). A token moves by at most one a round, so the three bands are the whole matrix."""

    down: np.ndarray
    stay: np.ndarray
    up: np.ndarray

    @classmethod
    def of(cls, s: np.ndarray, p_r: float) -> Chain:
        up = p_r * (1 - s)
        up[:, -1] = 0.0
        return cls(s.copy(), (1 - p_r) * (1 - s), up)

    def step(self, f: np.ndarray) -> np.ndarray:
        """One round of the chain: (f P)(t) = f(t-1) p_{t-1,t} + f(t) p_{t,t} + f(t+1) p_{t+1,t}."""
        out = f * self.stay
        out[:, 1:] += f[:, :-1] * self.up[:, :-1]
        out[:, :-1] += f[:, 1:] * self.down[:, 1:]
        return out

    def token_values(self, gamma: float, reward: np.ndarray) -> np.ndarray:
        """D(t) = W(t) - W(t-1), t = 1..t_max, where W = reward + gamma P W (one row per type):
        the value of one more token, all that eq. 4 needs.

        With p_{t,t} = 1 - p_{t,t-1} - p_{t,t+1}, (1 - gamma) W(t) = reward(t)
        - gamma p_{t,t-1} D(t) + gamma p_{t,t+1} D(t+1); subtracting this at t - 1 from it at t
        gives one tridiagonal system in D:
        ((1 - gamma) + gamma (p_{t,t-1} + p_{t-1,t})) D(t) - gamma p_{t,t+1} D(t+1)
        - gamma p_{t-1,t-2} D(t-1) = reward(t) - reward(t-1).
        Each column sums to 1 - gamma, more at the ends (p_{0,1} = P_R, p_{t_max,t_max-1} = 1),
        with off-diagonals <= 0: column diagonally dominant for any discount, so the Thomas
        algorithm needs no pivoting. Unlike W, D does not grow like 1 / (1 - gamma): a discount
        next to 1 leaves the thresholds their precision (differences of W would lose it)."""
        diag = (1 - gamma) + gamma * (self.down[:, 1:] + self.up[:, :-1])
        upper, lower = -gamma * self.up[:, 1:], -gamma * self.down[:, :-1]
        rhs = np.diff(reward, axis=1)
        size = rhs.shape[1]
        c, d = np.empty_like(rhs), np.empty_like(rhs)
        c[:, 0], d[:, 0] = upper[:, 0] / diag[:, 0], rhs[:, 0] / diag[:, 0]
        for t in range(1, size):
            denominator = diag[:, t] - lower[:, t] * c[:, t - 1]
            c[:, t] = upper[:, t] / denominator
            d[:, t] = (rhs[:, t] - lower[:, t] * d[:, t - 1]) / denominator
        D = np.empty_like(rhs)
        D[:, -1] = d[:, -1]
        for t in range(size - 2, -1, -1):
            D[:, t] = d[:, t] - c[:, t] * D[:, t + 1]
        return D


def stationary_distribution(chain: Chain) -> np.ndarray:
    """The stationary distribution f of the token chain (eq. 6-7), one row per type.

    The chain moves by at most one token a round (a birth-death chain), so its balance equations
    (7) reduce to f(t+1) p_{t+1,t} = f(t) p_{t,t+1}: solved directly with a cumulative product
    (in logs), O(t_max) per type, no iteration of the chain. Where some level cannot be left
    downwards (s(t) = 0) the levels below it are transient and get f = 0: the distribution
    lives on [a, b], a the highest level that cannot go down, b the first level from a up that
    cannot go up (s(b) = 1). That class is the only closed one unless some s(t) = 1 lies below
    a level with s = 0 (signalling for every utility with fewer tokens, never with more); then
    it is the topmost one. Tested against ``np.linalg`` on the dense matrix.
    """
    k, size = chain.down.shape
    up, down = chain.up[:, :-1], chain.down[:, 1:]            # p_{t,t+1}, p_{t+1,t}
    t = np.arange(size)
    stuck_down = np.concatenate([np.ones((k, 1), bool), down <= 0], axis=1)
    a = size - 1 - np.argmax(stuck_down[:, ::-1], axis=1)     # highest level with no way down
    stuck_up = np.concatenate([up <= 0, np.ones((k, 1), bool)], axis=1) & (t >= a[:, None])
    b = np.argmax(stuck_up, axis=1)                           # first level >= a with no way up
    inside = (t[:-1] >= a[:, None]) & (t[:-1] < b[:, None])
    with np.errstate(divide="ignore"):
        step = np.where(inside, np.log(np.where(inside, up, 1.0))
                        - np.log(np.where(inside, down, 1.0)), 0.0)
    log_f = np.concatenate([np.zeros((k, 1)), np.cumsum(step, axis=1)], axis=1)
    closed = (t >= a[:, None]) & (t <= b[:, None])
    log_f = np.where(closed, log_f, -np.inf)
    f = np.exp(log_f - log_f.max(axis=1, keepdims=True))
    return f / f.sum(axis=1, keepdims=True)


def boost_probability(g: np.ndarray, agents: int, boosts: int) -> np.ndarray:
    """P_B(t) from eq. 8 of the token paper, given g(t), the fraction of all agents holding t
    tokens and signalling (summed over types): 0 if m G(t+1) >= n, 1 if m G(t) < n, else
    (n - m G(t+1)) / (m g(t)), with G(t) = sum_{t' >= t} g(t'). P_B(0) = 0: no tokens, no
    boost."""
    G = np.cumsum(g[::-1])[::-1]
    G_next = np.append(G[1:], 0.0)
    m, n = float(agents), float(boosts)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        share = (n - m * G_next) / (m * g)
    p_b = np.where(m * G_next >= n, 0.0, np.where(m * G < n, 1.0, np.minimum(share, 1.0)))
    p_b[0] = 0.0
    return p_b


def mean_tokens(p: TokenProblem, f: np.ndarray) -> float:
    """The population's mean tokens, sum over types of fraction x sum_t t f_type(t)."""
    return float(p.fractions @ (f @ np.arange(p.max_tokens + 1)))


def supply_slack(p: TokenProblem) -> float:
    """How far the population's mean tokens may be from ``initial_tokens`` and still be the
    spec's token supply: ``tolerance`` x max(1, initial_tokens)."""
    return p.tolerance * max(1.0, float(p.initial_tokens))


def signalling_mass(fractions: np.ndarray, f: np.ndarray, p_y: np.ndarray) -> np.ndarray:
    """g(t) = sum over types of fraction x f_type(t) x P_Y,type(t) (section 4.3 over the mix)."""
    return fractions @ (f * p_y)


def strategy_thresholds(p: TokenProblem, p_y: np.ndarray, p_b: np.ndarray) -> np.ndarray:
    """The thresholds (eq. 4, in units of the utility scale) of each type's own values W(t) =
    E_u[V(t, u)] when it plays the strategy with signal probabilities P_Y (signal on the top
    P_Y(t) of the utility mass) against P_B: eq. 1-3 with the strategy fixed, solved exactly as
    one linear system per type (``Chain.token_values``):

    W(t) = P_B(t) E[u sigma(u)] + gamma (s(t) W(t-1) + (1 - s(t)) (P_R W(t+1) + (1 - P_R) W(t)))
    with s(t) = P_Y(t) P_B(t); W(0) = gamma (P_R W(1) + (1 - P_R) W(0));
    W(t_max) = E[u] + gamma W(t_max - 1).
    For a best response these are the thresholds it plays by; policy iteration evaluates each
    of its strategies this way.
    """
    p_b = p_b.copy()
    p_b[-1] = 1.0
    q = p_y.copy()
    q[:, 0], q[:, -1] = 0.0, 1.0
    chain = Chain.of(spend_probability(q, p_b), p.redistribution)
    D = chain.token_values(p.discount, p_b * p.grid.top_mass_utility(q))
    return thresholds_from_differences(D, p.redistribution, p.discount)


CHUNK_CELLS = 4_000_000  # (type, tokens, utility) states per block of the deviation gain


def deviation_gain(p: TokenProblem, p_y: np.ndarray, p_b: np.ndarray,
                   own: np.ndarray) -> tuple[float, tuple[int, int, int]]:
    """The largest one-step deviation gain (units of the utility scale) over types k, token
    counts 0 < t < t_max and utility values u_j, and where: V_Y - V_N = P_B(t) (u - u_thr(t))
    (eq. 2 minus eq. 3, u_thr of the strategy's own values, eq. 4); a strategy signalling with
    probability sigma at u loses (1 - sigma) (V_Y - V_N)^+ + sigma (V_N - V_Y)^+ against the
    better action. Every state is visited (in blocks of token counts, to bound memory)."""
    grid = p.grid
    possible = grid.probabilities[:, None, :] > 0
    best, where = 0.0, (0, 0, 0)
    k_types, width = grid.values.shape
    chunk = max(1, CHUNK_CELLS // (k_types * width))                  # token counts at a time
    for start in range(1, p.max_tokens, chunk):
        t = slice(start, min(start + chunk, p.max_tokens))
        sigma = grid.signal_share(p_y[:, t])                         # (k, tokens, G)
        edge = p_b[None, t, None] * (grid.values[:, None, :] - own[:, t, None])
        loss = ((1 - sigma) * np.maximum(edge, 0) + sigma * np.maximum(-edge, 0)) * possible
        k, i, j = np.unravel_index(int(np.argmax(loss)), loss.shape)
        if loss[k, i, j] > best:
            best, where = float(loss[k, i, j]), (int(k), start + int(i), int(j))
    return best, where


@dataclass(frozen=True)
class Mismatch:
    """Where thresholds describe a signal probability worst (``description_mismatch``)."""

    excess: float                 # how far P_Y(t) lies outside [low, high]
    type: int
    tokens: int
    low: float
    high: float


def description_mismatch(grid: UtilityGrid, thresholds: np.ndarray, p_y: np.ndarray,
                         tol: float) -> Mismatch:
    """How far P_Y(t) is from the strategy its thresholds describe, over 0 < t < t_max:
    signalling iff u > u_thr(t) (eq. 4-5), up to ``tol`` in utility (units of the scale), allows
    Pr(u > u_thr + tol) <= P_Y(t) <= Pr(u > u_thr - tol). With a discrete h(u) any threshold
    between the same two utility values is the same strategy, and agents at a value within tol
    of the threshold may mix."""
    thr, q = thresholds[:, 1:-1], p_y[:, 1:-1]
    if not q.size:
        return Mismatch(0.0, 0, 0, 0.0, 0.0)
    low, high = grid.prob_above(thr + tol), grid.prob_above(thr - tol)
    off = np.maximum(low - q, q - high)
    k, t = np.unravel_index(int(np.argmax(off)), off.shape)
    return Mismatch(float(off[k, t]), int(k), int(t) + 1, float(low[k, t]), float(high[k, t]))


def boost_utility(p: TokenProblem, p_y: np.ndarray, f: np.ndarray, p_b: np.ndarray) -> float:
    """Expected utility from boosts per agent and round in the stationary state: sum over types
    and t of fraction f(t) P_B(t) E[u sigma(u)] (t_max: boosted, E[u]); in utility units."""
    p_b = p_b.copy()
    p_b[-1] = 1.0
    q = p_y.copy()
    q[:, -1] = 1.0
    per_type = (f * p_b * p.grid.top_mass_utility(q)).sum(axis=1)
    return float(p.fractions @ per_type) * p.scale


def metrics(p: TokenProblem, allocation: Allocation) -> dict:
    """Signalling strength P_B(t) from the allocation (eq. 8), the population's mean tokens and
    each type's share of the boosts (sum_t f P_Y P_B, with the forced boost at t_max). An
    allocation read from a file may hold any finite numbers (the checks judge them): whatever
    they overflow to is reported, without a warning."""
    f = np.asarray(allocation.column("token_distribution"), dtype=float)
    p_y = np.asarray(allocation.column("signal_probability"), dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        p_b = boost_probability(signalling_mass(p.fractions, f, p_y), p.agents, p.boosts)
        share = (f * spend_probability(p_y, p_b)).sum(axis=1)
        return {
            "boost_probability": p_b,
            "mean_tokens": mean_tokens(p, f),
            "boost_share": dict(zip(p.ids, share)),
            "boosts_per_round": float(p.agents * p.fractions @ share),
        }

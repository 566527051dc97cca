"""The token game played round by round: the solved thresholds and the baselines of section 7
of the token paper, on one population (what ``fairalloc simulate`` runs).

A population of m agents (types in proportion to their fractions, largest remainder) draws a
utility every round: from its type's h(u), or replayed cyclically from the type's ``trace``,
each agent from its own random phase (agents enter at varied times, section 6). Every mechanism
sees the same utilities and hands out n boosts a round:

* ``mean-field``: the solved thresholds with real token accounting: an agent with t tokens
  signals iff u > u_thr(t) (never at 0 tokens, always at t_max), the n signalling agents with
  the most tokens are boosted (ties at random) and spend a token, and the tokens spent are
  handed to as many distinct agents drawn at random among those not boosted and below t_max
  (each gets one with probability P_R = n / (m - n) when all n boosts are used; tokens are
  conserved exactly, where independent coin flips would only conserve them on average);
* ``round-robin``: n agents in fixed rotation;
* ``lottery``: n agents drawn uniformly each round;
* ``equal-progress``: the n agents with the least progress so far, progress being the utility
  gained from boosts (max-min progress, greedily);
* ``equal-division``: every agent gets n/m of a boost every round and, a modelling choice, n/m
  of its utility (utility scales linearly with the share of a boost);
* ``max-welfare``: the n highest utilities of the round.

Metrics per mechanism (section 7): ``performance``, the sum over agents and rounds of x u;
``share_uniformity``, min / max boosted rounds over agents; ``envy_free_index``, the mean over
agents i of min_j u_i(x_i) / max(u_i(x_i), u_i(x_j)) with u_i(x_j) = sum_r u_ir x_jr (agent i's
realised utilities on j's boosts); ``relative_performance``, performance / max-welfare's
(computed even when max-welfare is not among the mechanisms run); and ``boost_share`` per
type, the mean share of rounds its agents were boosted.

Units. The metrics are computed on the utilities divided by their scale (the largest |u| drawn),
in float32 for speed; performance is multiplied back. So utilities near 1e-290 do not flush to 0
in float32, nor do those near 1e290 overflow it, and every metric but performance is the same in
any units (equal-progress, whose tie-breaking jitter is relative, too).

Randomness: one seed; a ``SeedSequence`` spawns one generator for the utilities and one per
mechanism (by its place in ``MECHANISMS``), so a mechanism's outcome does not depend on which
others are run with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.models import token as model
from fairalloc.models.token import TokenProblem

MECHANISMS = ("mean-field", "round-robin", "lottery", "equal-progress", "equal-division",
              "max-welfare")
TICK = 100  # rounds between progress updates
ENVY_ROWS = 1000  # agents i per block of the pairwise envy matrix
# of the largest progress: equal-progress breaks ties between agents with noise this small
JITTER = 1e-9

Tick = Callable[[int], None]


@dataclass(frozen=True, eq=False)
class Population:
    """Who is who and what each agent's utility is in each round."""

    types: np.ndarray          # (m,) type index per agent
    utilities: np.ndarray      # (rounds, m)

    @property
    def scale(self) -> float:
        """The largest |utility| drawn (1 when every one is 0): the unit of the metrics."""
        return float(np.abs(self.utilities).max()) or 1.0

    def in_units(self, scale: float) -> np.ndarray:
        """The utilities divided by ``scale``, as float32 (divided in float64 first: a utility
        beyond float32's range must not overflow, nor a tiny one flush to 0)."""
        out = np.empty(self.utilities.shape, dtype=np.float32)
        np.divide(self.utilities, scale, out=out, casting="same_kind")
        return out


def type_counts(fractions: np.ndarray, agents: int) -> np.ndarray:
    """Agents per type: m x fraction rounded by largest remainder (ties to the earlier type)."""
    share = fractions * agents
    counts = np.floor(share).astype(np.int64)
    left = agents - int(counts.sum())
    counts[np.argsort(-(share - counts), kind="stable")[:left]] += 1
    return counts


def population(p: TokenProblem, rounds: int, rng: np.random.Generator) -> Population:
    """Per-round utilities for every agent, from its type's h(u) or replayed from its trace."""
    counts = type_counts(p.fractions, p.agents)
    types = np.repeat(np.arange(p.type_count), counts)
    utilities = np.empty((rounds, p.agents))
    start = 0
    for k, count in enumerate(counts):
        block = slice(start, start + count)
        start += count
        trace = p.traces[k]
        if trace is not None:
            phase = rng.integers(len(trace), size=count)
            utilities[:, block] = trace[(np.arange(rounds)[:, None] + phase) % len(trace)]
        else:
            u = p.utilities[k]
            cdf = np.cumsum(u.probabilities)
            draw = np.searchsorted(cdf, rng.random((rounds, count)) * cdf[-1], side="right")
            utilities[:, block] = u.values[np.minimum(draw, len(u.values) - 1)]
    return Population(types, utilities)


def top(keys: np.ndarray, n: int) -> np.ndarray:
    """Indices of the n largest keys in each row (any order)."""
    return np.argpartition(-keys, n - 1, axis=-1)[..., :n]


def boost_rows(rounds: int, agents: int, chosen: np.ndarray) -> np.ndarray:
    """A (rounds, m) 0/1 matrix with ``chosen[r]`` set in row r."""
    x = np.zeros((rounds, agents), dtype=np.float32)
    np.put_along_axis(x, chosen, 1.0, axis=1)
    return x


def mean_field_rounds(p: TokenProblem, pop: Population, rng: np.random.Generator, tick: Tick,
                      thresholds: np.ndarray) -> np.ndarray:
    """The token game played with the thresholds, token by token (see the module docstring)."""
    rounds, m = pop.utilities.shape
    n, t_max = p.boosts, p.max_tokens
    tokens = np.full(m, p.initial_tokens, dtype=np.int64)
    x = np.zeros((rounds, m), dtype=np.float32)
    for r in range(rounds):
        with np.errstate(invalid="ignore"):
            signal = pop.utilities[r] > thresholds[pop.types, tokens]   # NaN (t = 0): no
        signal |= tokens == t_max
        asking = np.flatnonzero(signal)
        if len(asking) > n:                  # most tokens first, ties at random
            asking = asking[top(tokens[asking] + rng.random(len(asking)), n)]
        tokens[asking] -= 1
        x[r, asking] = 1.0
        open_ = np.ones(m, dtype=bool)
        open_[asking] = False
        open_ &= tokens < t_max
        eligible = np.flatnonzero(open_)
        tokens[rng.choice(eligible, size=min(len(asking), len(eligible)), replace=False)] += 1
        if (r + 1) % TICK == 0:
            tick(TICK)
    tick(rounds % TICK)
    return x


def round_robin(p: TokenProblem, pop: Population, rng: np.random.Generator,
                tick: Tick) -> np.ndarray:
    rounds, m = pop.utilities.shape
    offset = (np.arange(m)[None, :] - p.boosts * np.arange(rounds)[:, None]) % m
    tick(rounds)
    return (offset < p.boosts).astype(np.float32)


def lottery(p: TokenProblem, pop: Population, rng: np.random.Generator,
            tick: Tick) -> np.ndarray:
    rounds, m = pop.utilities.shape
    x = boost_rows(rounds, m, top(rng.random((rounds, m)), p.boosts))
    tick(rounds)
    return x


def max_welfare(p: TokenProblem, pop: Population, rng: np.random.Generator,
                tick: Tick) -> np.ndarray:
    rounds, m = pop.utilities.shape
    x = boost_rows(rounds, m, top(pop.utilities, p.boosts))
    tick(rounds)
    return x


def equal_division(p: TokenProblem, pop: Population, rng: np.random.Generator,
                   tick: Tick) -> np.ndarray:
    tick(pop.utilities.shape[0])
    return np.full(pop.utilities.shape, p.boosts / p.agents, dtype=np.float32)


def equal_progress(p: TokenProblem, pop: Population, rng: np.random.Generator,
                   tick: Tick) -> np.ndarray:
    """Each round, the n agents with the least progress (utility gained from boosts so far, in
    units of the scale, so that the tie-breaking jitter is relative); ties at random."""
    rounds, m = pop.utilities.shape
    unit = pop.utilities / pop.scale
    progress = np.zeros(m)
    x = np.zeros((rounds, m), dtype=np.float32)
    for r in range(rounds):
        jitter = rng.random(m) * JITTER * (1.0 + np.abs(progress).max())
        chosen = top(-(progress + jitter), p.boosts)
        x[r, chosen] = 1.0
        progress[chosen] += unit[r, chosen]
        if (r + 1) % TICK == 0:
            tick(TICK)
    tick(rounds % TICK)
    return x


BASELINES = {"round-robin": round_robin, "lottery": lottery, "equal-progress": equal_progress,
             "equal-division": equal_division, "max-welfare": max_welfare}


def mechanism_metrics(p: TokenProblem, pop: Population, u: np.ndarray, x: np.ndarray,
                      scale: float) -> dict:
    """Performance, share uniformity, envy-free index and per-type boost shares of one
    mechanism's boosts x (rounds x m); u is the population's utilities in units of ``scale``,
    in float32."""
    performance = float((x * u).sum(dtype=np.float64)) * scale
    boosted = x.sum(axis=0, dtype=np.float64)
    high = float(boosted.max())
    m = x.shape[1]
    own, best = np.empty(m), np.empty(m)
    for start in range(0, m, ENVY_ROWS):         # rows of u_i(x_j) = sum_r u_ir x_jr
        rows = slice(start, min(start + ENVY_ROWS, m))
        block = u[:, rows].T @ x
        own[rows] = block[np.arange(block.shape[0]), np.arange(m)[rows]]
        best[rows] = block.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        envy = np.where(best > 0, own / best, 1.0)
    rounds = x.shape[0]
    share = np.bincount(pop.types, weights=boosted, minlength=p.type_count) / np.bincount(
        pop.types, minlength=p.type_count) / rounds
    return {
        "performance": performance,
        "share_uniformity": float(boosted.min()) / high if high > 0 else 1.0,
        "envy_free_index": float(envy.mean()),
        "boost_share": dict(zip(p.ids, share.tolist())),
    }


def settings(p: TokenProblem, mechanisms: tuple[str, ...] | None = None, rounds: int | None = None,
             seed: int | None = None) -> tuple[tuple[str, ...], int, int]:
    """Mechanisms, rounds and seed: those given, else the spec's ``simulation``, else every
    mechanism, 1,000 rounds, seed 0."""
    spec = p.simulation
    if mechanisms is None:
        mechanisms = spec.mechanisms if spec and spec.mechanisms else MECHANISMS
    if rounds is None:
        rounds = spec.rounds if spec else 1000
    if seed is None:
        seed = spec.seed if spec else 0
    return tuple(mechanisms), rounds, seed


def simulate(p: TokenProblem, thresholds: np.ndarray, mechanisms: tuple[str, ...] | None = None,
             rounds: int | None = None, seed: int | None = None,
             tick: Tick | None = None) -> dict:
    """Run the mechanisms for some rounds on one population (see ``settings`` for the
    defaults) and return ``{mechanism: {metric: value}}``; ``tick(k)`` reports k more rounds
    done (a progress bar)."""
    mechanisms, rounds, seed = settings(p, mechanisms, rounds, seed)
    tick = tick or (lambda _: None)
    streams = np.random.SeedSequence(seed).spawn(1 + len(MECHANISMS))
    pop = population(p, rounds, np.random.default_rng(streams[0]))
    run = {**BASELINES, "mean-field": partial(mean_field_rounds, thresholds=thresholds)}
    scale = pop.scale
    u = pop.in_units(scale)
    out = {}
    for name in mechanisms:
        rng = np.random.default_rng(streams[1 + MECHANISMS.index(name)])
        out[name] = mechanism_metrics(p, pop, u, run[name](p, pop, rng, tick), scale)
    best = top(pop.utilities, p.boosts)                 # max-welfare's boosts, by definition
    reference = float((np.take_along_axis(pop.utilities, best, axis=1) / scale).sum()) * scale
    for metrics in out.values():
        metrics["relative_performance"] = (metrics["performance"] / reference
                                           if reference > 0 else None)
    return out


def metrics(p: TokenProblem, allocation: Allocation) -> dict:
    """The model's metrics of an allocation and, when the spec asks for one (its
    ``simulation``), the simulation of its thresholds."""
    out = model.metrics(p, allocation)
    if p.simulation is not None:
        out["simulation"] = simulate(p, np.asarray(allocation.column("thresholds"), dtype=float))
    return out

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

Time. Every mechanism is played on the one engine for time, ``fairalloc.replay.clock.run``,
the replay's (issue 25: ``simulate`` sits beside ``replay``, on the same engine): each agent is
a job of infinite work present from time 0, one round is one unit of simulated time, and the
run stops at the horizon ``rounds``. A mechanism's ``plan`` is the round's boosts as rates (1:
boosted, 0: not) held to the round's end; its ``ran`` records them (mean-field also moves the
tokens, equal-progress adds the progress). Round-robin, lottery and max-welfare, whose rounds
nothing can change, plan many rounds at once (a schedule the engine plays in one stretch),
equal division one plan for every round (n/m each, never changing). The engine's progress
reports drive ``progress``.

Randomness: one seed; a ``SeedSequence`` spawns one generator for the utilities and one per
mechanism (by its place in ``MECHANISMS``), so a mechanism's outcome does not depend on which
others are run with it. A mechanism draws round by round what it once drew for every round at
once (numpy's generators give the same numbers either way), so a seed's results did not change
when the game moved onto the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.models import token as model
from fairalloc.models.token import TokenProblem
from fairalloc.replay import clock
from fairalloc.replay.clock import Plan, Progress, State
from fairalloc.replay.trace import Trace

MECHANISMS = ("mean-field", "round-robin", "lottery", "equal-progress", "equal-division",
              "max-welfare")
ENVY_ROWS = 1000  # agents i per block of the pairwise envy matrix
# of the largest progress: equal-progress breaks ties between agents with noise this small
JITTER = 1e-9
AHEAD_CELLS = 1 << 18  # agents x rounds a mechanism that can plans at once


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
    x = np.zeros((rounds, agents))
    np.put_along_axis(x, chosen, 1.0, axis=1)
    return x


class Boosts:
    """A mechanism of the token game on the engine for time (``fairalloc.replay.clock``):
    every agent a job of infinite work present from time 0, one round one unit of simulated
    time. ``plan`` hands out boosts as rates (1: boosted, 0: not) held to the round's end, the
    n boosts being the one resource (an agent boosted holds 1/n of it); ``ran`` records them
    in ``x`` (rounds x m, the boosts each agent got each round)."""

    def __init__(self, p: TokenProblem, pop: Population, rng: np.random.Generator):
        self.p, self.pop, self.rng = p, pop, rng
        self.x = np.zeros(pop.utilities.shape, dtype=np.float32)

    def ran(self, state: State, plan: Plan, seconds: np.ndarray) -> None:
        rounds = self.x.shape[0]
        self.x[int(state.now):int(min(plan.until, rounds))] = plan.rates


class RoundByRound(Boosts):
    """A mechanism whose round depends on the rounds before it: one plan a round."""

    def plan(self, state: State) -> Plan:
        rates = np.zeros(self.p.agents)
        rates[self.boosted(int(state.now))] = 1.0
        return Plan(rates, rates[:, None] / self.p.boosts, until=state.now + 1, held=True)

    def boosted(self, r: int) -> np.ndarray:
        """The agents boosted in round r (each mechanism's own rule)."""
        raise NotImplementedError


class PlannedAhead(Boosts):
    """A mechanism whose rounds nothing that happens can change (no arrival, no completion,
    no earlier round): it plans up to ``AHEAD_CELLS`` agents x rounds at once, a schedule of
    held rounds the engine plays in one stretch (one plan a round would cost the engine a
    step a round)."""

    def plan(self, state: State) -> Plan:
        first = int(state.now)
        count = min(max(1, AHEAD_CELLS // self.p.agents), self.x.shape[0] - first)
        rates = self.shares(first, count)
        return Plan(rates, rates[..., None] / self.p.boosts, until=state.now + count,
                    held=True)

    def shares(self, first: int, count: int) -> np.ndarray:
        """The boosts of rounds first, ..., first + count - 1 (count x m; each mechanism's
        own rule)."""
        raise NotImplementedError


class MeanField(RoundByRound):
    """The token game played with the thresholds, token by token (see the module docstring):
    ``plan`` boosts the signalling agents, ``ran`` moves the tokens."""

    def __init__(self, p: TokenProblem, pop: Population, rng: np.random.Generator,
                 thresholds: np.ndarray):
        super().__init__(p, pop, rng)
        self.thresholds = thresholds
        self.tokens = np.full(p.agents, p.initial_tokens, dtype=np.int64)

    def boosted(self, r: int) -> np.ndarray:
        tokens, n = self.tokens, self.p.boosts
        with np.errstate(invalid="ignore"):
            signal = self.pop.utilities[r] > self.thresholds[self.pop.types, tokens]  # NaN: no
        signal |= tokens == self.p.max_tokens
        asking = np.flatnonzero(signal)
        if len(asking) > n:                  # most tokens first, ties at random
            asking = asking[top(tokens[asking] + self.rng.random(len(asking)), n)]
        return asking

    def ran(self, state: State, plan: Plan, seconds: np.ndarray) -> None:
        super().ran(state, plan, seconds)
        asking, tokens = np.flatnonzero(plan.rates), self.tokens    # the round's boosted
        tokens[asking] -= 1                  # each spends a token, handed to distinct others
        open_ = tokens < self.p.max_tokens
        open_[asking] = False
        eligible = np.flatnonzero(open_)
        tokens[self.rng.choice(eligible, size=min(len(asking), len(eligible)),
                               replace=False)] += 1


class RoundRobin(PlannedAhead):
    """n agents in fixed rotation: round r boosts agents rn, ..., rn + n - 1 (mod m)."""

    def shares(self, first: int, count: int) -> np.ndarray:
        m, n = self.p.agents, self.p.boosts
        offset = (np.arange(m)[None, :] - n * np.arange(first, first + count)[:, None]) % m
        return (offset < n).astype(float)


class Lottery(PlannedAhead):
    """n agents drawn uniformly each round (the n largest of m uniform draws)."""

    def shares(self, first: int, count: int) -> np.ndarray:
        return boost_rows(count, self.p.agents,
                          top(self.rng.random((count, self.p.agents)), self.p.boosts))


class MaxWelfare(PlannedAhead):
    """The n highest utilities of the round."""

    def shares(self, first: int, count: int) -> np.ndarray:
        return boost_rows(count, self.p.agents,
                          top(self.pop.utilities[first:first + count], self.p.boosts))


class EqualProgress(RoundByRound):
    """Each round, the n agents with the least progress (utility gained from boosts so far, in
    units of the scale, so that the tie-breaking jitter is relative); ties at random."""

    def __init__(self, p: TokenProblem, pop: Population, rng: np.random.Generator):
        super().__init__(p, pop, rng)
        self.unit = pop.utilities / pop.scale
        self.progress = np.zeros(p.agents)

    def boosted(self, r: int) -> np.ndarray:
        progress = self.progress
        jitter = self.rng.random(self.p.agents) * JITTER * (1.0 + np.abs(progress).max())
        return top(-(progress + jitter), self.p.boosts)

    def ran(self, state: State, plan: Plan, seconds: np.ndarray) -> None:
        super().ran(state, plan, seconds)
        boosted = np.flatnonzero(plan.rates)
        self.progress[boosted] += self.unit[int(state.now), boosted]


class EqualDivision(Boosts):
    """n/m of a boost to every agent every round: shares that never change, so one plan
    holds for every round (the engine plays them as one stretch of constant rates)."""

    def plan(self, state: State) -> Plan:
        share = self.p.boosts / self.p.agents
        rates = np.full(self.p.agents, share)
        return Plan(rates, np.full((self.p.agents, 1), share / self.p.boosts))


BASELINES: dict[str, type[Boosts]] = {
    "round-robin": RoundRobin, "lottery": Lottery, "equal-progress": EqualProgress,
    "equal-division": EqualDivision, "max-welfare": MaxWelfare}


def play(mechanism: Boosts, progress: Progress | None = None) -> np.ndarray:
    """Play ``mechanism`` for its rounds on the engine for time and return its boosts
    (rounds x m); ``progress(now, done, total)`` as the engine calls it (``now``: the rounds
    played)."""
    rounds, m = mechanism.x.shape
    agents = Trace(tuple(map(str, range(m))), np.zeros(m))
    clock.run(agents, np.full(m, np.inf), mechanism, resources=1, horizon=rounds,
              progress=progress)
    return mechanism.x


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
             progress: Callable[[int, int], None] | None = None) -> dict:
    """Run the mechanisms for some rounds on one population (see ``settings`` for the
    defaults), each on the engine for time, and return ``{mechanism: {metric: value}}``;
    ``progress(played, total)`` reports the rounds played so far over all the mechanisms (a
    progress bar)."""
    mechanisms, rounds, seed = settings(p, mechanisms, rounds, seed)
    streams = np.random.SeedSequence(seed).spawn(1 + len(MECHANISMS))
    pop = population(p, rounds, np.random.default_rng(streams[0]))
    scale = pop.scale
    u = pop.in_units(scale)
    make = {**BASELINES, "mean-field": partial(MeanField, thresholds=thresholds)}
    out = {}
    for k, name in enumerate(mechanisms):
        rng = np.random.default_rng(streams[1 + MECHANISMS.index(name)])
        mechanism = make[name](p, pop, rng)
        told = None if progress is None else partial(_tell, progress, k * rounds,
                                                     len(mechanisms) * rounds)
        out[name] = mechanism_metrics(p, pop, u, play(mechanism, told), scale)
    best = top(pop.utilities, p.boosts)                 # max-welfare's boosts, by definition
    reference = float((np.take_along_axis(pop.utilities, best, axis=1) / scale).sum()) * scale
    for metrics in out.values():
        metrics["relative_performance"] = (metrics["performance"] / reference
                                           if reference > 0 else None)
    return out


def _tell(progress: Callable[[int, int], None], before: int, total: int, now: float,
          done: int, agents: int) -> None:
    """The engine's progress report of one mechanism as rounds played over all of them."""
    progress(before + int(now), total)


def metrics(p: TokenProblem, allocation: Allocation) -> dict:
    """The model's metrics of an allocation and, when the spec asks for one (its
    ``simulation``), the simulation of its thresholds."""
    out = model.metrics(p, allocation)
    if p.simulation is not None:
        out["simulation"] = simulate(p, np.asarray(allocation.column("thresholds"), dtype=float))
    return out

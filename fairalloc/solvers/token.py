"""Token methods: Algorithm 1 of the token paper with two best responses.

``mean-field`` (default) finds each type's best response to P_B by policy iteration on eq. 1-4,
``mean-field-lp`` by the linear program of the discounted MDP (HiGHS). Both run the same outer
loop (Algorithm 1): best response -> thresholds (eq. 4) -> P_Y (eq. 5) -> stationary token
distribution (eq. 6-7) -> P_B (eq. 8), until P_B is a fixed point. Everything runs in units of
the utility scale (``TokenProblem.grid``): cost and accuracy do not depend on the magnitude of
the utilities, nor (policy iteration, differences of values) on how close the discount is to 1.

Token supply. The chain of eq. 6 spends n/m tokens per agent and round in *every* stationary
distribution (flow balance: sum f s = P_R sum f (1 - s) gives sum f s = n/m), so eq. 8 applied to
a stationary f hands back whatever step-shaped P_B the chain was built with: solving f directly
and re-applying eq. 8 is a fixed point from the first step on, anywhere along a one-parameter
family, and says nothing about how many tokens circulate. The paper's inner loop pins that
parameter implicitly, by iterating the chain from f(t_ini) = 1 (tokens are conserved while the
boosts are fully used). Here the same is explicit: for the current P_Y, the inner step finds the
step-shaped P_B (1 above a cutoff c, 0 below, linear in between) whose stationary distribution
holds ``initial_tokens`` tokens per agent on average, by bisection on c; eq. 8 then gives P_B.
If no cutoff reaches that mean, the nearest end is taken and the mean tokens differ: every
stationary state spends n/m tokens per agent and round, and with plentiful boosts (150 of 1,000
agents on the KMeans-vs-PageRank spec) agents holding ``initial_tokens`` on average would not
claim them, even with every signal boosted; or the tokens pile up at t_max. Then the result is
an equilibrium of another token supply, and it is labelled ``infeasible``, its message saying
which way it missed (the ``token_supply`` check fails on it too).

The outer loop is a search on one number. Eq. 8 ranks by tokens, so every P_B it returns is such
a step, P_B(t) = clip(t - c, 0, 1) for 0 < t < t_max, with cutoff c = sum_t (1 - P_B(t)) in
[0, t_max - 1]. Algorithm 1's step maps c to the cutoff c' of eq. 8 after the best response to
that P_B; the best response is a threshold rule on a discrete h(u), so it changes only where a
threshold crosses a utility value, and c' is a step function of c. As c'(0) >= 0 and
c'(t_max - 1) <= t_max - 1, c' meets the diagonal: either at a fixed point c' = c (a pure
equilibrium) or by jumping over it at some c* (c' > c just below, c' < c just above), where the
agents at the crossing utility value must mix. The paper's plain loop can cycle between the two
sides of such a jump for ever (it does on the KMeans-vs-PageRank spec). So the loop keeps a
bracket [lo, hi] (c' > c at lo, c' < c at hi), takes Algorithm 1's step when it lands inside and
the bracket keeps halving, and bisects otherwise. When the bracket closes on a jump, the
strategies at its two ends differ only where a threshold sits on the crossing value; agents
there signal with the mixing probability for which the stationary distribution under P_B(c*)
holds ``initial_tokens`` per agent (bisection: the mean falls from above it to below it). No
damping: elsewhere the strategy is exactly the threshold rule.

Converged. The result is verified as the ``equilibrium`` check verifies it: the thresholds
reported are those of the strategy's own values against the reported P_B (eq. 1-4 with the
strategy fixed), no one-step deviation gains more than ``tolerance`` x the utility scale, the
thresholds describe the signal probabilities, and P_B moved less than ``tolerance`` in the last
step. A run that fails this, or stops at ``max_iterations``, is labelled ``iteration_limit``: no
quiet fall-back to random signalling (the paper's choice, section 4.4).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fairalloc.contract import does_not_apply
from fairalloc.errors import SolverError
from fairalloc.models.token import (
    FLIP,
    PROBABILITY_SLACK,
    RESOLUTION,
    ROOT_XTOL,
    TIE,
    Chain,
    TokenProblem,
    boost_probability,
    boost_utility,
    description_mismatch,
    deviation_gain,
    mean_tokens,
    signal_probability,
    signalling_mass,
    spend_probability,
    stationary_distribution,
    strategy_thresholds,
    supply_slack,
    thresholds_from_values,
)
from fairalloc.result import Solution
from fairalloc.solvers.highs import INF, solve_matrix

ROOT_STEPS = 100         # evaluations for a root of a monotone function (Illinois + bisection)
                         # to ROOT_XTOL of its interval
POLICY_ROUNDS = 1_000    # policy-iteration rounds per best response: a guard against a cycle
LP_MAX_COLUMNS = 2_000   # (t_max + 1)(G + 1) columns per type: the LP's matrix is dense
# The LP holds the values W themselves, of size 1 / (1 - discount) (x the scale), and HiGHS
# meets its constraints to ~1e-7 of them: from discount 1 - 1e-7 on it fails on random specs
# ("Not Set") or picks a wrong action. A decade of margin:
LP_MAX_DISCOUNT = 0.99999

# (problem, P_B, the previous best response's P_Y or None) -> (thresholds in units of the
# utility scale, P_Y, units of work)
BestResponse = Callable[[TokenProblem, np.ndarray, np.ndarray | None],
                        tuple[np.ndarray, np.ndarray, int]]


def step_boosts(c: float, max_tokens: int) -> np.ndarray:
    """A step-shaped signalling strength: P_B(t) = clip(t - c, 0, 1) for 0 < t < t_max, 0 at
    t = 0 and 1 at t_max (the shape eq. 8 produces when ranking by tokens)."""
    t = np.arange(max_tokens + 1, dtype=float)
    p_b = np.clip(t - c, 0.0, 1.0)
    p_b[0], p_b[-1] = 0.0, 1.0
    return p_b


def cutoff(p_b: np.ndarray) -> float:
    """The cutoff c of a step-shaped P_B (the inverse of ``step_boosts``): sum over
    0 < t < t_max of 1 - P_B(t)."""
    return float((1.0 - p_b[1:-1]).sum())


def stationary_under(p: TokenProblem, p_y: np.ndarray, c: float) -> np.ndarray:
    """The stationary token distributions (eq. 6-7) of P_Y against the step P_B of cutoff c."""
    s = spend_probability(p_y, step_boosts(c, p.max_tokens))
    return stationary_distribution(Chain.of(s, p.redistribution))


def increasing_root(g: Callable[[float], float], lo: float, hi: float) -> float:
    """x in [lo, hi] with g(x) = 0 for a continuous, increasing g (lo when g(lo) >= 0, hi when
    g(hi) <= 0), to ROOT_XTOL of the interval: false position, Illinois variant (an end kept
    twice in a row has its value halved, so both ends move: superlinear), with a bisection
    whenever three steps have not halved the bracket (never slower than bisection by more than
    a factor of three)."""
    g_lo = g(lo)
    if g_lo >= 0:
        return lo
    g_hi = g(hi)
    if g_hi <= 0:
        return hi
    xtol, widths, moved = ROOT_XTOL * (hi - lo), [hi - lo], None
    for _ in range(ROOT_STEPS):
        if hi - lo <= xtol:
            break
        x = lo - g_lo * (hi - lo) / (g_hi - g_lo)
        if not lo < x < hi or (len(widths) > 3 and widths[-1] > widths[-4] / 2):
            x = (lo + hi) / 2
        g_x = g(x)
        if g_x == 0:
            return x
        if g_x < 0:
            lo, g_lo = x, g_x
            g_hi = g_hi / 2 if moved == "lo" else g_hi
            moved = "lo"
        else:
            hi, g_hi = x, g_x
            g_lo = g_lo / 2 if moved == "hi" else g_lo
            moved = "hi"
        widths.append(hi - lo)
    return (lo + hi) / 2


def pinned_distribution(p: TokenProblem, p_y: np.ndarray) -> np.ndarray:
    """Stationary token distributions (eq. 6-7) under the step P_B whose population mean equals
    ``initial_tokens`` (a root on the cutoff; the mean grows with it)."""
    c = increasing_root(lambda c: mean_tokens(p, stationary_under(p, p_y, c)) - p.initial_tokens,
                        0.0, float(max(p.max_tokens - 1, 0)))
    return stationary_under(p, p_y, c)


def improved_policy(p: TokenProblem, thresholds: np.ndarray, p_y: np.ndarray) -> np.ndarray:
    """The greedy threshold rule against the thresholds of the strategy's own values (eq. 4):
    signal where u > u_thr(t) + TIE, not where u < u_thr(t) - TIE, and keep the current choice
    in between (a tie must not make policy iteration cycle). The boundaries stay P_Y(0) = 0,
    P_Y(t_max) = 1."""
    thr = thresholds[:, 1:-1]
    low, high = p.grid.prob_above(thr + TIE), p.grid.prob_above(thr - TIE)
    out = p_y.copy()
    out[:, 1:-1] = np.clip(p_y[:, 1:-1], low, high)
    return out


def policy_iteration(p: TokenProblem, p_b: np.ndarray,
                     start: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, int]:
    """Each type's best response to P_B by policy iteration (Howard) on eq. 1-4: evaluate the
    current threshold strategy exactly (one tridiagonal system per type, ``strategy_thresholds``)
    and switch to the greedy rule of its thresholds, until the rule no longer changes; then the
    strategy is optimal, its thresholds those of eq. 4 on the optimal values. The number of
    rounds depends on the strategies, not on the discount or the utilities' magnitude (value
    iteration needs ~1/(1 - gamma) sweeps); warm-started from the previous best response.
    Returns thresholds (units of the scale), P_Y and the number of rounds."""
    if start is None:
        start = np.zeros((p.type_count, p.max_tokens + 1))
        start[:, -1] = 1.0
    p_y = start
    for rounds in range(1, POLICY_ROUNDS + 1):
        thresholds = strategy_thresholds(p, p_y, p_b)
        better = improved_policy(p, thresholds, p_y)
        if np.array_equal(better, p_y):
            return thresholds, p_y, rounds
        p_y = better
    return strategy_thresholds(p, p_y, p_b), p_y, POLICY_ROUNDS   # judged by the verification


def lp_best_response(p: TokenProblem, p_b: np.ndarray,
                     start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Each type's W(t) against P_B as the LP of its discounted MDP (states (t, u)), HiGHS, in
    units of the utility scale:

    min sum_t W(t)  s.t.  W(t) = sum_j h(u_j) V(t, j),
    V(t, j) >= V_N(t) = gamma (P_R W(t+1) + (1 - P_R) W(t))                  (eq. 3; t < t_max)
    V(t, j) >= P_B(t) (u_j + gamma W(t-1)) + (1 - P_B(t)) V_N(t)             (eq. 2; 0 < t < t_max)
    V(t_max, j) >= u_j + gamma W(t_max - 1)                                   (must take a boost)

    At the optimum V(t, j) = max of its options (eq. 1): the exact fixed point. One LP per type;
    returns the thresholds of eq. 4, P_Y of eq. 5 and the number of LPs solved."""
    gamma, p_r, T = p.discount, p.redistribution, p.max_tokens
    if gamma > LP_MAX_DISCOUNT:
        raise does_not_apply("discount", f"mean-field-lp takes a discount up to "
                                   f"{LP_MAX_DISCOUNT:g}: its LP holds values of size "
                                   f"1 / (1 - discount), which HiGHS solves to ~1e-7 "
                                   f"(mean-field takes any discount below 1)")
    W = np.zeros((p.type_count, T + 1))
    for k, u in enumerate(p.utilities):
        G = len(u.values)
        cols = (T + 1) * (G + 1)
        if cols > LP_MAX_COLUMNS:
            raise does_not_apply("options.method", f"mean-field-lp builds a dense LP with "
                                       f"{cols} columns for type {p.ids[k]!r}; at most "
                                       f"{LP_MAX_COLUMNS} (fewer tokens or utility points)")
        W[k] = _mdp_lp(p.grid.values[k, :G], u.probabilities, p_b, gamma, p_r, T)
    thresholds = thresholds_from_values(W, p_r, gamma)
    return thresholds, signal_probability(p.grid, thresholds), p.type_count


def _mdp_lp(values: np.ndarray, probs: np.ndarray, p_b: np.ndarray, gamma: float, p_r: float,
            T: int) -> np.ndarray:
    G = len(values)
    n_w = T + 1

    def v(t: int) -> np.ndarray:                       # columns of V(t, .)
        return n_w + t * G + np.arange(G)

    rows, lower = [], []

    def option(t: int, coef_w: dict[int, float], rhs: np.ndarray) -> None:
        block = np.zeros((G, n_w + n_w * G))
        block[np.arange(G), v(t)] = 1.0
        for s, c in coef_w.items():
            block[:, s] -= c
        rows.append(block)
        lower.append(rhs)

    for t in range(T + 1):
        if t < T:
            stay = {t + 1: gamma * p_r, t: gamma * (1 - p_r)}
            option(t, stay, np.zeros(G))
            if t > 0:
                signal = {s: (1 - p_b[t]) * c for s, c in stay.items()}
                signal[t - 1] = signal.get(t - 1, 0.0) + p_b[t] * gamma
                option(t, signal, p_b[t] * values)
        else:
            option(t, {t - 1: gamma}, values)
    mean = np.zeros((n_w, n_w + n_w * G))
    for t in range(n_w):
        mean[t, t] = 1.0
        mean[t, v(t)] = -probs
    A = np.vstack(rows + [mean])
    lo = np.concatenate(lower + [np.zeros(n_w)])
    hi = np.concatenate([np.full(len(lo) - n_w, INF), np.zeros(n_w)])
    cost = np.concatenate([np.ones(n_w), np.zeros(n_w * G)])
    report = solve_matrix(cost, A, lo, hi, np.full(A.shape[1], -INF), np.full(A.shape[1], INF),
                          maximize=False)
    if report.status != "optimal":
        raise SolverError(f"best-response LP: {report.status}")
    return report.x[:n_w]


@dataclass
class Outcome:
    """Where the outer loop stopped: the strategy played, its stationary f, P_B of eq. 8 on
    them, the cutoff the last best response answered, whether a fixed point (or a closed
    bracket) was reached, and how many (type, tokens) states mix at the threshold value."""

    p_y: np.ndarray
    f: np.ndarray
    p_b: np.ndarray
    answered: float
    reached: bool
    mixed: int = 0


@dataclass
class End:
    """A best response at one end of the bracket: the cutoff it answered and its P_Y."""

    c: float
    p_y: np.ndarray


class Bracket:
    """[lo, hi] on the cutoff: eq. 8 asks for a higher cutoff at lo (the "below" end) and a
    lower one at hi ("above"), with the best responses met there; the widths so far; and the
    weights of the Illinois variant of false position (``crossing``)."""

    def __init__(self, top: float):
        self.lo, self.hi = 0.0, top
        self.ends: dict[str, End] = {}
        self.weight = {"below": 1.0, "above": 1.0}
        self.last: str | None = None
        self.widths = [top]

    def move(self, side: str, end: End) -> None:
        """Move the ``side`` end to ``end``; the other end's weight halves when it is kept
        twice in a row (Illinois), so that false position moves both ends."""
        if side == "below":
            self.lo = end.c
        else:
            self.hi = end.c
        self.ends[side] = end
        self.weight[side] = 1.0
        if self.last == side:
            self.weight["above" if side == "below" else "below"] /= 2
        self.last = side
        self.widths.append(self.hi - self.lo)

    def halved(self, steps: int) -> bool:
        """Whether the bracket is at most half as wide as ``steps`` evaluations ago."""
        return len(self.widths) <= steps or self.widths[-1] <= self.widths[-1 - steps] / 2

    def inside(self, c: float | None) -> bool:
        return c is not None and self.lo < c < self.hi

    def crossing(self, p: TokenProblem) -> tuple[float | None, float]:
        """Where the best response flips, by (Illinois) false position, and how far from the
        flip the ends still are. For each state whose P_Y differs between the ends: the
        utility value u its threshold meets first, and the cutoff where the line through
        (lo, u_thr(lo) - u) and (hi, u_thr(hi) - u), weighted, crosses zero; the smallest such
        cutoff, and the largest |u_thr - u| at either end (units of the scale). Thresholds are
        those of each end's own strategy (exact, whatever the best response's method); they
        are continuous in the cutoff."""
        if len(self.ends) < 2:
            return None, np.inf
        below, above = self.ends["below"], self.ends["above"]
        k, t = np.nonzero(below.p_y[:, 1:-1] != above.p_y[:, 1:-1])
        t = t + 1
        a = strategy_thresholds(p, below.p_y, step_boosts(below.c, p.max_tokens))[k, t]
        b = strategy_thresholds(p, above.p_y, step_boosts(above.c, p.max_tokens))[k, t]
        u = first_values_met(p, k, a, b)
        if not k.size or np.isnan(u).any():
            return None, np.inf
        g_lo, g_hi = self.weight["below"] * (a - u), self.weight["above"] * (b - u)
        with np.errstate(divide="ignore", invalid="ignore"):
            guesses = self.lo + (self.hi - self.lo) * g_lo / (g_lo - g_hi)
        apart = float(np.maximum(np.abs(a - u), np.abs(b - u)).max())
        return float(np.nanmin(guesses)) if np.isfinite(guesses).any() else None, apart


def first_values_met(p: TokenProblem, k: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each state (type k, threshold moving from a to b), the first utility value of type
    k (with positive probability) it meets: signalling iff u > threshold changes at u in
    (min, max], widened by TIE (policy iteration keeps its action within TIE of the
    threshold); NaN where there is none."""
    values = p.grid.values[k]
    met = ((p.grid.probabilities[k] > 0) & (values > np.minimum(a, b)[:, None] - TIE)
           & (values <= np.maximum(a, b)[:, None] + TIE))
    first = np.where(b > a, np.where(met, values, np.inf).min(axis=1, initial=np.inf),
                     np.where(met, values, -np.inf).max(axis=1, initial=-np.inf))
    return np.where(met.any(axis=1), first, np.nan)


def next_cutoff(p: TokenProblem, bracket: Bracket, answer: float) -> float | None:
    """Algorithm 1's step (the cutoff eq. 8 answered) while it lands inside the bracket and
    the bracket keeps halving; else where the best response flips (false position); else the
    midpoint. None when the bracket has closed on a flip: its ends' thresholds are within FLIP
    of the utility value where the best response flips (within a tenth of the tolerance when
    that is smaller, but never below 2 TIE, as precisely as a best response can place it)."""
    if bracket.inside(answer) and bracket.halved(2):
        return answer
    guess, apart = bracket.crossing(p)
    if apart <= max(2 * TIE, min(FLIP, p.tolerance / 10)):
        return None
    if bracket.inside(guess) and bracket.halved(3):
        return guess
    return (bracket.lo + bracket.hi) / 2


def outer_loop(p: TokenProblem, best_response: BestResponse) -> tuple[Outcome, int, int]:
    """The search on the cutoff described in the module docstring; returns the outcome, the
    number of best responses (outer iterations) and the units of work they took."""
    top = float(max(p.max_tokens - 1, 0))
    resolution = RESOLUTION * max(1.0, top)
    bracket = Bracket(top)
    c = min(max(p.initial_tokens - 1.0, 0.0), top)
    p_y, work = None, 0
    for iteration in range(1, p.max_iterations + 1):
        _, p_y, done = best_response(p, step_boosts(c, p.max_tokens), p_y)
        work += done
        f = pinned_distribution(p, p_y)
        p_b = boost_probability(signalling_mass(p.fractions, f, p_y), p.agents, p.boosts)
        answered, answer = c, cutoff(p_b)
        if abs(answer - c) <= resolution:
            return Outcome(p_y, f, p_b, c, reached=True), iteration, work
        bracket.move("below" if answer > c else "above", End(c, p_y))
        c = next_cutoff(p, bracket, answer) if bracket.hi - bracket.lo > resolution else None
        if c is None and len(bracket.ends) == 2:
            below, above = bracket.ends["below"].p_y, bracket.ends["above"].p_y
            return mixed_strategy(p, below, above, (bracket.lo + bracket.hi) / 2), iteration, work
        if c is None:                          # the end not yet answered (0 or t_max - 1)
            c = bracket.hi if "below" in bracket.ends else bracket.lo
    return Outcome(p_y, f, p_b, answered, reached=False), p.max_iterations, work


def mixed_strategy(p: TokenProblem, below: np.ndarray, above: np.ndarray, c: float) -> Outcome:
    """Agents mix between the best responses just below and just above the jump at cutoff c
    (they differ only where a threshold sits on a utility value): P_Y = below + lambda (above -
    below), lambda the root that makes the stationary distribution under the step P_B of
    cutoff c hold ``initial_tokens`` per agent (the mean is below it at lambda = 0, where eq. 8
    would ask for a higher cutoff, and above it at lambda = 1)."""
    def mixture(lam: float) -> np.ndarray:
        return below + lam * (above - below)

    lam = increasing_root(
        lambda lam: mean_tokens(p, stationary_under(p, mixture(lam), c)) - p.initial_tokens,
        0.0, 1.0)
    p_y = mixture(lam)
    f = stationary_under(p, p_y, c)
    p_b = boost_probability(signalling_mass(p.fractions, f, p_y), p.agents, p.boosts)
    mixed = int(np.count_nonzero(np.abs(above - below)[:, 1:-1] > 0))
    return Outcome(p_y, f, p_b, c, reached=True, mixed=mixed)


def algorithm1(p: TokenProblem, best_response: BestResponse, name: str,
               work_unit: str) -> Solution:
    """Algorithm 1 (see the module docstring), then the verification that decides
    ``converged``; the thresholds reported are eq. 4 on the values of the strategy played."""
    out, iterations, work = outer_loop(p, best_response)
    own = strategy_thresholds(p, out.p_y, out.p_b)
    gain, _ = deviation_gain(p, out.p_y, out.p_b, own)
    mismatch = description_mismatch(p.grid, own, out.p_y, p.tolerance)
    residual = float(np.abs(out.p_b - step_boosts(out.answered, p.max_tokens))[1:-1].max(
        initial=0.0))
    converged = (out.reached and gain <= p.tolerance and residual <= p.tolerance
                 and mismatch.excess <= PROBABILITY_SLACK)
    supply = mean_tokens(p, out.f)
    supplied = abs(supply - p.initial_tokens) <= supply_slack(p)
    thresholds = own * p.scale
    solution = Solution(
        p.allocation(thresholds, out.f, out.p_y),
        "iteration_limit" if not converged else "feasible" if supplied else "infeasible",
        objective=boost_utility(p, out.p_y, out.f, out.p_b),
        solver={"name": name, "iterations": iterations, work_unit: work},
    )
    solution.metrics.update({"iterations": iterations, "converged": converged,
                             "residual": residual, "strategy_gap": gain * p.scale,
                             "mixed_states": out.mixed, "boost_probability": out.p_b})
    if not converged:
        why = ("the search on P_B's cutoff is still open" if not out.reached
               else f"a one-step deviation gains {gain:.3g} x the utility scale"
               if gain > p.tolerance
               else f"P_B still moves by {residual:.3g}" if residual > p.tolerance
               else f"type {p.ids[mismatch.type]}'s thresholds do not describe its strategy "
                    f"at t = {mismatch.tokens}")
        solution.solver["message"] = (f"Algorithm 1 did not converge in {iterations} iterations "
                                      f"({why}; tolerance {p.tolerance:g})")
    elif not supplied:
        solution.solver["message"] = missed_supply(p, supply)
    return solution


def missed_supply(p: TokenProblem, supply: float) -> str:
    """Why an equilibrium holds ``supply`` tokens per agent rather than ``initial_tokens``."""
    why = (f"agents holding {p.initial_tokens} on average would not claim that many boosts "
           f"(fewer boosts, or more initial_tokens)" if supply > p.initial_tokens else
           f"the tokens pile up at t_max = {p.max_tokens} (a larger max_tokens, or fewer "
           f"initial_tokens)")
    return (f"the equilibrium found holds {supply:.4g} tokens per agent, not initial_tokens = "
            f"{p.initial_tokens}: no cutoff of P_B brings its best responses' stationary mean "
            f"there; every stationary state spends n/m = {p.boosts / p.agents:.3g} tokens per "
            f"agent and round, and {why}")


def mean_field(p: TokenProblem) -> Solution:
    """Algorithm 1 with policy iteration for the best responses (default)."""
    return algorithm1(p, policy_iteration, "Algorithm 1 (policy iteration)", "policy_rounds")


def mean_field_lp(p: TokenProblem) -> Solution:
    """Algorithm 1 with each best response solved exactly as an LP (HiGHS); small instances."""
    return algorithm1(p, lp_best_response, "Algorithm 1 (MDP linear programs, HiGHS)", "lps")

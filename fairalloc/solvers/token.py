"""Token methods: Algorithm 1 of the token paper with two best responses.

``mean-field`` (default) finds each type's best response to P_B by value iteration on eq. 1-4,
``mean-field-lp`` by the linear program of the discounted MDP (HiGHS). Both run the same outer
loop (Algorithm 1): best response -> thresholds (eq. 4) -> P_Y (eq. 5) -> stationary token
distribution (eq. 6-7) -> P_B (eq. 8), until P_B moves less than ``tolerance`` or
``max_iterations`` is reached. A run that stops at the cap is labelled ``iteration_limit``: no
quiet fall-back to random signalling (the paper's choice, section 4.4).

Token supply. The chain of eq. 6 spends n/m tokens per agent and round in *every* stationary
distribution (flow balance: sum f s = P_R sum f (1 - s) gives sum f s = n/m), so eq. 8 applied to
a stationary f hands back whatever step-shaped P_B the chain was built with: solving f directly
and re-applying eq. 8 is a fixed point from the first step on, anywhere along a one-parameter
family, and says nothing about how many tokens circulate. The paper's inner loop pins that
parameter implicitly, by iterating the chain from f(t_ini) = 1 (tokens are conserved while the
boosts are fully used). Here the same is explicit: for the current P_Y, the inner step finds the
step-shaped P_B (1 above a cutoff c, 0 below, linear in between) whose stationary distribution
holds ``initial_tokens`` tokens per agent on average, by bisection on c; eq. 8 then gives P_B.
If no cutoff reaches that mean (too few tokens for agents to ever fill the boosts, or so many
that agents pile up at t_max), the nearest end is taken and the mean tokens differ.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from fairalloc.errors import SolverError, SpecError, Violation
from fairalloc.models.token import (
    Chain,
    TokenProblem,
    UtilityGrid,
    boost_probability,
    boost_utility,
    signal_probability,
    signalling_mass,
    spend_probability,
    stationary_distribution,
    thresholds_from_values,
)
from fairalloc.result import Solution
from fairalloc.solvers.highs import INF, solve_matrix

VALUE_TOL = 1e-10        # value iteration stops this close (x the utility scale) to the fixed point
MAX_SWEEPS = 1_000_000   # Bellman sweeps per best response: a guard against a runaway loop
BISECTIONS = 60          # on the cutoff c in [0, t_max - 1]
LP_MAX_COLUMNS = 2_000   # (t_max + 1)(G + 1) columns per type: the LP's matrix is dense

BestResponse = Callable[[TokenProblem, UtilityGrid, np.ndarray, np.ndarray | None],
                        tuple[np.ndarray, int]]


def step_boosts(c: float, max_tokens: int) -> np.ndarray:
    """A step-shaped signalling strength: P_B(t) = clip(t - c, 0, 1) for 0 < t < t_max, 0 at
    t = 0 and 1 at t_max (the shape eq. 8 produces when ranking by tokens)."""
    t = np.arange(max_tokens + 1, dtype=float)
    p_b = np.clip(t - c, 0.0, 1.0)
    p_b[0], p_b[-1] = 0.0, 1.0
    return p_b


def mean_tokens(p: TokenProblem, f: np.ndarray) -> float:
    """The population's mean tokens, sum over types of fraction x sum_t t f_type(t)."""
    return float(p.fractions @ (f @ np.arange(p.max_tokens + 1)))


def pinned_distribution(p: TokenProblem, p_y: np.ndarray) -> np.ndarray:
    """Stationary token distributions (eq. 6-7) under the step P_B whose population mean equals
    ``initial_tokens`` (bisection on the cutoff; the mean grows with it)."""
    def distribution(c: float) -> np.ndarray:
        s = spend_probability(p_y, step_boosts(c, p.max_tokens))
        return stationary_distribution(Chain.of(s, p.redistribution))

    lo, hi = 0.0, float(max(p.max_tokens - 1, 0))
    target = p.initial_tokens
    if mean_tokens(p, distribution(lo)) >= target:
        return distribution(lo)
    if mean_tokens(p, distribution(hi)) <= target:
        return distribution(hi)
    for _ in range(BISECTIONS):
        mid = (lo + hi) / 2
        if mean_tokens(p, distribution(mid)) < target:
            lo = mid
        else:
            hi = mid
    return distribution((lo + hi) / 2)


def bellman(p: TokenProblem, grid: UtilityGrid, p_b: np.ndarray, W: np.ndarray) -> np.ndarray:
    """One value-iteration sweep of eq. 1-3 for every type and token count at once.

    With V_N(t) = gamma (P_R W(t+1) + (1 - P_R) W(t)) (eq. 3) and eq. 2,
    V_Y(t, u) - V_N(t) = P_B(t) (u - u_thr(t)) with u_thr from eq. 4, so
    W(t) = E_u max(V_Y, V_N) = V_N(t) + P_B(t) E[(u - u_thr(t))^+]: signalling iff
    u > u_thr(t) is optimal, a threshold rule (where P_B(t) = 0 the agent is indifferent).
    Boundaries: W(0) = V_N(0) (no tokens, no signal); W(t_max) = E[u] + gamma W(t_max - 1)
    (boosted, spends). E[(u - c)^+] is one binary search in the sorted grid with suffix sums.
    """
    gamma, p_r = p.discount, p.redistribution
    cont = gamma * (p_r * W[:, 1:] + (1 - p_r) * W[:, :-1])       # V_N(t), t < t_max
    new = np.empty_like(W)
    new[:, 0] = cont[:, 0]
    thr = cont[:, 1:] - gamma * W[:, :-2]                         # eq. 4, 0 < t < t_max
    new[:, 1:-1] = cont[:, 1:] + p_b[1:-1] * grid.expected_excess(thr)
    new[:, -1] = grid.means + gamma * W[:, -2]
    return new


def value_iteration(p: TokenProblem, grid: UtilityGrid, p_b: np.ndarray,
                    start: np.ndarray | None) -> tuple[np.ndarray, int]:
    """Each type's W(t) against P_B by value iteration, warm-started from ``start``.

    Stopping rule on the span of a sweep's change d = W_{n+1} - W_n (Puterman, section 6.6):
    W* lies between W_{n+1} + gamma/(1-gamma) min d and W_{n+1} + gamma/(1-gamma) max d, so once
    gamma/(1-gamma) sp(d) <= VALUE_TOL x the utility scale, the midpoint is that close to W* in
    every entry, and so are the thresholds (differences of W, eq. 4). The span shrinks much
    faster than the sup norm (375 sweeps instead of 2,500 from zero at gamma = 0.99, 12 types,
    t_max = 100). Returns W and the number of sweeps."""
    gamma = p.discount
    scale = max(float(np.abs(grid.values).max()), 1e-300)
    reach = gamma / (1 - gamma)
    W = np.zeros((p.k, p.max_tokens + 1)) if start is None else start
    for sweep in range(1, MAX_SWEEPS + 1):
        new = bellman(p, grid, p_b, W)
        d = new - W
        low, high = d.min(axis=1, keepdims=True), d.max(axis=1, keepdims=True)
        if reach * float((high - low).max()) <= VALUE_TOL * scale:
            return new + reach * (low + high) / 2, sweep
        W = new
    raise SolverError(f"value iteration did not settle in {MAX_SWEEPS} sweeps")


def lp_values(p: TokenProblem, grid: UtilityGrid, p_b: np.ndarray,
              start: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """Each type's W(t) against P_B as the LP of its discounted MDP (states (t, u)), HiGHS:

    min sum_t W(t)  s.t.  W(t) = sum_j h(u_j) V(t, j),
    V(t, j) >= V_N(t) = gamma (P_R W(t+1) + (1 - P_R) W(t))                  (eq. 3; t < t_max)
    V(t, j) >= P_B(t) (u_j + gamma W(t-1)) + (1 - P_B(t)) V_N(t)             (eq. 2; 0 < t < t_max)
    V(t_max, j) >= u_j + gamma W(t_max - 1)                                   (must take a boost)

    At the optimum V(t, j) = max of its options (eq. 1): the exact fixed point value iteration
    approaches. One LP per type; returns W and the number of LPs solved."""
    gamma, p_r, T = p.discount, p.redistribution, p.max_tokens
    W = np.zeros((p.k, T + 1))
    for k, u in enumerate(p.utilities):
        G = len(u.values)
        cols = (T + 1) * (G + 1)
        if cols > LP_MAX_COLUMNS:
            raise SpecError([Violation("options.method", f"mean-field-lp builds a dense LP with "
                                       f"{cols} columns for type {p.ids[k]!r}; at most "
                                       f"{LP_MAX_COLUMNS} (fewer tokens or utility points)")])
        W[k] = _mdp_lp(u.values, u.probabilities, p_b, gamma, p_r, T)
    return W, p.k


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


def algorithm1(p: TokenProblem, best_response: BestResponse, name: str) -> Solution:
    """Algorithm 1: best response to P_B -> P_Y -> f -> P_B, until P_B moves less than the
    tolerance (sup norm), at most ``max_iterations`` times.

    Damping. With a discrete h(u), P_Y jumps when a threshold crosses a utility value, and an
    equilibrium may need the agents at that value to signal only some of the time. The plain
    loop then cycles between the two sides for ever (it does on the KMeans-vs-PageRank spec).
    So the strategy played is updated by a step alpha towards the best response,
    P_Y <- P_Y + alpha (P_Y_best - P_Y), with alpha = 1 (the paper's loop) until the residual
    stops falling, then halved each time it does not fall. A small step alone must not pass for
    convergence, so the loop also needs the strategy played to be a best response within the
    tolerance (``strategy_gap``). The result reports alpha (``damping``); the ``equilibrium``
    check then judges the strategy played on its own."""
    grid = p.grid
    p_b = step_boosts(p.initial_tokens - 1, p.max_tokens)
    W, p_y = None, None
    alpha, residual, sweeps, iterations = 1.0, np.inf, 0, 0
    while iterations < p.max_iterations:
        iterations += 1
        W, work = best_response(p, grid, p_b, W)
        sweeps += work
        thresholds = thresholds_from_values(W, p.redistribution, p.discount)
        best = signal_probability(grid, thresholds)
        p_y = best if p_y is None else p_y + alpha * (best - p_y)
        f = pinned_distribution(p, p_y)
        new = boost_probability(signalling_mass(p.fractions, f, p_y), p.agents, p.boosts)
        previous, residual = residual, float(np.abs(new - p_b).max())
        gap = strategy_gap(grid, thresholds, p_y, p_b)
        p_b = new
        if residual < p.tolerance and gap < p.tolerance:
            break
        if residual >= previous:
            alpha /= 2
    converged = residual < p.tolerance and gap < p.tolerance
    status = "feasible" if converged else "iteration_limit"
    solution = Solution(
        p.allocation(thresholds, f, p_y), status,
        objective=boost_utility(p, p_y, f, p_b),
        solver={"name": name, "sweeps" if best_response is value_iteration else "lps": sweeps},
    )
    solution.metrics.update({"iterations": iterations, "converged": converged,
                             "residual": residual, "strategy_gap": gap, "damping": alpha,
                             "boost_probability": p_b})
    if not converged:
        solution.solver["message"] = (f"Algorithm 1 did not converge in {iterations} iterations "
                                      f"(P_B still moves by {residual:.3g}, strategy gap "
                                      f"{gap:.3g}; tolerance {p.tolerance:g})")
    if p.simulation is not None:
        from fairalloc.simulation import simulate

        start = time.perf_counter()
        solution.metrics["simulation"] = simulate(p, thresholds)
        solution.solver["simulation_s"] = time.perf_counter() - start
    return solution


def strategy_gap(grid: UtilityGrid, thresholds: np.ndarray, p_y: np.ndarray,
                 p_b: np.ndarray) -> float:
    """How much a round's expected value the strategy played (signal on the top P_Y(t) of the
    utility mass) gives up against the best response's thresholds, at the worst type and
    0 < t < t_max: P_B(t) (E[(u - u_thr)^+] - E[sigma(u) (u - u_thr)]) (eq. 2 minus eq. 3)."""
    thr, q = thresholds[:, 1:-1], p_y[:, 1:-1]
    played = grid.top_mass_utility(q) - thr * q
    loss = p_b[1:-1] * (grid.expected_excess(thr) - played)
    return float(loss.max(initial=0.0))


def mean_field(p: TokenProblem, **_) -> Solution:
    """Algorithm 1 with value iteration for the best responses (default)."""
    return algorithm1(p, value_iteration, "Algorithm 1 (value iteration)")


def mean_field_lp(p: TokenProblem, **_) -> Solution:
    """Algorithm 1 with each best response solved exactly as an LP (HiGHS); small instances."""
    return algorithm1(p, lp_values, "Algorithm 1 (MDP linear programs, HiGHS)")

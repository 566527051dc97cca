"""Token checks, each from its definition on the allocation at hand (section 4 of the token paper).

The allocation gives, per type, the thresholds u_thr(t), the token distribution f(t), the signal
probabilities P_Y(t) and the mean tokens. A threshold strategy whose agents at u = u_thr signal
only some of the time (what a discrete h(u) can need) is described completely by P_Y(t): signal
on the highest utilities of total probability P_Y(t). The checks judge that strategy; they never
call the solver.
"""

from __future__ import annotations

import numpy as np

from fairalloc.models.token import (
    Chain,
    TokenProblem,
    boost_probability,
    signalling_mass,
    spend_probability,
    strategy_values,
    thresholds_from_values,
)
from fairalloc.result import Allocation, Finding

STATIONARY_TOL = 1e-9   # |f P - f| and |sum f - 1|: f is solved, not sampled
CHUNK_CELLS = 4_000_000  # (type, tokens, utility) states per block of the deviation check
PROBABILITY_SLACK = 1e-9


def _columns(allocation: Allocation) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(np.asarray(allocation.column(key), dtype=float)
                 for key in ("thresholds", "token_distribution", "signal_probability"))


def _boosts(p: TokenProblem, f: np.ndarray, p_y: np.ndarray) -> np.ndarray:
    return boost_probability(signalling_mass(p.fractions, f, p_y), p.agents, p.boosts)


def equilibrium(p: TokenProblem, allocation: Allocation, claims: dict | None = None,
                **_) -> Finding:
    """Mean-field equilibrium (section 4.4), within ``tolerance``:

    1. P_B reproduces itself: eq. 8 on the reported f and P_Y gives the P_B the method claims
       (when it claims one: ``boost_probability``);
    2. no type gains more than the tolerance by a one-step deviation at any state (t, u): with
       W the value of the reported strategy against that P_B (eq. 1-3, strategy fixed), the
       better of signalling (eq. 2) and not (eq. 3) beats the strategy's action by at most the
       tolerance; by the one-shot deviation principle the strategy is then within
       tolerance / (1 - gamma) of a best response;
    3. the reported thresholds describe the reported strategy: signalling on the top P_Y(t)
       of the utility mass is signalling iff u > u_thr(t), up to the tolerance in utility,
       Pr(u > u_thr + tol) <= P_Y(t) <= Pr(u > u_thr - tol). (With a discrete h(u) any
       threshold between the same two utility values is the same strategy, so the thresholds
       are judged by the strategy they describe, not by their exact value.)
    """
    thresholds, f, p_y = _columns(allocation)
    p_b = _boosts(p, f, p_y)
    tol = p.tolerance
    claimed = None if not claims else claims.get("boost_probability")
    if claimed is not None:
        gap = np.abs(np.asarray(claimed, dtype=float) - p_b)
        if gap.max() > tol:
            t = int(np.argmax(gap))
            return Finding("equilibrium", False,
                           f"P_B does not reproduce itself: eq. 8 on the reported strategies "
                           f"gives P_B({t}) = {p_b[t]:.6g}, the method reports {claimed[t]:.6g}",
                           {"tokens": t, "eq8": p_b[t], "reported": claimed[t]})
    W = strategy_values(p, p_y, p_b)
    own = thresholds_from_values(W, p.redistribution, p.discount)
    gain, where = deviation_gain(p, p_y, p_b, own)
    if gain > tol:
        k, t, j = where
        u = float(p.grid.values[k, j])
        action = "signalling" if u > own[k, t] else "not signalling"
        return Finding("equilibrium", False,
                       f"type {p.ids[k]} gains {gain:.3g} > tolerance {tol:g} by {action} at "
                       f"t = {t}, u = {u:.6g} (its threshold there is {own[k, t]:.6g})",
                       {"type": p.ids[k], "tokens": t, "utility": u, "gain": gain,
                        "threshold": own[k, t]})
    thr, q = thresholds[:, 1:-1], p_y[:, 1:-1]
    low, high = p.grid.prob_above(thr + tol), p.grid.prob_above(thr - tol)
    off = np.maximum(low - q, q - high)
    off[np.isnan(thr)] = np.inf                              # a missing threshold
    if off.size and off.max() > PROBABILITY_SLACK:
        k, t = np.unravel_index(int(np.argmax(off)), off.shape)
        return Finding("equilibrium", False,
                       f"type {p.ids[k]}'s threshold {thr[k, t]:.6g} at t = {t + 1} does not "
                       f"describe its signal probability {q[k, t]:.6g} (signalling iff u > "
                       f"threshold gives {low[k, t]:.6g}..{high[k, t]:.6g})",
                       {"type": p.ids[k], "tokens": int(t + 1), "threshold": thr[k, t],
                        "signal_probability": q[k, t], "implied": [low[k, t], high[k, t]]})
    return Finding("equilibrium", True,
                   f"P_B reproduces itself; the largest one-step deviation gain is {gain:.2g} "
                   f"(tolerance {tol:g})")


def deviation_gain(p: TokenProblem, p_y: np.ndarray, p_b: np.ndarray,
                   own: np.ndarray) -> tuple[float, tuple[int, int, int]]:
    """The largest one-step deviation gain over types k, token counts 0 < t < t_max and utility
    values u_j, and where: V_Y - V_N = P_B(t) (u - u_thr(t)) (eq. 2 minus eq. 3, u_thr of the
    strategy's own values, eq. 4); a strategy signalling with probability sigma at u loses
    (1 - sigma) (V_Y - V_N)^+ + sigma (V_N - V_Y)^+ against the better action."""
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


def stationarity(p: TokenProblem, allocation: Allocation, **_) -> Finding:
    """f is a distribution and stationary under the token chain (eq. 6-7 with the boundary
    rows) built from the reported P_Y and P_B of eq. 8: |f P - f| <= 1e-9 for every type."""
    _, f, p_y = _columns(allocation)
    if np.any(f < -PROBABILITY_SLACK) or np.any(np.abs(f.sum(axis=1) - 1) > STATIONARY_TOL):
        k = int(np.argmax(np.abs(f.sum(axis=1) - 1) + (f < 0).any(axis=1)))
        return Finding("stationarity", False,
                       f"type {p.ids[k]}'s token distribution is not a distribution "
                       f"(sum {f[k].sum():.12g}, min {f[k].min():.3g})",
                       {"type": p.ids[k], "sum": f[k].sum(), "min": f[k].min()})
    p_b = _boosts(p, f, p_y)
    moved = np.abs(Chain.of(spend_probability(p_y, p_b), p.redistribution).step(f) - f)
    if moved.max() > STATIONARY_TOL:
        k, t = np.unravel_index(int(np.argmax(moved)), moved.shape)
        return Finding("stationarity", False,
                       f"one round of the chain moves type {p.ids[k]}'s f({t}) by "
                       f"{moved[k, t]:.3g}", {"type": p.ids[k], "tokens": int(t),
                                              "change": moved[k, t]})
    mean = float(p.fractions @ (f @ np.arange(p.max_tokens + 1)))
    return Finding("stationarity", True,
                   f"f P = f within {moved.max():.1g} for every type; mean tokens {mean:.4g} "
                   f"(initial {p.initial_tokens})")


def monotone_thresholds(p: TokenProblem, allocation: Allocation, **_) -> Finding:
    """Thresholds do not rise with tokens (the paper's claim in section 3.3, Fig. 2; checked,
    not assumed) over 0 < t < t_max."""
    thresholds, _, _ = _columns(allocation)
    inner = thresholds[:, 1:-1]
    rise = np.diff(inner, axis=1) if inner.shape[1] > 1 else np.zeros((p.k, 0))
    if rise.size and np.nanmax(rise) > PROBABILITY_SLACK:
        k, t = np.unravel_index(int(np.nanargmax(rise)), rise.shape)
        return Finding("monotone_thresholds", False,
                       f"type {p.ids[k]}'s threshold rises from {inner[k, t]:.6g} at t = "
                       f"{t + 1} to {inner[k, t + 1]:.6g} at t = {t + 2}",
                       {"type": p.ids[k], "tokens": int(t + 1), "rise": rise[k, t]})
    return Finding("monotone_thresholds", True, "every type's threshold falls (or stays) as "
                   "its tokens rise")

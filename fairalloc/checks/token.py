"""Token checks, each from its definition on the allocation at hand (section 4 of the token paper).

The allocation gives, per type, the thresholds u_thr(t), the token distribution f(t), the signal
probabilities P_Y(t) and the mean tokens. A threshold strategy whose agents at u = u_thr signal
only some of the time (what a discrete h(u) can need) is described completely by P_Y(t): signal
on the highest utilities of total probability P_Y(t). The checks judge that strategy; they never
call the solver, and each visits every type, token count and utility value: a verdict is
``holds`` or ``fails`` (``unchecked`` only where the allocation leaves nothing to judge, e.g. a
chain that a signal probability outside [0, 1] does not define). Utilities and thresholds are
compared in units of the utility scale (``TokenProblem.grid``), so ``tolerance`` is a fraction
of the largest |u|.
"""

from __future__ import annotations

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.models.token import (
    PROBABILITY_SLACK,
    STATIONARY_TOL,
    THRESHOLD_SLACK,
    Chain,
    TokenProblem,
    boost_probability,
    description_mismatch,
    deviation_gain,
    mean_tokens,
    signalling_mass,
    spend_probability,
    strategy_thresholds,
    supply_slack,
)
from fairalloc.result import Finding


def _columns(allocation: Allocation) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(np.asarray(allocation.column(key), dtype=float)
                 for key in ("thresholds", "token_distribution", "signal_probability"))


def _boosts(p: TokenProblem, f: np.ndarray, p_y: np.ndarray) -> np.ndarray:
    return boost_probability(signalling_mass(p.fractions, f, p_y), p.agents, p.boosts)


def first_outside_unit(values: np.ndarray) -> tuple[int, int] | None:
    """(type, tokens) of the first entry outside [0, 1] (beyond ``PROBABILITY_SLACK``), or None."""
    outside = (values < -PROBABILITY_SLACK) | (values > 1 + PROBABILITY_SLACK)
    if not outside.any():
        return None
    k, t = np.unravel_index(int(np.argmax(outside)), outside.shape)
    return int(k), int(t)


def not_a_distribution(p: TokenProblem, f: np.ndarray, check: str) -> Finding | None:
    """A failure when some type's f has an entry outside [0, 1] or does not sum to 1 (entries
    are bounded first, so that the sum cannot overflow), else None."""
    if (at := first_outside_unit(f)) is not None:
        k, t = at
        return Finding(check, False, f"type {p.ids[k]}'s token distribution is not a "
                       f"distribution: f({t}) = {f[k, t]:.6g}",
                       {"type": p.ids[k], "tokens": t, "f": f[k, t]})
    sums = f.sum(axis=1)
    if np.any(np.abs(sums - 1) > STATIONARY_TOL):
        k = int(np.argmax(np.abs(sums - 1)))
        return Finding(check, False, f"type {p.ids[k]}'s token distribution is not a "
                       f"distribution (sum {sums[k]:.12g})", {"type": p.ids[k], "sum": sums[k]})
    return None


def not_a_strategy(p: TokenProblem, p_y: np.ndarray, check: str) -> Finding | None:
    """A failure when some P_Y(t) is not a probability, or breaks a boundary rule (P_Y(0) = 0:
    no tokens, no signal; P_Y(t_max) = 1: must take a boost), else None."""
    if (at := first_outside_unit(p_y)) is not None:
        k, t = at
        return Finding(check, False, f"type {p.ids[k]}'s signal probability at t = {t} is "
                       f"{p_y[k, t]:.6g}, not a probability",
                       {"type": p.ids[k], "tokens": t, "signal_probability": p_y[k, t]})
    for t, required in ((0, 0.0), (p.max_tokens, 1.0)):
        off = np.abs(p_y[:, t] - required)
        if off.max() > PROBABILITY_SLACK:
            k = int(np.argmax(off))
            return Finding(check, False, f"type {p.ids[k]} signals with probability "
                           f"{p_y[k, t]:.6g} at t = {t}, where it must be {required:g}",
                           {"type": p.ids[k], "tokens": t, "signal_probability": p_y[k, t],
                            "required": required})
    return None


def missing_threshold(p: TokenProblem, thresholds: np.ndarray, check: str) -> Finding | None:
    """A failure when a threshold for 0 < t < t_max is missing (NaN), else None."""
    missing = np.isnan(thresholds[:, 1:-1])
    if missing.any():
        k, t = np.unravel_index(int(np.argmax(missing)), missing.shape)
        return Finding(check, False, f"type {p.ids[k]} has no threshold at t = {t + 1}",
                       {"type": p.ids[k], "tokens": int(t + 1)})
    return None


def not_well_formed(p: TokenProblem, thresholds: np.ndarray, f: np.ndarray, p_y: np.ndarray,
                    check: str) -> Finding | None:
    """A failure when the allocation is not a strategy and a distribution (``not_a_strategy``,
    ``not_a_distribution``, ``missing_threshold``), else None."""
    return (not_a_strategy(p, p_y, check) or not_a_distribution(p, f, check)
            or missing_threshold(p, thresholds, check))


def wrong_mean(p: TokenProblem, f: np.ndarray, mean: np.ndarray) -> Finding | None:
    """A failure when some type's mean_tokens is not sum_t t f(t) (to ``STATIONARY_TOL`` x
    t_max; f already a distribution), else None."""
    expected = f @ np.arange(p.max_tokens + 1)
    wrong = ~(np.abs(mean - expected) <= STATIONARY_TOL * max(1, p.max_tokens))  # NaN: wrong
    if not wrong.any():
        return None
    k = int(np.argmax(wrong))
    return Finding("feasibility", False, f"type {p.ids[k]}'s mean_tokens {mean[k]:.6g} is not "
                   f"the mean of its token distribution, {expected[k]:.6g}",
                   {"type": p.ids[k], "mean_tokens": mean[k], "mean": expected[k]})


def undescribed(p: TokenProblem, thresholds: np.ndarray, p_y: np.ndarray,
                check: str) -> Finding | None:
    """A failure when the thresholds do not describe the signal probabilities: signalling iff
    u > u_thr(t) up to ``tolerance`` in utility (``description_mismatch``), else None."""
    with np.errstate(over="ignore"):              # a threshold far beyond every utility
        unit = thresholds / p.scale
    off = description_mismatch(p.grid, unit, p_y, p.tolerance)
    if off.excess <= PROBABILITY_SLACK:
        return None
    k, t = off.type, off.tokens
    return Finding(check, False,
                   f"type {p.ids[k]}'s threshold {thresholds[k, t]:.6g} at t = {t} does not "
                   f"describe its signal probability {p_y[k, t]:.6g} (signalling iff u > "
                   f"threshold gives {off.low:.6g}..{off.high:.6g})",
                   {"type": p.ids[k], "tokens": t, "threshold": thresholds[k, t],
                    "signal_probability": p_y[k, t], "implied": [off.low, off.high]})


def feasibility(p: TokenProblem, allocation: Allocation, **_) -> Finding:
    """The allocation is one threshold strategy per type with its token distribution, on every
    type and token count (section 4; what any strategy profile must be, equilibrium or not):

    1. P_Y(t) in [0, 1] with the boundary rows P_Y(0) = 0 (no tokens, no signal) and
       P_Y(t_max) = 1 (must take a boost); f(t) in [0, 1] over 0..t_max, summing to 1; a
       threshold for every 0 < t < t_max;
    2. the thresholds describe the signal probabilities (signalling iff u > u_thr(t), eq. 5, up
       to ``tolerance`` x the utility scale; see ``equilibrium``, part 3). A threshold above
       every utility (never signal) or below every one (always) is a strategy too, so the
       thresholds are not held to the utility support;
    3. mean_tokens is sum_t t f(t) for every type.

    Neither the equilibrium (``equilibrium``), nor stationarity (``stationarity``), nor how
    many tokens circulate is part of it."""
    thresholds, f, p_y = _columns(allocation)
    broken = (not_well_formed(p, thresholds, f, p_y, "feasibility")
              or undescribed(p, thresholds, p_y, "feasibility")
              or wrong_mean(p, f, np.asarray(allocation.column("mean_tokens"), dtype=float)))
    if broken:
        return broken
    return Finding("feasibility", True,
                   f"every type's signal probabilities are a strategy its thresholds describe "
                   f"(P_Y(0) = 0, P_Y({p.max_tokens}) = 1), its token distribution a "
                   f"distribution over 0..{p.max_tokens} with the mean reported")


def equilibrium(p: TokenProblem, allocation: Allocation, claims: dict | None = None,
                **_) -> Finding:
    """Mean-field equilibrium (section 4.4), within ``tolerance``, on every type, token count
    and utility value:

    0. the allocation is a strategy and a distribution: P_Y(t) in [0, 1] with P_Y(0) = 0 and
       P_Y(t_max) = 1, f(t) in [0, 1] summing to 1, a threshold for every 0 < t < t_max;
    1. P_B reproduces itself: eq. 8 on the reported f and P_Y gives the P_B the method claims
       (when it claims one: ``boost_probability``);
    2. no type gains more than tolerance x the utility scale by a one-step deviation at any
       state (t, u): with W the value of the reported strategy against that P_B (eq. 1-3,
       strategy fixed), the better of signalling (eq. 2) and not (eq. 3) beats the strategy's
       action by at most that; by the one-shot deviation principle the strategy is then within
       it / (1 - gamma) of a best response;
    3. the reported thresholds describe the reported strategy: signalling on the top P_Y(t)
       of the utility mass is signalling iff u > u_thr(t), up to the tolerance in utility,
       Pr(u > u_thr + tol) <= P_Y(t) <= Pr(u > u_thr - tol). (With a discrete h(u) any
       threshold between the same two utility values is the same strategy, so the thresholds
       are judged by the strategy they describe, not by their exact value.)
    """
    thresholds, f, p_y = _columns(allocation)
    broken = not_well_formed(p, thresholds, f, p_y, "equilibrium")
    if broken:
        return broken
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
    own = strategy_thresholds(p, p_y, p_b)
    gain, (k, t, j) = deviation_gain(p, p_y, p_b, own)
    scale = p.scale
    if gain > tol:
        u = float(p.grid.values[k, j])
        action = "signalling" if u > own[k, t] else "not signalling"
        return Finding("equilibrium", False,
                       f"type {p.ids[k]} gains {gain * scale:.3g} > tolerance x utility scale "
                       f"{tol * scale:.3g} by {action} at t = {t}, u = {u * scale:.6g} (its "
                       f"threshold there is {own[k, t] * scale:.6g})",
                       {"type": p.ids[k], "tokens": t, "utility": u * scale,
                        "gain": gain * scale, "threshold": own[k, t] * scale})
    broken = undescribed(p, thresholds, p_y, "equilibrium")
    if broken:
        return broken
    return Finding("equilibrium", True,
                   f"P_B reproduces itself; the largest one-step deviation gain is "
                   f"{gain * scale:.2g} (tolerance x utility scale {tol * scale:.3g}), over "
                   f"every type, token count and utility value")


def stationarity(p: TokenProblem, allocation: Allocation, **_) -> Finding:
    """f is a distribution and stationary under the token chain (eq. 6-7 with the boundary
    rows) built from the reported P_Y and P_B of eq. 8: |f P - f| <= ``STATIONARY_TOL`` for
    every type."""
    _, f, p_y = _columns(allocation)
    broken = not_a_distribution(p, f, "stationarity")
    if broken:
        return broken
    if not_a_strategy(p, p_y, "stationarity"):
        return Finding("stationarity", "unchecked", "the chain of eq. 6 needs signal "
                       "probabilities in [0, 1] with P_Y(0) = 0 and P_Y(t_max) = 1 "
                       "(equilibrium reports where they are not)")
    p_b = _boosts(p, f, p_y)
    moved = np.abs(Chain.of(spend_probability(p_y, p_b), p.redistribution).step(f) - f)
    if moved.max() > STATIONARY_TOL:
        k, t = np.unravel_index(int(np.argmax(moved)), moved.shape)
        return Finding("stationarity", False,
                       f"one round of the chain moves type {p.ids[k]}'s f({t}) by "
                       f"{moved[k, t]:.3g}", {"type": p.ids[k], "tokens": int(t),
                                              "change": moved[k, t]})
    return Finding("stationarity", True,
                   f"f P = f within {moved.max():.1g} for every type; mean tokens "
                   f"{mean_tokens(p, f):.4g} (initial {p.initial_tokens})")


def token_supply(p: TokenProblem, allocation: Allocation, **_) -> Finding:
    """The tokens in circulation are the spec's: every agent starts with ``initial_tokens`` and
    the mechanism only passes spent tokens on, so the population's mean tokens under f is
    ``initial_tokens``, within tolerance x max(1, initial_tokens). A stationary f of another
    mean is an equilibrium of another token supply (with plentiful boosts, the only one
    Algorithm 1 finds; the notes)."""
    _, f, _ = _columns(allocation)
    if not_a_distribution(p, f, "token_supply"):
        return Finding("token_supply", "unchecked", "the token distribution is not a "
                       "distribution (stationarity reports where): it holds no mean")
    mean, slack = mean_tokens(p, f), supply_slack(p)
    if abs(mean - p.initial_tokens) > slack:
        per_type = dict(zip(p.ids, (f @ np.arange(p.max_tokens + 1)).tolist()))
        return Finding("token_supply", False,
                       f"the agents hold {mean:.4g} tokens on average, not initial_tokens = "
                       f"{p.initial_tokens} (allowed: ±{slack:.3g}): an equilibrium of another "
                       "token supply", {"mean_tokens": mean, "initial_tokens": p.initial_tokens,
                                        "by_type": per_type})
    return Finding("token_supply", True, f"the agents hold {mean:.6g} tokens on average: "
                   f"initial_tokens = {p.initial_tokens} (within ±{slack:.3g})")


def monotone_thresholds(p: TokenProblem, allocation: Allocation, **_) -> Finding:
    """Thresholds do not rise with tokens (the paper's claim in section 3.3, Fig. 2; checked,
    not assumed) over 0 < t < t_max, to ``THRESHOLD_SLACK`` of the utility scale."""
    thresholds, _, _ = _columns(allocation)
    missing = missing_threshold(p, thresholds, "monotone_thresholds")
    if missing:
        return Finding("monotone_thresholds", "unchecked", missing.detail, missing.witness)
    inner = thresholds[:, 1:-1]
    with np.errstate(over="ignore"):              # thresholds of a file may be any numbers
        rise = np.diff(inner, axis=1)
    if rise.size and rise.max() > THRESHOLD_SLACK * p.scale:
        k, t = np.unravel_index(int(np.argmax(rise)), rise.shape)
        return Finding("monotone_thresholds", False,
                       f"type {p.ids[k]}'s threshold rises from {inner[k, t]:.6g} at t = "
                       f"{t + 1} to {inner[k, t + 1]:.6g} at t = {t + 2}",
                       {"type": p.ids[k], "tokens": int(t + 1), "rise": rise[k, t]})
    return Finding("monotone_thresholds", True, "every type's threshold falls (or stays) as "
                   "its tokens rise")

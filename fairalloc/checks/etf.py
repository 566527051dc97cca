"""ETF checks, each from its definition on the slices at hand (section 3.3 of the ETF paper).

Weighted energy of app i: t_i P_i / w_i. Guarantees are whole slices (``models.etf.guarantee``).
"""

from __future__ import annotations

import numpy as np

from fairalloc.allocation import Allocation, agrees
from fairalloc.checks import no_mechanism, nothing_found, probe, probe_budget
from fairalloc.levels import fewest_reaching, highest_level
from fairalloc.models.etf import (
    ENERGY_FLOOR,
    ROUNDING_SLACK,
    TIE,
    EtfProblem,
    energy_key,
    guarantee,
)
from fairalloc.result import Finding

PROBE_LEAST = 2       # re-runs the strategy-proofness probe makes however large the spec
SHOWN = 8             # apps the probe's detail names one by one


def _slices(allocation: Allocation) -> np.ndarray:
    return np.asarray(allocation.column("time"), dtype=float)


def _handed_out(t: np.ndarray) -> float:
    """The slices handed out, sum t: exactly (in int64) where they are whole and not huge, as
    in floats 2^53 + 1 slices round to 2^53 and would pass for the largest quantum."""
    if np.abs(t).sum() < 2.0**62 and np.all(t == np.round(t)):
        return int(t.astype(np.int64).sum())
    return float(t.sum())


def below_guarantee(p: EtfProblem, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The apps below their guarantee (eq. 7, whole slices) and the guarantees."""
    g = guarantee(p)
    return np.flatnonzero(t < g), g


def feasibility(p: EtfProblem, allocation: Allocation, **_) -> Finding:
    """Whole, non-negative slices, within demands, adding up to at most the quantum, each app
    at least its guarantee (eq. 7: the spec's phi constrains the problem ETF solves, Theorem 3,
    as it does the exact leximin); energies, where given, equal time x power."""
    t = _slices(allocation)
    problems = []
    if ("energy",) in allocation.columns:
        wrong = np.flatnonzero(~agrees(allocation.column("energy"), t * p.power))
        if wrong.size:
            problems.append(f"{p.ids[wrong[0]]}'s energy is not time x power "
                            f"({allocation.column('energy')[wrong[0]]:g} != "
                            f"{t[wrong[0]] * p.power[wrong[0]]:g})")
    if np.any(np.abs(t - np.round(t)) > ROUNDING_SLACK):
        problems.append("fractional slices")
    if np.any(t < 0):
        problems.append("negative slices")
    over = np.flatnonzero(t > p.demand)
    if over.size:
        problems.append(f"{p.ids[over[0]]} gets {t[over[0]]:g} > its demand {p.demand[over[0]]:g}")
    total = _handed_out(t)
    if total > p.quantum:
        problems.append(f"{total:g} slices handed out, quantum is {p.quantum}")
    short, g = below_guarantee(p, t)
    if short.size:
        problems.append(f"{p.ids[short[0]]} gets {t[short[0]]:g} < its guarantee {g[short[0]]} "
                        f"(phi = {p.phi:g})")
    if problems:
        return Finding("feasibility", False, "; ".join(problems), {"problems": problems})
    return Finding("feasibility", True, f"{total:g} of {p.quantum} slices, whole, within demands "
                   f"and at least the guarantees")


def time_guarantee(p: EtfProblem, allocation: Allocation, **_) -> Finding:
    """Every app gets its phi-share of the time-fair slices (eq. 7, whole slices) or its demand."""
    t = _slices(allocation)
    short, g = below_guarantee(p, t)
    if short.size:
        i = int(short[np.argmax((g - t)[short])])
        return Finding("time_guarantee", False,
                       f"{short.size} apps below their guarantee; worst {p.ids[i]}",
                       {"app": p.ids[i], "time": t[i], "guarantee": int(g[i])})
    return Finding("time_guarantee", True,
                   f"every app has at least min(floor(phi T_i^TF), demand) slices (phi={p.phi:g})")


def pareto_efficiency(p: EtfProblem, allocation: Allocation, **_) -> Finding:
    """No slice is left over while some app's demand is unmet (Theorem 1's definition)."""
    t = _slices(allocation)
    left = p.quantum - t.sum()
    wanting = np.flatnonzero(t < p.demand)
    if left >= 1 and wanting.size:
        return Finding("pareto_efficiency", False,
                       f"{left:g} slices idle while {wanting.size} apps want more",
                       {"idle": left, "wanting": [p.ids[i] for i in wanting[:10]]})
    return Finding("pareto_efficiency", True,
                   "no slice idle while a demand is unmet" if left >= 1 else "every slice used")


def max_min_slices(p: EtfProblem) -> tuple[float, np.ndarray]:
    """The largest smallest weighted energy t_i P_i / w_i any whole-slice allocation with the
    guarantees can reach (max z s.t. z <= t_i P_i / w_i, g_i <= t_i <= d_i, sum t <= T),
    exactly, by bisection on the level (``levels``): the fewest slices reaching a level grow
    with it. Returns the value and those slices."""
    g = guarantee(p).astype(float)
    cap = np.minimum(p.demand, p.quantum).astype(float)

    def fewest(level: float) -> np.ndarray:
        return np.maximum(g, fewest_reaching(level, p.power, p.weights, cap))

    def fits(level: float) -> bool:
        return bool(fewest(level).sum() <= p.quantum)

    top = highest_level(fits, float(energy_key(g, p.power, p.weights).min()),
                        float(energy_key(cap, p.power, p.weights).min()))
    t = fewest(top)
    return float(energy_key(t, p.power, p.weights).min()), t


def max_min(p: EtfProblem, allocation: Allocation, **_) -> Finding:
    """Max-min weighted energy (Theorem 3): the smallest weighted energy equals the max-min
    over whole-slice allocations with the guarantees (``max_min_slices``, exact at any size).
    Where one slice moved from an app above its guarantee to the poorest app raises the
    minimum, that move is the witness."""
    t = _slices(allocation)
    e = energy_key(t, p.power, p.weights)
    c = p.power / p.weights
    low = float(e.min())
    at_min = np.flatnonzero(e <= low * (1 + TIE))
    donors = (t > guarantee(p)) & (e - c > low * (1 + TIE))
    if at_min.size == 1 and t[at_min[0]] < p.demand[at_min[0]] and donors.any():
        m, i = int(at_min[0]), int(np.flatnonzero(donors)[0])   # the plainest witness
        raised = min(e[m] + c[m], e[i] - c[i], np.delete(e, [m, i]).min(initial=np.inf))
        return Finding("max_min", False,
                       f"moving a slice from {p.ids[i]} to {p.ids[m]} raises the minimum "
                       f"weighted energy from {low:.6g} to {raised:.6g}",
                       {"from": p.ids[i], "to": p.ids[m], "minimum": low, "raised_to": raised})
    best, slices = max_min_slices(p)
    if best > low * (1 + TIE):
        return Finding("max_min", False,
                       f"minimum weighted energy {low:.6g}, but {best:.6g} is reachable",
                       {"minimum": low, "max_min": best,
                        "time": dict(zip(p.ids, slices.astype(int).tolist()))})
    if low > best * (1 + TIE):            # above every allocation with the guarantees
        return Finding("max_min", False,
                       f"minimum weighted energy {low:.6g} is above the max-min {best:.6g} "
                       f"of allocations with the guarantees: this one breaks a constraint "
                       f"(see feasibility)", {"minimum": low, "max_min": best})
    return Finding("max_min", True, f"minimum weighted energy {low:.6g} equals the exact max-min")


def _misreports(p: EtfProblem, i: int, at_level: bool) -> list[tuple[str, tuple[str, dict]]]:
    """App i's lies, likeliest to pay first: (label, (short label, report)). An app at the
    water level first under-reports its power (the energy-fair step's time goes as w_i / P_i:
    it may get more slices at no less energy); any other app first over-reports it (Lemma 2:
    it keeps its slices, guaranteed or its whole demand, at more energy). Then the demand:
    twice, one more, the quantum (a backlogged app: T / n)."""
    power, demand = float(p.power[i]), float(p.demand[i])
    factors = (0.5, 1.25, 2.0) if at_level else (1.25, 2.0, 0.5)
    lies = [(f"power {power:g} -> {power * f:g} W", (f"power x{f:g}", {"power": power * f}))
            for f in factors]
    if np.isfinite(demand):
        named = {demand * 2: "demand x2", demand + 1: "demand +1", float(p.quantum): "demand T"}
        lies += [(f"demand {demand:g} -> {v:g}", (named[v], {"demand": v}))
                 for v in sorted(set(named) - {demand})]
    else:
        lies.append((f"demand backlogged -> {p.quantum // max(p.n, 1)}",
                     ("demand T/n", {"demand": float(p.quantum // max(p.n, 1))})))
    return lies


def probe_order(p: EtfProblem, t: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``count`` apps in the order the probe tries them, likeliest to gain first,
    and whether each app is at the water level (above its guarantee, below its demand: the
    energy-fair step sets its slices). First the apps not at the level, in spec order: Lemma
    2's app, which keeps its slices when it reports more power. Then those at the level by how
    little their weighted energy exceeds the lowest at the level, in slices
    (e_i - z) w_i / P_i: halving its power pays an app only when its slices, rounded up to the
    level, double, which is likeliest where the rounding added least. Only the apps the probe
    can reach are ordered (a partition, not a sort of every app)."""
    level = (t > guarantee(p)) & (t < np.minimum(p.demand, p.quantum))
    off = np.flatnonzero(~level)[:count]
    on = np.flatnonzero(level)
    e = energy_key(t[on], p.power[on], p.weights[on])
    over = (e - e.min(initial=np.inf)) * p.weights[on] / p.power[on]
    k = max(min(count - len(off), len(on)), 0)
    if k:                              # the k smallest, ties (at the k-th too) in spec order
        kth = np.partition(over, k - 1)[k - 1]
        below = np.flatnonzero(over < kth)
        first = np.concatenate([below, np.flatnonzero(over == kth)[:k - len(below)]])
        on = on[first[np.lexsort((first, over[first]))]]
    return np.concatenate([off, on[:k]]), level


def probed_scope(n: int, tried: dict[int, list[str]], ids: tuple[str, ...]) -> str:
    """What the probe covered, exactly: how many apps, and each app's misreports."""
    shown = [f"{ids[i]} ({', '.join(lies)})" for i, lies in list(tried.items())[:SHOWN]]
    more = f" and {len(tried) - SHOWN} more" if len(tried) > SHOWN else ""
    runs = sum(map(len, tried.values()))
    return (f"probed {len(tried)} of {n} apps, {runs} misreports, likeliest first: "
            f"{'; '.join(shown)}{more}")


def strategy_proofness(p: EtfProblem, allocation: Allocation, mechanism=None,
                       **_) -> Finding:
    """SP probe: an app reports another power (it really runs at that power: Lemma 2's
    "energy-gluttonous" app) or another demand; the mechanism is re-run. A gain is a better
    (useful time, energy) pair: useful time min(t', true demand) not less, energy at the power
    it runs at not less, one of them more (the paper's definition in Lemma 1's proof). The
    largest relative gain found is reported, each relative to at least one slice (of time, or
    of energy at the app's true power): a gain from 0 is counted in slices, not as infinite.
    Apps in ``probe_order``, their lies likeliest first (``_misreports``), as many re-runs as
    ``probe_budget`` allows n apps (at least two: one app's two likeliest lies); the detail
    names every app probed and its misreports.
    No gain found is ``unrefuted``; without a mechanism the check is ``unchecked``."""
    if mechanism is None:
        return no_mechanism()
    t = _slices(allocation)
    energy = t * p.power
    budget = probe_budget(p.n, PROBE_LEAST)
    order, level = probe_order(p, t, budget)
    tried: dict[int, list[str]] = {}

    def reported(i: int, lie: tuple[str, dict]) -> EtfProblem:
        tried.setdefault(int(i), []).append(lie[0])
        return p.with_report(int(i), **lie[1])

    def gain(i: int, label: str, liar: EtfProblem, outcome) -> dict | None:
        t_new = min(float(outcome.allocation.column("time")[i]), float(p.demand[i]))
        e_new = t_new * float(liar.power[i])
        if not (t_new >= t[i] and e_new >= energy[i] and (t_new > t[i] or e_new > energy[i])):
            return None
        return {"gain": max((t_new - t[i]) / max(t[i], 1.0),
                            (e_new - energy[i]) / max(energy[i], float(p.power[i]), ENERGY_FLOOR)),
                "app": p.ids[i], "misreport": label,
                "time": [t[i], t_new], "energy": [energy[i], e_new]}

    best, _, _ = probe(mechanism, order, lambda i: _misreports(p, int(i), bool(level[i])),
                       reported, gain, budget)
    scope = probed_scope(p.n, tried, p.ids)
    if best["gain"] > TIE:
        return Finding("strategy_proofness", False,
                       f"{best['app']} gains by misreporting ({best['misreport']}): time "
                       f"{best['time'][0]:g} -> {best['time'][1]:g}, energy "
                       f"{best['energy'][0]:g} -> {best['energy'][1]:g} ({scope})", best)
    return nothing_found(scope)

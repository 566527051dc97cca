"""Fairness axioms, each computed from its definition on the allocation at hand.

Nothing here trusts a paper's theorem: every check reads the allocation it is given (which may
come from any method, or from a file) and looks for a counterexample. A failed check carries a
witness: who, against whom, by how much.

The checks on Leontief users (drf, emrf) share one view, ``problem.market``
(:class:`~fairalloc.models.leontief.Leontief`): user i values a bundle b at
``min_d b_d / a_id`` units, capped at its ``max_tasks``. They exploit classes of users with the
same demand direction, so they cost O(n D + K^2 D) for K classes instead of O(n^2).

Tolerances are the kind's (``models.leontief``): amounts are compared with a relative tolerance
``RTOL`` of the amount or of its natural size, whichever is larger: a resource's capacity, and
for a user's units what the user runs on the whole of its dominant resource (``unit_scale``).
No tolerance is absolute, so a spec with every quantity scaled by any factor gets the same
verdicts. Whole tasks are compared exactly, up to float noise (``WHOLE``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.checks import no_mechanism, nothing_found, probe, probe_budget
from fairalloc.models.leontief import (
    RTOL,
    WHOLE,
    Leontief,
    demand_columns,
    group_rows,
    row_all,
    row_max,
    row_min,
)
from fairalloc.result import Finding, Solution
from fairalloc.solvers.highs import INF, solve_wide

# demand classes above which envy is found by the dominance sweep: the class path compares
# C demand with K <= n bundle classes at ~14 ns a pair, the sweep costs ~2 us a user (at 2,000
# users of distinct demands, 55 ms against 3.8 ms; at 100, 0.26 ms against 0.20 ms)
SWEEP_ABOVE_CLASSES = 100

Mechanism = Callable[[object], Solution]


def exceeds(a: np.ndarray, b: np.ndarray, scale: np.ndarray | float = 1.0) -> np.ndarray:
    """a > b beyond the relative tolerance: ``RTOL`` of |b| or of ``scale``, the natural size
    of the quantity compared (a capacity, ``unit_scale``; 1 for ratios), whichever is larger."""
    return a > b + RTOL * np.maximum(scale, np.abs(b))


def unit_scale(m: Leontief) -> np.ndarray:
    """The natural size of user i's units, 1 / s_i: what it runs holding the whole of its
    dominant resource. Tolerances on units are relative to it, so they scale with the spec."""
    return 1.0 / m.dominant()


def _worst(mask: np.ndarray, amount: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[np.argmax(amount[mask])])


def feasibility(problem, allocation: Allocation, **_) -> Finding:
    """Bundles are non-negative and fit in the capacity, units are non-negative, within caps,
    whole where tasks are indivisible, and each user's bundle supports the units it claims."""
    m: Leontief = problem.market
    x, bundles = m.units(allocation), m.bundles(allocation)
    used = bundles.sum(axis=0)
    problems: list[dict] = []
    over = exceeds(used, m.capacity, m.capacity)
    unit = unit_scale(m)
    for d in np.flatnonzero(over):
        problems.append({"resource": m.resources[d], "used": used[d], "capacity": m.capacity[d]})
    checks = [
        (row_min(bundles / m.capacity) < -RTOL, "a negative amount in its bundle"),
        (x < -RTOL * unit, "negative units"),
        (exceeds(x, m.caps, unit), "above its cap"),
        (exceeds(x, m.worth(np.arange(m.n), bundles), unit),
         "more units than its bundle supports"),
        ((np.abs(x - np.round(x)) > WHOLE) if m.integral else np.zeros(m.n, bool),
         "fractional tasks"),
    ]
    for mask, what in checks:
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            problems.append({"user": m.ids[i], "problem": what, "units": x[i],
                             "count": int(mask.sum())})
    if problems:
        return Finding("feasibility", False, f"{len(problems)} violation(s)", problems[:10])
    return Finding("feasibility", True, "every bundle fits; units within caps and bundles")


def sharing_incentive(problem, allocation: Allocation, **_) -> Finding:
    """SI (eq. 1 of the EMRF paper, and DRF's): each user gets at least what it could run on its
    weighted slice w_i / sum(w) of every resource."""
    m: Leontief = problem.market
    x, own = m.units(allocation), m.weighted_slice()
    short = exceeds(own, x, unit_scale(m))
    if not short.any():
        return Finding("sharing_incentive", True,
                       f"all {m.n} users get at least their weighted slice's worth")
    i = _worst(short, (own - x) / np.maximum(own, 1e-300))
    return Finding(
        "sharing_incentive", False,
        f"{int(short.sum())} of {m.n} users get less than their weighted slice's worth",
        {"user": m.ids[i], "gets": x[i], "slice_worth": own[i], "short_by": own[i] - x[i]},
    )


def _bundle_classes(m: Leontief, x: np.ndarray,
                    bundles: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bundles as size × direction: size b_j = max_d B_jd / C_d, class label and directions.
    Bundles that are exactly units × demand (a method's own allocation) point the way the
    demand does: the market's demand classes, already grouped, are their classes."""
    if np.array_equal(bundles, x[:, None] * m.demand):
        classes = m.classes()
        return x * m.dominant(), classes.label, classes.direction
    size = row_max(bundles / m.capacity)
    safe = np.where(size > 0, size, 1.0)
    direction = bundles / safe[:, None]
    first, label = group_rows(direction)
    return size, label, direction[first]


def _best_two(u: np.ndarray, bdir: np.ndarray, v1: np.ndarray) -> tuple[np.ndarray, ...]:
    """For each demand direction c: the bundle classes k with the largest and second largest
    V[c, k] = M(c, k) * v1[k], and those values. O(C K D) time, computed in row chunks so that
    memory stays bounded whatever C and K are."""
    C, K = len(u), len(bdir)
    k1, k2 = np.zeros(C, int), np.zeros(C, int)
    b1, b2 = np.zeros(C), np.full(C, -np.inf)
    scaled = bdir * v1[:, None]                            # (K, D) best bundle of each class
    step = max(1, int(4e6 // max(1, K)))
    for lo in range(0, C, step):
        uc = u[lo:lo + step]
        V = np.full((len(uc), K), np.inf)
        for d in range(u.shape[1]):
            need = uc[:, d] > 0
            if need.any():
                V[need] = np.minimum(V[need], scaled[None, :, d] / uc[need, d][:, None])
        rows = np.arange(len(uc))
        first = V.argmax(axis=1)
        k1[lo:lo + step], b1[lo:lo + step] = first, V[rows, first]
        if K > 1:
            V[rows, first] = -np.inf
            second = V.argmax(axis=1)
            k2[lo:lo + step], b2[lo:lo + step] = second, V[rows, second]
    return k1, b1, k2, b2


def _dominated(points: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """For each query q: is there a point p with p > q in every coordinate?

    Divide and conquer on the first coordinate (split at the points' median): points above it
    beat every query at or below it there, leaving a problem with one coordinate less; the two
    halves recurse. O((m + q) log^(k-1)) for k coordinates, small blocks by brute force.
    """
    out = np.zeros(len(queries), dtype=bool)
    if len(points) == 0 or len(queries) == 0:
        return out
    if points.shape[1] == 1:
        return queries[:, 0] < points[:, 0].max()
    # only queries below the points' maximum, and points above the queries' minimum, matter
    live = np.flatnonzero(row_all(queries < [column.max() for column in points.T]))
    if live.size == 0:
        return out
    queries_live = queries[live]
    points = points[row_all(points > [column.min() for column in queries_live.T])]
    if len(points) * len(live) <= 1 << 16:
        out[live] = functools.reduce(np.logical_and, (
            point[None, :] > query[:, None] for point, query in zip(points.T, queries_live.T)
        )).any(axis=1)
        return out
    out[live] = _dominated_split(points, queries_live)
    return out


def _dominated_split(points: np.ndarray, queries: np.ndarray) -> np.ndarray:
    out = np.zeros(len(queries), dtype=bool)
    first = points[:, 0]
    split = float(np.partition(first, len(first) // 2)[len(first) // 2])
    upper = first > split
    if not upper.any():                              # the median is the largest value
        top = first == split
        below = queries[:, 0] < split
        hit = _dominated(points[top, 1:], queries[below, 1:])
        rest = np.flatnonzero(below)[~hit]
        out[below] = hit
        out[rest] = _dominated(points[~top], queries[rest])
        return out
    low = queries[:, 0] <= split
    hit = _dominated(points[upper, 1:], queries[low, 1:])
    rest = np.flatnonzero(low)[~hit]
    out[low] = hit
    out[rest] = _dominated(points[~upper], queries[rest])
    out[~low] = _dominated(points[upper], queries[~low])
    return out


def _envy_worth(m: Leontief, bundles: np.ndarray, i: int) -> np.ndarray:
    """What user i could run with each user's bundle scaled by w_i / w_j (itself: -inf)."""
    scaled = bundles * (m.weights[i] / m.weights)[:, None]
    worth = m.worth(np.full(m.n, i), scaled)
    worth[i] = -np.inf
    return worth


def _reachable(m: Leontief, points: np.ndarray, need: np.ndarray,
               support: np.ndarray) -> np.ndarray:
    """Which queries some point might beat in every resource of their support: a necessary
    condition, O(n D), that spares the sweep the rest.

    A point p beating q on all of q's resources holds each of them, so its level
    max_d p_d / C_d is at most ``reach[d]``, the largest level of a point holding some of d, for
    each such d; and it beats q where q's level is reached, so its level is at least q's
    (``need``). A query of positive level above the least ``reach`` over its resources is
    beaten by no point (a positive query is positive wherever its user has demand). In
    a progressive-filling allocation that is every user a saturated resource stopped (all who
    hold that resource stopped at one level, and a query sits just above its own level), which
    is DRF's envy-freeness argument (section 4.1 of the DRF paper) made a test.
    """
    level = row_max(points / m.capacity)
    held = points.T > 0
    reach = [level[column].max(initial=-np.inf) for column in held]
    bound = functools.reduce(np.minimum, (np.where(uses, r, np.inf)
                                          for uses, r in zip(support.T, reach)))
    return ~((bound < need) & (need > 0))


def _envious_by_dominance(m: Leontief, x: np.ndarray,
                          bundles: np.ndarray) -> tuple[np.ndarray, int]:
    """The envious users, for any number of demand and bundle classes, and how many users
    the sweep had to ask.

    i envies j iff j's weight-normalised bundle B_j / w_j beats q_i = (x_i + tol) / w_i * a_i
    in every resource i uses (for whole tasks, x_i + 1 - ``WHOLE`` in place of x_i + tol): an
    orthant query, answered by ``_dominated`` one support pattern at a time for the users
    ``_reachable`` leaves (in a DRF allocation, none).
    """
    scaled = bundles / m.weights[:, None]
    if m.integral:
        target = x + 1 - WHOLE
    else:
        target = x + RTOL * np.maximum(unit_scale(m), np.abs(x))
    query = (target / m.weights)[:, None] * m.demand
    support = m.demand > 0
    # a capped user cannot use more; one whose query no bundle can reach needs no sweep
    free = (m.caps > target) & _reachable(m, scaled, row_max(query / m.capacity), support)
    envious = np.zeros(m.n, dtype=bool)
    asking = np.flatnonzero(free)
    code = support[asking] @ (1 << np.arange(len(m.resources)))
    for pattern in np.unique(code):
        users = asking[code == pattern]
        dims = support[users[0]]
        envious[users] = _dominated(scaled[:, dims], query[users][:, dims])
    suspects = np.flatnonzero(envious)
    own = suspects[row_all((scaled[suspects] > query[suspects]) | ~support[suspects])]
    for i in own:                                    # dominated by its own bundle: ask the rest
        envious[i] = bool(exceeds(_envy_worth(m, bundles, int(i)).max(), x[i],
                                  unit_scale(m)[i]))
    return envious, asking.size


def _top_of_class(level: np.ndarray, label: np.ndarray, K: int) -> np.ndarray:
    """For each class k < K (every one with a member): its member with the largest level,
    the first listed among equals. O(n), no sort."""
    best = np.full(K, -np.inf)
    np.maximum.at(best, label, level)
    at_best = np.flatnonzero(level == best[label])
    first = np.full(K, len(level))
    np.minimum.at(first, label[at_best], at_best)
    return first


def _largest(members: np.ndarray, value: np.ndarray, k: int) -> np.ndarray:
    """The (at most) k ``members`` of largest ``value``, largest first, ties in listed order
    (what a stable sort of all of them gives, without sorting them all)."""
    if members.size > k:
        kth = np.partition(value[members], members.size - k)[members.size - k]
        members = members[value[members] >= kth]
    return members[np.argsort(-value[members], kind="stable")][:k]


def envy_freeness(problem, allocation: Allocation, **_) -> Finding:
    """Weighted EF (eq. 2 with mu of eq. 19, weighted): no user i could run more units with
    another user's bundle scaled by w_i / w_j. With equal weights this is eq. 2 exactly.

    i's worth of j's scaled bundle is (w_i / s_i) (b_j / w_j) M(c_i, k_j), where s_i is i's
    dominant share per unit, b_j the size of j's bundle and M(c, k) = min_d v_kd / u_cd compares
    demand direction c with bundle direction k. So per bundle class only the largest b_j / w_j
    matters (the second largest, for the user who holds the largest): O(n D + C K D) for C
    demand and K bundle classes, instead of O(n^2 D). With many demand classes (above
    ``SWEEP_ABOVE_CLASSES``, where C K could reach n^2) the envious users come from an
    orthant-dominance sweep instead (``_envious_by_dominance``, O(n log^(D-1) n)), and the
    witness from the first ten of them.
    """
    m: Leontief = problem.market
    x, bundles = m.units(allocation), m.bundles(allocation)
    classes = m.classes()
    if classes.count > SWEEP_ABOVE_CLASSES:
        return _envy_from_dominance(m, x, bundles, classes.count)
    size, blabel, bdir = _bundle_classes(m, x, bundles)
    K = len(bdir)
    level = size / m.weights
    top1 = _top_of_class(level, blabel, K)
    runner_up = level.copy()
    runner_up[top1] = -np.inf
    top2 = np.where(np.bincount(blabel, minlength=K) > 1,
                    _top_of_class(runner_up, blabel, K), -1)
    v1 = level[top1]
    v2 = np.where(top2 >= 0, level[np.maximum(top2, 0)], 0.0)
    u = classes.direction
    k1, b1, k2, b2 = _best_two(u, bdir, v1)
    c = classes.label
    best, rival = b1[c].copy(), top1[k1[c]].copy()
    mine = np.flatnonzero(rival == np.arange(m.n))        # users who hold the best bundle
    for i in mine:                                        # at most one per demand class
        ci, k = c[i], k1[c[i]]
        with np.errstate(divide="ignore", invalid="ignore"):
            same = np.where(u[ci] > 0, bdir[k] / u[ci], np.inf).min() * v2[k]
        if top2[k] >= 0 and same >= b2[ci]:
            best[i], rival[i] = same, top2[k]
        elif K > 1:
            best[i], rival[i] = b2[ci], top1[k2[ci]]
        else:
            best[i], rival[i] = 0.0, i
    worth = np.minimum(m.caps, m.weights / m.dominant() * best)
    if m.integral:
        worth = np.floor(worth + WHOLE)
    envious = exceeds(worth, x, unit_scale(m))
    if not envious.any():
        return Finding("envy_freeness", True,
                       f"no user prefers another's weight-scaled bundle ({m.n} users, "
                       f"{classes.count} demand classes, {K} bundle classes)")
    gain = worth - x
    worst = _largest(np.flatnonzero(envious), gain, 10)
    pairs = [{"envious": m.ids[e], "of": m.ids[rival[e]], "has": x[e], "would_have": worth[e]}
             for e in worst]
    i = worst[0]
    return Finding(
        "envy_freeness", False,
        f"{int(envious.sum())} of {m.n} users envy someone; worst: {m.ids[i]} envies "
        f"{m.ids[rival[i]]} by {gain[i]:.6g} units",
        {"envious": m.ids[i], "of": m.ids[rival[i]], "has": x[i], "would_have": worth[i],
         "by": gain[i], "pairs": pairs},
    )


def _envy_from_dominance(m: Leontief, x: np.ndarray, bundles: np.ndarray, C: int) -> Finding:
    envious, swept = _envious_by_dominance(m, x, bundles)
    scope = (f"{m.n} users, {C} demand classes: orthant-dominance sweep of the {swept} below "
             "their cap whose level some bundle reaches")
    if not envious.any():
        return Finding("envy_freeness", True,
                       f"no user prefers another's weight-scaled bundle ({scope})")
    pairs = []
    for e in np.flatnonzero(envious)[:10]:
        worth = _envy_worth(m, bundles, int(e))
        j = int(np.argmax(worth))
        pairs.append({"envious": m.ids[e], "of": m.ids[j], "has": x[e], "would_have": worth[j]})
    top = max(pairs, key=lambda q: q["would_have"] - q["has"])
    return Finding(
        "envy_freeness", False,
        f"{int(envious.sum())} of {m.n} users envy someone; e.g. {top['envious']} envies "
        f"{top['of']} by {top['would_have'] - top['has']:.6g} units ({scope})",
        {**top, "by": top["would_have"] - top["has"], "pairs": pairs},
    )


def _growth_alone(direction: np.ndarray, room: np.ndarray, slack: np.ndarray) -> np.ndarray:
    """For each demand class: the most it could grow (in dominant-share units) if it alone
    took the slack, min(room, min_d slack_d / u_cd). An upper bound on its growth in the PE
    LP, whose classes share the slack: when every bound is tiny the LP's optimum is too."""
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(direction > 0, slack / direction, np.inf)
    return np.minimum(room, row_min(per))


def pareto_efficiency(problem, allocation: Allocation, **_) -> Finding:
    """PE: no user can grow without another's units shrinking. The slack is the capacity the
    units do not use, capacity - sum_i x_i d_i: what nobody holds and what a user holds beyond
    its units' need. Divisible units: the LP max sum_c G_c s.t. sum_c G_c u_c <= slack,
    0 <= G_c <= room under the caps, over classes c of users with the same demand direction
    (G_c in dominant-share units). Whole tasks: can some user run one more task in the slack?"""
    m: Leontief = problem.market
    x = m.units(allocation)
    slack = np.maximum(m.capacity - x @ m.demand, 0.0)
    room = m.caps - x
    if m.integral:
        fits = (m.demand <= slack + WHOLE * m.capacity).all(axis=1) & (room >= 1)
        if fits.any():
            i = int(np.flatnonzero(fits)[0])
            return Finding("pareto_efficiency", False,
                           f"{int(fits.sum())} users could run one more task in the capacity "
                           "their tasks leave unused",
                           {"user": m.ids[i], "tasks": x[i],
                            "slack": dict(zip(m.resources, slack))})
        return Finding("pareto_efficiency", True, "no user's next task fits in the capacity the "
                       "tasks leave unused")
    classes = m.classes()
    growth_room = np.bincount(classes.label, weights=np.where(room > 0, room, 0.0) * m.dominant(),
                              minlength=classes.count)
    threshold = RTOL * max(1.0, float(np.abs(x * m.dominant()).max(initial=0.0)))
    if (_growth_alone(classes.direction, growth_room, slack) <= threshold / 2).all():
        return Finding("pareto_efficiency", True,
                       f"{classes.count} demand classes: none can grow on its own beyond "
                       f"{threshold / 2:.3g} (so nobody can grow; no LP needed)")
    # rows in shares of each capacity, so HiGHS's absolute tolerances are relative to it
    report = solve_wide(np.ones(classes.count), classes.direction.T / m.capacity[:, None],
                        np.full(len(slack), -INF), slack / m.capacity,
                        np.where(np.isinf(growth_room), INF, growth_room))
    gain = report.x if report.x is not None else np.zeros(classes.count)
    growing = gain > threshold
    if not growing.any():
        return Finding("pareto_efficiency", True,
                       f"LP over {classes.count} demand classes: nobody can grow "
                       f"(max growth {report.objective:.3g})")
    c = int(np.argmax(gain))
    members = np.flatnonzero((classes.label == c) & (room > RTOL * unit_scale(m)))
    i = int(members[0])
    alone = float(m.worth(np.array([i]), (x[i] * m.demand[i] + slack)[None, :])[0] - x[i])
    return Finding(
        "pareto_efficiency", False,
        f"{m.ids[i]} can grow by {alone:.6g} units with nobody shrinking",
        {"user": m.ids[i], "units": x[i], "can_add": alone,
         "slack": dict(zip(m.resources, slack))},
    )


def _misreports(demand: np.ndarray, names: tuple[str, ...]) -> list[tuple[str, np.ndarray]]:
    """Ways a user may lie about its demand vector, likeliest to pay first: inflate one resource,
    swap the largest demand with another, deflate one resource, scale the whole vector."""
    out: list[tuple[str, np.ndarray]] = []
    positive = np.flatnonzero(demand > 0)
    for d in positive:
        lie = demand.copy()
        lie[d] *= 2.0
        out.append((f"{names[d]} x2", lie))
    top = int(np.argmax(demand))
    for d in range(len(demand)):
        if d != top and demand[d] != demand[top]:
            lie = demand.copy()
            lie[[top, d]] = lie[[d, top]]
            out.append((f"swap {names[top]} and {names[d]}", lie))
    for d in positive:
        lie = demand.copy()
        lie[d] *= 0.5
        out.append((f"{names[d]} x0.5", lie))
    out.append(("all x2", demand * 2.0))
    return out


class _FirstOfEachType:
    """The first user of each distinct type, in spec order: users whose ``columns`` (arrays
    of n values each) all agree are alike. Found one at a time as a probe asks for them (one
    pass over the users each, no sort of all n: a large spec's probe takes one or two).
    ``found``: those handed out; ``exhausted``: no more."""

    def __init__(self, columns: list[np.ndarray]) -> None:
        self.columns, self.found, self.exhausted = columns, [], False

    def __iter__(self):
        rest = np.arange(len(self.columns[0]))
        while rest.size:
            i = int(rest[0])
            self.found.append(i)
            yield i
            alike = functools.reduce(np.logical_and,
                                     (column[rest] == column[i] for column in self.columns))
            rest = rest[~alike]
        self.exhausted = True


def strategy_proofness(problem, allocation: Allocation, mechanism: Mechanism | None = None,
                       **_) -> Finding:
    """SP probe: users misreport their demand (``_misreports``), the mechanism that produced the
    allocation is run again, and we measure the liar's *true* units from the bundle it gets.

    A probe, not a proof: it reports the largest true gain found. It probes one user of each
    distinct type (demand, weight, cap) in spec order, with the re-solves ``probe_budget`` allows
    n users (24 up to 83 users, 2,000 // n beyond, at least one: from 1,000 users a re-solve or
    two, so that the checks stay within 3x the solve); the detail says exactly what was
    covered: no gain found is ``unrefuted``, never ``holds``. Without a mechanism (an
    allocation read from a file) it is ``unchecked``.
    """
    if mechanism is None:
        return no_mechanism()
    m: Leontief = problem.market
    x = m.units(allocation)
    reps = _FirstOfEachType([*demand_columns(m), m.weights, m.caps])
    budget = probe_budget(m.n, 1)
    unit = unit_scale(m)

    def gain(i: int, label: str, liar, outcome) -> dict | None:
        held = liar.market.bundle_of(outcome.allocation, int(i))
        true_units = float(m.worth(np.array([i]), held[None, :])[0])
        if not exceeds(true_units, x[i], unit[i]):
            return None
        return {"gain": true_units - x[i], "user": m.ids[i], "misreport": label,
                "reported": dict(zip(m.resources, liar.market.demand[i])),
                "true_units_truthful": x[i], "true_units_lying": true_units}

    best, probed, solves = probe(mechanism, reps,
                                 lambda i: _misreports(m.demand[i], m.resources),
                                 lambda i, lie: problem.with_demand(int(i), lie), gain, budget)
    scope = (f"probed {probed} of {len(reps.found)} user types with {solves} misreports"
             if reps.exhausted else
             f"probed the first {probed} user types in spec order, of {m.n} users, with "
             f"{solves} misreports")
    if best["gain"] > 0:
        return Finding("strategy_proofness", False,
                       f"{best['user']} gains {best['gain']:.6g} units by lying ({scope})", best)
    return nothing_found(scope)


# The axioms of drf and emrf allocations (Leontief markets), in report order.
LEONTIEF_CHECKS = (feasibility, sharing_incentive, envy_freeness, pareto_efficiency,
                   strategy_proofness)

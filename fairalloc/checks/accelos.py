"""accelOS checks, each from its definition on the work groups at hand.

Kernel i with n_i groups holds n_i d_i = n_i (w_i, m_i, w_i r_i) of (T, L, R); its weighted
dominant share is n_i max_r(d_ir / C_r) / s_i (``models.accelos``).
"""

from __future__ import annotations

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.checks import best_of_others
from fairalloc.models.accelos import (
    RESOURCES,
    RTOL,
    AccelosProblem,
    max_min_level,
    most_groups,
    used,
    weighted_dominant_share,
)
from fairalloc.result import Finding

ENVY_BLOCK = 1 << 18  # (kernel class, kernel) pairs compared at once in the envy check


def _groups(allocation: Allocation) -> np.ndarray:
    return np.asarray(allocation.column("work_groups"), dtype=float)


def _held_mismatch(p: AccelosProblem, allocation: Allocation, n: np.ndarray) -> list[str]:
    """Given threads / local_memory / registers columns that are not n_i d_i."""
    problems = []
    for r, name in enumerate(RESOURCES):
        if (name,) not in allocation.columns:
            continue
        wrong = np.flatnonzero(allocation.column(name) != n * p.demand[:, r])
        if wrong.size:
            i = int(wrong[0])
            problems.append(f"{p.ids[i]}'s {name} is not work_groups x per-group "
                            f"({allocation.column(name)[i]:g} != {n[i] * p.demand[i, r]:g})")
    return problems


def feasibility(p: AccelosProblem, allocation: Allocation, **_) -> Finding:
    """What the device can hold: whole groups, 0 <= n_i <= N_i, and sum_i n_i d_ir <= C_r for
    threads, local memory and registers (eq. 1, 3 and 5 in the accelOS paper); given resource
    columns equal n_i d_i. A kernel with no group is feasible (it waits): ``all_resident``."""
    n = _groups(allocation)
    problems = _held_mismatch(p, allocation, n)
    if np.any(n != np.round(n)):
        problems.append("fractional work groups")
    negative = np.flatnonzero(n < 0)
    if negative.size:
        problems.append(f"{p.ids[int(negative[0])]} has {n[negative[0]]:g} work groups")
    over = np.flatnonzero(n > p.groups)
    if over.size:
        i = int(over[0])
        problems.append(f"{p.ids[i]} has {n[i]:g} groups, its NDRange has {p.groups[i]:g}")
    total = used(p, n)
    for r in np.flatnonzero(total > p.capacity):
        problems.append(f"{RESOURCES[r]}: {total[r]:g} in use, the device has {p.capacity[r]:g}")
    if problems:
        return Finding("feasibility", False, "; ".join(problems), {"problems": problems})
    return Finding("feasibility", True, f"{n.sum():g} whole groups, 0 <= n_i <= N_i, within "
                   "threads, local memory and registers")


def all_resident(p: AccelosProblem, allocation: Allocation, **_) -> Finding:
    """Every kernel runs: n_i >= 1, the accelOS paper's premise that all kernels share the
    device at once. Standard OpenCL (FCFS) can leave a kernel waiting; accelOS never does."""
    n = _groups(allocation)
    idle = np.flatnonzero(n < 1)
    if idle.size:
        names = [p.ids[i] for i in idle[:5]]
        return Finding("all_resident", False,
                       f"{idle.size} kernels have no resident work group "
                       f"({', '.join(names)}{' ...' if idle.size > 5 else ''}): they wait",
                       {"waiting": int(idle.size), "kernels": names})
    return Finding("all_resident", True,
                   f"all {p.kernel_count} kernels have at least one resident group")


def pareto_efficiency(p: AccelosProblem, allocation: Allocation, **_) -> Finding:
    """Saturation: no kernel below N_i whose next group fits in what is free."""
    n = _groups(allocation)
    free = p.capacity - used(p, n)
    room = np.flatnonzero((n < p.groups) & (most_groups(p.demand, free) >= 1))
    if room.size:
        i = int(room[0])
        return Finding("pareto_efficiency", False,
                       f"{room.size} kernels can take one more group; first {p.ids[i]}",
                       {"kernel": p.ids[i], "work_groups": n[i],
                        "free": dict(zip(RESOURCES, free.tolist()))})
    return Finding("pareto_efficiency", True, "no kernel can take one more group")


def _could_run(p: AccelosProblem, n: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For kernels ``rows`` (i) against every kernel j: the groups i could run in j's bundle
    scaled by s_i / s_j, min_r floor((s_i / s_j) n_j d_jr / d_ir), capped at N_i."""
    bundle = n[:, None] * p.demand                                   # (K, 3)
    scale = p.share[rows, None] / p.share[None, :]                   # (b, K)
    d = p.demand[rows]                                               # (b, 3)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(d[:, None, :] > 0,
                       np.floor(scale[..., None] * bundle[None] / d[:, None, :] * (1 + RTOL)),
                       np.inf)
    return np.minimum(per.min(axis=2), p.groups[rows, None])


def envy_freeness(p: AccelosProblem, allocation: Allocation, **_) -> Finding:
    """No kernel i could run more of its groups with kernel j's threads, local memory and
    registers (scaled by s_i / s_j) than it has, min_r floor((s_i/s_j) n_j d_jr / d_ir) > n_i
    (capped at N_i: a kernel with its whole NDRange envies nobody). A kernel enters this only
    through its demand, NDRange and share, so each class of alike kernels values the K
    bundles once (``best_of_others``: classes x K values, not K^2). The witness is the pair
    with the most groups to gain, the first by envier then envied among equals."""
    n = _groups(allocation)
    could = best_of_others(lambda rows: _could_run(p, n, rows),
                           np.column_stack([p.demand, p.groups, p.share]), ENVY_BLOCK)
    gain = could - n
    i = int(np.argmax(gain))
    if gain[i] > 0:
        theirs = _could_run(p, n, np.array([i]))[0]
        j = int(np.argmax((theirs - n[i] == gain[i]) & (np.arange(p.kernel_count) != i)))
        return Finding("envy_freeness", False,
                       f"{p.ids[i]} envies {p.ids[j]}: {theirs[j]:g} of its groups fit in "
                       f"{p.ids[j]}'s (share-scaled) bundle, it has {n[i]:g}",
                       {"kernel": p.ids[i], "envies": p.ids[j], "work_groups": n[i],
                        "in_their_bundle": float(theirs[j])})
    return Finding("envy_freeness", True, "no kernel fits more groups in another's "
                   "share-scaled bundle of threads, local memory and registers")


def max_min(p: AccelosProblem, allocation: Allocation, **_) -> Finding:
    """The smallest weighted dominant share equals the max-min over whole-group allocations
    with 1 <= n_i <= N_i within the device (``max_min_level``: exact at any size, no ILP)."""
    low = float(weighted_dominant_share(p, _groups(allocation)).min())
    best, counts = max_min_level(p)
    if best > low * (1 + RTOL):
        return Finding("max_min", False, f"smallest weighted dominant share {low:.6g}, but "
                       f"{best:.6g} is reachable", {"minimum": low, "max_min": best,
                       "work_groups": dict(zip(p.ids, counts.tolist()))})
    return Finding("max_min", True,
                   f"smallest weighted dominant share {low:.6g} equals the exact max-min")

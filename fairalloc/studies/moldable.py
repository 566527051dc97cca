"""Random moldable workloads: section V of the offload paper, as ``random_spec`` and as the
preset ``fairalloc experiment moldable``.

n jobs on m processors with z in [1, 100], a in [beta/2, beta], x = a z, W = (1 - a) z and chi
uniform in [1, m]; each method's makespan is divided by ``models.moldable.lower_bound`` (the
kind's ``bound``; the paper divides by a bound derived from its Impl-B run instead, ours needs
no particular method).
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np

from fairalloc import arguments as arg
from fairalloc.contract import Experiment, Parameter

Speedup = Literal["linear", "two-phase"]     # a study's generate.speedup is one of these


def two_phase_work(W: float, chi: int) -> list[float]:
    """A two-phase work table: linear speedup up to h = max(1, chi // 2) processors, then each
    further processor adds half as much: w(k) = W for k <= h, W * 2k / (k + h) beyond.

    The paper's eq. 29 (w(k) = a k up to chi/2, 2 a k beyond) makes w(k)/k *grow* with k,
    breaking its own assumption (ii) of section II; this is our reading of "two phases" that
    keeps both assumptions (w non-decreasing, w(k)/k non-increasing).

    >>> [round(v, 3) for v in two_phase_work(12.0, 4)]
    [12.0, 12.0, 14.4, 16.0]
    """
    h = max(1, chi // 2)
    return [W if k <= h else W * 2 * k / (k + h) for k in range(1, chi + 1)]


def random_spec(seed: int, jobs: int = 10, processors: int = 8, beta: float = 0.5,
                speedup: Speedup = "linear") -> dict:
    """One random spec of section V: ``jobs`` jobs on ``processors``, offload share in
    [beta/2, beta], ``linear`` or ``two-phase`` speedup (seeded: every process makes the same).

    >>> spec = random_spec(1, jobs=3, processors=4)
    >>> [job["max_parallelism"] for job in spec["jobs"]]
    [4, 4, 2]
    """
    if speedup not in get_args(Speedup):
        raise ValueError(f"unknown speedup {speedup!r} (known: {', '.join(get_args(Speedup))})")
    rng = np.random.default_rng(seed)
    z = rng.integers(1, 101, jobs).astype(float)
    a = rng.uniform(beta / 2, beta, jobs)
    chi = rng.integers(1, processors + 1, jobs)
    out = []
    for i in range(jobs):
        W = float((1 - a[i]) * z[i])
        work = W if speedup == "linear" else two_phase_work(W, int(chi[i]))
        out.append({"id": f"j{i}", "offload": float(a[i] * z[i]),
                    "max_parallelism": int(chi[i]), "work": work})
    return {"problem": "moldable", "processors": processors, "jobs": out}


def study(seed: int, jobs: int, processors: int, beta: float, speedup: str,
          instances: int) -> dict:
    """The section V study: ``instances`` random instances, every heuristic (the exact method
    only when asked for: proven optima are for small instances), makespan / lower bound
    (``specs/studies/moldable-section-v.json`` is its default as a file)."""
    return {"study": "moldable-section-v", "kind": "moldable",
            "summary": "section V of the offload paper: makespan / lower bound of each method",
            "instances": {"generate": {"jobs": jobs, "processors": processors, "beta": beta,
                                       "speedup": speedup}, "count": instances},
            "methods": ["gpusched1-star", "gpusched1", "gpusched2", "work-conserving",
                        "offload-then-list", "impl-b"],
            "reference": "lower_bound", "seed": seed}


def _title(seed: int, jobs: int, processors: int, beta: float, speedup: str,
           instances: int) -> str:
    return (f"moldable: {jobs} jobs, m = {processors}, beta = {beta}, {speedup} speedup, "
            f"{instances} instances (seed {seed}): makespan / lower bound")


EXPERIMENT = Experiment(
    summary="section V of the offload paper: makespan / lower bound of each method",
    parameters=(
        Parameter("jobs", arg.whole(1, 10**5), 20, "jobs per instance (n)"),
        Parameter("processors", arg.whole(1, 2**20), 8, "m"),
        Parameter("beta", arg.fraction, 0.5, "offload share: a in [beta/2, beta], x = a z"),
        Parameter("speedup", str, "linear", "work tables", choices=get_args(Speedup)),
        Parameter("instances", arg.whole(1, 10**6), 100, "random instances"),
    ),
    study=study,
    values={"ratio": "makespan / lower bound (ratio)"},
    title=_title,
)

"""The papers' simulation experiments: random workloads, every method, ratio statistics.

``fairalloc experiment moldable`` reproduces section V of the offload paper: n jobs on m
processors with z in [1, 100], a in [beta/2, beta], x = a z, W = (1 - a) z and chi uniform in
[1, m]; each method's makespan is divided by ``models.moldable.lower_bound`` (the paper divides
by a bound derived from its Impl-B run instead; ours needs no particular method).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from functools import partial

import numpy as np


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


def moldable_instance(seed: int, n: int, m: int, beta: float, speedup: str) -> dict:
    """One random spec of section V (seeded, so that every process makes the same one)."""
    rng = np.random.default_rng(seed)
    z = rng.integers(1, 101, n).astype(float)
    a = rng.uniform(beta / 2, beta, n)
    chi = rng.integers(1, m + 1, n)
    jobs = []
    for i in range(n):
        W = float((1 - a[i]) * z[i])
        work = W if speedup == "linear" else two_phase_work(W, int(chi[i]))
        jobs.append({"id": f"j{i}", "offload": float(a[i] * z[i]),
                     "max_parallelism": int(chi[i]), "work": work})
    return {"problem": "moldable", "processors": m, "jobs": jobs}


def _ratios(spec: dict, methods: Sequence[str]) -> dict[str, float]:
    """Makespan / lower bound of each method on one instance (runs in a worker process)."""
    from fairalloc.api import load_spec, solve
    from fairalloc.models.moldable import lower_bound

    loaded = load_spec(spec)
    lb = lower_bound(loaded.problem)
    return {m: solve(loaded, m, validate=False).objective / lb for m in methods}


def run_moldable(
    n: int, m: int, beta: float, speedup: str, instances: int, seed: int,
    methods: Sequence[str], workers: int | None = None,
    on_done: Callable[[], None] | None = None,
) -> dict[str, np.ndarray]:
    """Ratios makespan / lower bound per method over ``instances`` random instances, computed
    on a local process pool (``workers`` processes; 1 runs in this process)."""
    specs = [moldable_instance(seed + k, n, m, beta, speedup) for k in range(instances)]
    results = parallel_map(partial(_ratios, methods=methods), specs, workers, on_done)
    out: dict[str, list[float]] = {name: [] for name in methods}
    for r in results:
        for name in methods:
            out[name].append(r[name])
    return {name: np.array(values) for name, values in out.items()}


def summary(ratios: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Mean and 10th / 50th / 90th percentiles of each method's ratios."""
    return {name: {"mean": float(r.mean()), "p10": float(np.percentile(r, 10)),
                   "p50": float(np.percentile(r, 50)), "p90": float(np.percentile(r, 90))}
            for name, r in ratios.items()}


def parallel_map(fn: Callable, items: Sequence, workers: int | None = None,
                 on_done: Callable[[], None] | None = None) -> list:
    """[fn(item) for item in items] on a local process pool (``workers`` processes, default one
    per core; 1 runs in this process), in order; ``on_done`` after each item."""
    workers = workers or min(os.cpu_count() or 1, len(items))
    if workers <= 1:
        results = []
        for item in items:
            results.append(fn(item))
            if on_done:
                on_done()
        return results
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(fn, item): k for k, item in enumerate(items)}
        by_index = {}
        for future in as_completed(futures):
            by_index[futures[future]] = future.result()
            if on_done:
                on_done()
    return [by_index[k] for k in range(len(items))]

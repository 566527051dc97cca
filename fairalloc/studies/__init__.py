"""Studies over many instances: one runner and one summary for every kind's preset experiment
(``Kind.experiment``), on a local process pool.

Each kind's instance generators, presets and simulations live in ``studies/<kind>.py``; this
module names no kind.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np

from fairalloc.contract import Experiment

Values = dict[str, dict[str, np.ndarray]]   # value name -> "group method" -> one per instance


def percentiles(values: np.ndarray, baseline: float | None = None) -> dict[str, float]:
    """Mean and 10th / 50th / 90th percentiles of ``values`` and, with a baseline, the
    fraction above it.

    >>> percentiles(np.array([1.0, 2.0, 3.0]), baseline=1.5)
    {'mean': 2.0, 'p10': 1.2, 'p50': 2.0, 'p90': 2.8, 'above_1.5': 0.6666666666666666}
    """
    out = {"mean": float(values.mean()), "p10": float(np.percentile(values, 10)),
           "p50": float(np.percentile(values, 50)), "p90": float(np.percentile(values, 90))}
    if baseline is not None:
        out[f"above_{baseline:g}"] = float((values > baseline).mean())
    return out


def summary(values: Values, baseline: float | None = None) -> dict[str, dict[str, dict]]:
    """Per value and label: its ``percentiles``."""
    return {key: {label: percentiles(v, baseline) for label, v in by.items()}
            for key, by in values.items()}


def _measure(job: tuple[str, dict, str, tuple[str, ...]]) -> dict[str, dict[str, float]]:
    """Every method's values on one instance: {method: {value: number}} (runs in a worker)."""
    from fairalloc.api import load_spec, solve
    from fairalloc.registry import KINDS

    kind_name, spec, _, methods = job
    measure = KINDS[kind_name].experiment.measure
    loaded = load_spec(spec)
    return {m: measure(loaded.problem, solve(loaded, m, validate=False)) for m in methods}


def run_experiment(kind_name: str, experiment: Experiment, instances: list[tuple[str, dict]],
                   methods: Sequence[str], workers: int | None = None,
                   on_done: Callable[[], None] | None = None) -> Values:
    """Solve every instance (``experiment.instances``: (group, spec) pairs) with every method;
    value -> "group method" -> an array of one number per instance, in instance order."""
    jobs = [(kind_name, spec, group, tuple(methods)) for group, spec in instances]
    results = parallel_map(_measure, jobs, workers, on_done)
    out: dict[str, dict[str, list[float]]] = {key: {} for key in experiment.values}
    for (_, _, group, _), result in zip(jobs, results):
        for method, values in result.items():
            label = f"{group} {method}" if group else method
            for key in experiment.values:
                out[key].setdefault(label, []).append(values[key])
    return {key: {label: np.array(v) for label, v in by.items()} for key, by in out.items()}


def parallel_map(fn: Callable, items: Sequence, workers: int | None = None,
                 on_done: Callable[[], None] | None = None) -> list:
    """[fn(item) for item in items] on a local process pool (``workers`` processes, default one
    per core; 1 runs in this process), in order; ``on_done`` after each item."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

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

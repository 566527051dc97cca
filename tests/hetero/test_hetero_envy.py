"""hetero envy-freeness against its definition, pair by pair, on random small instances:
the same verdict and the same witness (the pair whose value most exceeds the envier's own
throughput, the first by envier then envied among equals), ties included."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc
from fairalloc.checks.hetero import envy_freeness
from fairalloc.models.hetero import RTOL, isolated_throughput
from fairalloc.studies.hetero import random_spec


def bundle_value(p, x, i, j) -> float:
    """Job i's steps/s from job j's GPU time scaled by w_i / w_j: time s_j x_jk / s_i on each
    type i fits on, at most 1 in all, its best types first."""
    time = x[j] * p.scale[j] / p.scale[i] * p.weights[i] / p.weights[j]
    fits = p.scale[i] <= p.workers
    left, value = 1.0, 0.0
    for k in sorted(range(p.k), key=lambda k: (-p.throughput[i, k], k)):
        if fits[k] and left > 0:
            take = min(time[k], left)
            value += take * p.throughput[i, k]
            left -= take
    return value


def reference(p, x):
    """(envious, envied) of the worst envy, or None: every ordered pair; envy is a value
    above E_i by more than RTOL of the larger of E_i and E_i^iso."""
    e = (p.throughput * x).sum(axis=1)
    iso = isolated_throughput(p)
    worst, pair = 0.0, None
    for i in range(p.n):
        for j in range(p.n):
            value = bundle_value(p, x, i, j)
            envies = value > e[i] + RTOL * max(e[i], iso[i])
            if i != j and envies and value / max(e[i], 1e-300) > worst:
                worst, pair = value / max(e[i], 1e-300), (p.ids[i], p.ids[j])
    return pair


def allocations(p, rng):
    """Random time fractions, some on a grid of quarters (ties), some with many jobs alike in
    what they get, none at all, and each job on its own best type alone."""
    x = rng.random((p.n, p.k)) * (rng.random((p.n, p.k)) < 0.6)
    yield x / np.maximum(1.0, x.sum(axis=1, keepdims=True))
    yield np.round(x * 4) / 4 / np.maximum(1.0, np.round(x * 4).sum(axis=1, keepdims=True) / 4)
    alike = x.copy()
    alike[: p.n // 2] = x[0]
    yield alike / np.maximum(1.0, alike.sum(axis=1, keepdims=True))
    yield np.zeros_like(x)
    yield (p.throughput == p.throughput.max(axis=1, keepdims=True)).astype(float) / p.k


@pytest.mark.parametrize("seed", range(40))
def test_envy_matches_the_pairwise_definition(seed):
    rng = np.random.default_rng(seed)
    spec = random_spec(seed, jobs=int(rng.integers(1, 16)), workers=int(rng.integers(1, 9)),
                       weighted=bool(seed % 2))
    if seed % 3 == 0:                        # jobs alike: the same model, scale and weight
        spec["jobs"][1::2] = [{**spec["jobs"][0], "id": job["id"]}
                              for job in spec["jobs"][1::2]]
    p = fairalloc.load_spec(spec).problem
    for x in allocations(p, rng):
        found = envy_freeness(p, p.allocation(x))
        expected = reference(p, x)
        if expected is None:
            assert found.verdict == "holds"
        else:
            assert found.verdict == "fails"
            assert (found.witness["envious"], found.witness["envied"]) == expected


def test_envy_is_relative_to_the_jobs_throughput():
    """j0 makes 2e-9 steps/s alone and 0.5e-9 from its quarter of the time; from j1's three
    quarters it would make 1.5e-9, three times as much: envy at any unit of steps (an
    absolute 1e-7 steps/s in the tolerance said "holds" here)."""
    spec = {"problem": "hetero", "workers": {"k80": 1},
            "jobs": [{"id": "j0", "throughput": {"k80": 2e-9}},
                     {"id": "j1", "throughput": {"k80": 1e-9}}]}
    p = fairalloc.load_spec(spec).problem
    found = envy_freeness(p, p.allocation(np.array([[0.25], [0.75]])))
    assert found.verdict == "fails"
    assert (found.witness["envious"], found.witness["envied"]) == ("j0", "j1")

"""accelOS envy-freeness against its definition, pair by pair, on random allocations of
random mixes (kernels drawn with repetition, so many alike): the same verdict and the same
witness (the most groups to gain, the first by envier then envied among equals)."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc
from fairalloc.checks.accelos import envy_freeness
from fairalloc.models.accelos import RTOL
from fairalloc.studies.accelos import random_spec


def reference(p, n):
    """(envier, envied, groups it could run) of the largest gain, or None: every pair."""
    worst, found = 0.0, None
    for i in range(p.kernel_count):
        for j in range(p.kernel_count):
            scale = p.share[i] / p.share[j]
            fit = min((np.floor(scale * (n[j] * p.demand[j, r]) / p.demand[i, r] * (1 + RTOL))
                       for r in range(3) if p.demand[i, r] > 0), default=np.inf)
            could = min(fit, p.groups[i])
            if i != j and could - n[i] > worst:
                worst, found = could - n[i], (p.ids[i], p.ids[j], float(could))
    return found


@pytest.mark.parametrize("seed", range(30))
def test_envy_matches_the_pairwise_definition(seed):
    rng = np.random.default_rng(seed)
    p = fairalloc.load_spec(random_spec(seed, kernels=int(rng.integers(1, 14)))).problem
    few = np.minimum(p.groups, rng.integers(0, 4, p.groups.size))     # many ties
    for n in (rng.integers(0, p.groups + 1), few, np.zeros(p.kernel_count), p.groups.copy()):
        n = n.astype(float)
        found = envy_freeness(p, p.allocation(n))
        expected = reference(p, n)
        if expected is None:
            assert found.verdict == "holds"
        else:
            assert found.verdict == "fails"
            w = found.witness
            assert (w["kernel"], w["envies"], w["in_their_bundle"]) == expected

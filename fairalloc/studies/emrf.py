"""Random EMRF instances (``random_spec``): shared by tests, benchmarks and studies."""

from __future__ import annotations

import numpy as np

# ~10 distinct splits over 2 devices (the paper's cpu/gpu pair, GFLOPS capacities 100/800 per
# 10 users); the gpu fraction is written so that the two sum to exactly 1.0 in floating point
CPU_FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def random_spec(seed: int, users: int = 10, knob: float = 0.5,
                formulation: str | None = None) -> dict:
    """A random EMRF spec of ``users`` users: 2 devices, each user's split one of 10 ratios,
    weights uniform in [0.5, 4) (2 decimals), knob 0.5."""
    n = users
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, len(CPU_FRACTIONS), n).tolist()
    weight = np.round(rng.uniform(0.5, 4.0, n), 2).tolist()
    splits = [{"cpu": c, "gpu": 1.0 - c} for c in CPU_FRACTIONS]
    users = [{"id": f"u{i}", "weight": weight[i], "split": dict(splits[kind[i]])}
             for i in range(n)]
    spec = {
        "problem": "emrf",
        "name": f"random emrf, {n} users",
        "capacity": {"cpu": 10.0 * n, "gpu": 80.0 * n},
        "knob": knob,
        "users": users,
    }
    if formulation:
        spec["options"] = {"formulation": formulation}
    return spec

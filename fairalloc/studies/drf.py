"""Random DRF instances (``random_spec``): shared by tests, benchmarks and studies."""

from __future__ import annotations

import numpy as np

RESOURCES = ("cpu", "mem", "disk", "net")
# capacity per user for each resource: cpu is the scarcest, so the first saturation ("stop")
# and Ghodsi's filling ("continue") end in different places
CAPACITY_PER_USER = (1.5, 2.5, 4.0, 6.0)


def random_spec(seed: int, users: int = 10, divisible: bool = True, saturation: str = "continue",
                types: int | None = None) -> dict:
    """A random DRF spec of ``users`` users: 4 resources; each user needs a resource with
    probability 3/4 (and at least one), in an amount uniform in [0.1, 4) per task (3 decimals);
    weights uniform in [0.5, 4) (2 decimals); ~10% of users with max_tasks in 1..5. Resources a
    user does not need are left out of its demand, so users of a saturated resource freeze
    while others go on.

    ``types``: draw the demand vectors from that many task types instead (a cluster with a few
    job shapes)."""
    n = users
    rng = np.random.default_rng(seed)
    D = len(RESOURCES)

    def demands(rng, count):
        amount = np.round(rng.uniform(0.1, 4.0, (count, D)), 3)
        needs = rng.random((count, D)) < 0.75
        needs[np.arange(count), rng.integers(0, D, count)] = True
        return np.where(needs, amount, 0.0)

    demand = demands(rng, n)
    weight = np.round(rng.uniform(0.5, 4.0, n), 2)
    capped = rng.random(n) < 0.10
    caps = rng.integers(1, 6, n)
    if types:
        demand = demands(np.random.default_rng(seed + 1), types)[rng.integers(0, types, n)]
    demand_l, weight_l = demand.tolist(), weight.tolist()
    users = []
    for i in range(n):
        user = {"id": f"u{i}", "weight": weight_l[i],
                "demand": {r: a for r, a in zip(RESOURCES, demand_l[i]) if a > 0}}
        if capped[i]:
            user["max_tasks"] = int(caps[i])
        users.append(user)
    return {
        "problem": "drf",
        "name": f"random drf, {n} users",
        "capacity": {r: round(c * n, 6) for r, c in zip(RESOURCES, CAPACITY_PER_USER)},
        "users": users,
        "divisible": divisible,
        "saturation": saturation,
    }

"""Random ETF instances (``random_spec``): shared by tests, benchmarks and studies."""

from __future__ import annotations

import numpy as np

PHI = 0.5


def random_spec(seed: int, apps: int = 10, quantum: int = 1000, phi: float = PHI) -> dict:
    """A random ETF spec of ``apps`` apps sharing ``quantum`` slices: powers whole watts uniform
    in 50..300, weights 1, 2 or 3 (whole numbers, so that weighted energies often tie and the
    tie-break is exercised), ~10% of apps with a demand log-uniform in 1..1e5 slices, phi 0.5.
    The apps depend on their number and the seed only, so the same apps can be given different
    quanta."""
    n = apps
    rng = np.random.default_rng(seed)
    power = rng.integers(50, 301, n).tolist()
    weight = rng.integers(1, 4, n).tolist()
    limited = rng.random(n) < 0.10
    demand = np.floor(10 ** rng.uniform(0.0, 5.0, n)).astype(np.int64).tolist()
    rows = []
    for i in range(n):
        app = {"id": f"a{i}", "weight": weight[i], "power": power[i]}
        if limited[i]:
            app["demand"] = demand[i]
        rows.append(app)
    return {
        "problem": "etf",
        "name": f"random etf, {n} apps, T = {quantum}",
        "quantum": int(quantum),
        "phi": phi,
        "apps": rows,
    }

"""Random hetero instances (``random_spec``): jobs drawn from Gavel's measured table."""

from __future__ import annotations

import numpy as np

from fairalloc.models.hetero import measured

SCALES = (1, 1, 1, 1, 2, 2, 4, 8)      # most jobs on one GPU, a few on 2, 4 or 8


def random_spec(seed: int, jobs: int = 12, workers: int = 12, weighted: bool = False,
                finish_time: bool = True) -> dict:
    """``jobs`` jobs of random model configurations of the measured table (each at a scale
    factor of 1, 2, 4 or 8 that the table has and the cluster fits) on a cluster of
    ``workers`` K80s, P100s and V100s; weights 1..3 when ``weighted``; steps remaining
    log-uniform in 1e4..1e6 and time elapsed uniform in 0..1 day for finish-time fairness."""
    if workers < 1:         # no job fits: drawing one until it does would never end
        raise ValueError(f"workers must be at least 1, not {workers}")
    rng = np.random.default_rng(seed)
    table = measured()
    rows = []
    for i in range(jobs):
        while True:
            scale = int(SCALES[rng.integers(len(SCALES))])
            options = sorted(m for m, s in table if s == scale)
            if scale <= workers and options:
                break
        job = {"id": f"j{i}", "model": options[rng.integers(len(options))],
               "scale_factor": scale}
        if weighted:
            job["weight"] = int(rng.integers(1, 4))
        if finish_time:
            job["steps_remaining"] = float(np.round(10 ** rng.uniform(4, 6)))
            job["time_elapsed"] = float(np.round(rng.uniform(0, 86400)))
        rows.append(job)
    return {"problem": "hetero", "name": f"random hetero, {jobs} jobs on {3 * workers} GPUs",
            "workers": {"k80": workers, "p100": workers, "v100": workers}, "jobs": rows}

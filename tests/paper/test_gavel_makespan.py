"""Gavel's makespan table (OSDI 2020, ``makespan.ipynb``): multi-GPU jobs all at time 0 on 36
V100 + 36 P100 + 36 K80, Gavel's rounds, the makespan averaged over seeds 0-2 (what the notebook
prints: the mean over its logs of those seeds) — replayed on Gavel's own jobs for each seed
(the generator's "gavel" stream, the rounds' order of types for that seed).

Reduced for speed: 100 and 400 jobs (a few CPU seconds for all six replays); the printed
sizes up to 700 reproduce the same way (measured: 162.4 / 162.6 / 242.2 h at 100 / 400 / 700
jobs against 161.2 / 161.3 / 244.2).

FIFO's printed row is not compared: Gavel's current code does not give it. Its simulator run
here takes seed 0 at 100 jobs to 660.8 h (its FIFO places a job of 141 h on a V100 on the
K80s, where it takes 660 h), and fairalloc's ``fifo`` follows it draw for draw to 660.7 h
(``test_gavel_fifo_reruns.py``); the mean of seeds 0-2 is then 339.7 h against the printed 182.3
(seeds 1 and 2 alone: 175.9 and 182.4 h)."""

from __future__ import annotations

import pytest
from gavel_makespan import MAKESPAN, MAKESPAN_SEEDS

from fairalloc import api


def makespan_document(policy: str, jobs: int, seed: int) -> dict:
    return {"replay": f"gavel-makespan-{policy}-{jobs}", "kind": "hetero",
            "cluster": {"workers": {"v100": 36, "p100": 36, "k80": 36}},
            "trace": {"generator": "static", "seed": seed, "jobs": jobs, "multi_gpu": True,
                      "stream": "gavel"},
            "policy": {"method": policy},
            "mechanism": {"name": "rounds", "round_s": 360, "reset_s": 1920, "seed": seed,
                          "stream": "gavel"},
            "measure": {"finish_time_fairness": False}}


def mean_makespan_hours(policy: str, jobs: int) -> float:
    spans = []
    for seed in MAKESPAN_SEEDS:
        run = api.replay(makespan_document(policy, jobs, seed))
        assert run.status == "done" and run.summary["finished"] == jobs
        spans.append(run.summary["makespan_s"] / 3600)
    return sum(spans) / len(spans)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [100, 400])
def test_makespan_within_ten_percent(jobs):
    policy = "min-total-duration"
    assert mean_makespan_hours(policy, jobs) == pytest.approx(MAKESPAN[policy][jobs], rel=0.10)

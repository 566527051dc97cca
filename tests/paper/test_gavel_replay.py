"""Gavel's figure 8 (OSDI 2020): LAS agnostic and aware of heterogeneity on a continuous trace
of single-GPU jobs, 36 V100 + 36 P100 + 36 K80, rounds of 360 s, the average JCT of jobs
4000-5000 — replayed on Gavel's own jobs for its seed 0 (the generator's "gavel" stream).

Reduced for speed: both LASes at one input rate (3.2 jobs/hour, below the knee), about 20 s
of one core for the aware one (an LP per allocation) and 2 s for the agnostic one
(progressive filling, no LP). The whole sweep (both policies x 14 rates, and the
agnostic/aware ratio at 5.6 jobs/hour) is ``python benchmarks/run.py --only replay``. The
window is Gavel's: a smaller one is not comparable with the published values.

Finish-time fairness (cell 11 of the same notebook) at the same rate: the average rho of the
window's jobs, each job's JCT over its JCT under the isolated policy on the same trace and
rounds, as Gavel's notebook measures it (about 20 s more for the isolated replay)."""

from __future__ import annotations

import pytest
from gavel_figure8 import FIGURE_8, FIGURE_8_FTF, FIGURE_8_RHO

from fairalloc import api
from fairalloc.replay.hetero import figure_8_document

RATE = 3.2


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["max-min", "agnostic-max-min"])
def test_figure_8_point_within_ten_percent(policy):
    run = api.replay(figure_8_document(policy, RATE, jobs=6_000))
    assert run.status == "done"
    assert not run.summary["arrivals_ended_first"]
    jct_hours = run.summary["average_jct_s"] / 3600
    assert jct_hours == pytest.approx(FIGURE_8[policy][RATE], rel=0.10)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["max-min", "agnostic-max-min"])
def test_figure_8_finish_time_fairness_within_ten_percent(policy):
    document = figure_8_document(policy, RATE, jobs=6_000)
    document["measure"]["finish_time_fairness"] = True
    run = api.replay(document)
    assert run.status == "done"
    assert run.summary["rho_measured"] == 1000
    assert run.summary["average_rho"] == pytest.approx(FIGURE_8_RHO[policy][RATE], rel=0.10)


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["agnostic-finish-time", "finish-time"])
def test_figure_8_finish_time_point_within_ten_percent(policy):
    """Gavel's finish-time fairness policies at the same point, with Gavel's cumulative
    isolated time: ``finish_time_fairness`` (agnostic) 23.73 h against the printed 23.58
    (+0.6%), ``finish_time_fairness_perf`` (``finish-time``) 15.99 h against 16.57 (-3.5%),
    about 30 s of one core each."""
    run = api.replay(figure_8_document(policy, RATE, jobs=6_000))
    assert run.status == "done"
    assert not run.summary["arrivals_ended_first"]
    jct_hours = run.summary["average_jct_s"] / 3600
    assert jct_hours == pytest.approx(FIGURE_8_FTF[policy][RATE], rel=0.10)

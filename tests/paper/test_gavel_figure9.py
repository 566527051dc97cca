"""Gavel's figure 9 (OSDI 2020, ``continuous_jobs_multigpu.ipynb``, cells 10 and 11): policies
on a continuous trace of multi-GPU jobs (Philly's scale factors 1/2/4/8), 36 V100 + 36 P100 +
36 K80, rounds of 360 s, the average JCT of jobs 4000-4999 — replayed on Gavel's own jobs for
its seed 0, as the study ``specs/studies/gavel-fig9.json`` runs them (its base document
``specs/replay/fig9-gavel-stream.json``, at one rate and policy per test).

Reduced for speed: single points of the study's 60 (docs/replay.md has them all). A point
within 10% of Gavel's printed value is pinned to it; a point that is not is pinned to Gavel's
own simulator re-run on this machine on the same jobs (``FIGURE_9_RERUN``), when within 10% of
that, saying why (``fifo`` is pinned to Gavel's run in ``test_gavel_fifo_reruns.py``); a point
is pinned by adding one line to ``JCT_POINTS``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gavel_figure9 import FIGURE_9, FIGURE_9_RERUN, FIGURE_9_RHO

from fairalloc import api
from fairalloc.replay.hetero import GAVEL_OPTIONS
from fairalloc.studies.plan import with_policy

BASE = Path(__file__).resolve().parents[2] / "specs" / "replay" / "fig9-gavel-stream.json"
# the packing policies' base (specs/studies/gavel-fig9-packed.json): max-min-packed at the
# centre of its optimal face
PACKED = BASE.with_name("fig9-packed.json")
BASES = {"max-min-packed": PACKED, "fifo-packed": PACKED}

# (policy, rate, the reference pinned to), one line a point
JCT_POINTS = [
    # 26.7 h against the printed 28.91 (-7.8%)
    pytest.param("agnostic-max-min", 2.0, FIGURE_9["agnostic-max-min"][2.0],
                 id="agnostic-max-min-2.0"),
    # past the knee the printed 38.71 h is not met (34.27 h, -11.5%): Gavel's own code run here
    # on the same jobs gives 34.29 h (-0.1% to it), itself 11% below what Gavel printed
    pytest.param("agnostic-max-min", 2.4, FIGURE_9_RERUN["agnostic-max-min"][2.4],
                 id="agnostic-max-min-2.4"),
    # the printed 27.68 h is not met (22.09 h, -20%): Gavel's own code run here on the same
    # jobs gives 22.12 h (-0.1% to it, per-job median ratio 1.001), 20% below what it
    # printed, as LAS's runs are 6-8% below
    pytest.param("fifo-aware", 2.0, FIGURE_9_RERUN["fifo-aware"][2.0], id="fifo-aware-2.0"),
    # past the knee: 95.99 h against the printed 93.60 (+2.6%) and Gavel's run's 96.25 h, where
    # a queue held by a job that cannot run on the K80s with room gave 140.2 h (+50%)
    pytest.param("fifo-aware", 2.6, FIGURE_9["fifo-aware"][2.6], id="fifo-aware-2.6"),
    # Gavel's max-min at the centre of its optimal face (the base document's point): 19.35 h,
    # -4.5% of Gavel's own run here (20.26 h), which is 7.5% below the printed 21.90 h; the
    # efficient point gave 17.63 h (-13%)
    pytest.param("max-min", 2.0, FIGURE_9_RERUN["max-min"][2.0], id="max-min-2.0"),
    # space sharing at the lowest rate Gavel prints, on the packing preset's base: the
    # preset's centre gives 17.98 h (-3.9%) in 223 s of CPU, so the pin takes the efficient
    # point (PINNED_AT: 17.82 h, -4.8%, 68 s), which differs from the centre past the knee
    # only; fifo-packed 16.07 h, -5.0%, 23 s. At 2.0 jobs/hour the centre gives 19.74 h
    # against 20.85 (-5.3%; the efficient point 17.61, -15.5%) in 601 s (docs/replay.md)
    pytest.param("max-min-packed", 0.2, FIGURE_9["max-min-packed"][0.2],
                 id="max-min-packed-0.2-efficient"),
    pytest.param("fifo-packed", 0.2, FIGURE_9["fifo-packed"][0.2], id="fifo-packed-0.2"),
    # the printed 27.34 h is not met (22.03 h, -19.4%): Gavel's own code run here on the same
    # jobs gives 21.88 h (+0.7% to it, per-job median ratio 1.003), 20% below its print
    pytest.param("fifo-packed", 2.0, FIGURE_9_RERUN["fifo-packed"][2.0], id="fifo-packed-2.0"),
    # Gavel's finish-time fairness policies with its cumulative isolated time, both at the
    # centre of their optimal face (the base document's point): finish-time 19.86 h against
    # the printed 21.80 (-8.9%; the efficient point gave 17.49 h, -19.8%), agnostic-finish-time
    # 24.86 h against 26.12 (-4.8%; at 2.4 jobs/hour 35.93 h against 38.65, where its leximin
    # point gave 32.76 h, -15.2%)
    pytest.param("finish-time", 2.0, FIGURE_9["finish-time"][2.0], id="finish-time-2.0"),
    pytest.param("agnostic-finish-time", 1.2, FIGURE_9["agnostic-finish-time"][1.2],
                 id="agnostic-finish-time-1.2"),
]
# the options a JCT point is pinned at where they differ from the preset's (CI's time)
PINNED_AT = {"max-min-packed": {"point": "efficient"}}
# (policy, rate, the rho pinned to, the average JCT pinned to in the same run or None)
RHO_POINTS = [
    pytest.param("agnostic-max-min", 1.2, FIGURE_9_RHO["agnostic-max-min"][1.2], None,
                 id="agnostic-max-min-1.2"),
    # Gandiva where it pairs jobs (the jobs ask for more GPUs than the cluster has): rho 0.900
    # against the printed 0.92 (-2.2%) and 22.99 h against 25.16 (-8.6%), 52 s of CPU with its
    # isolated reference
    pytest.param("gandiva", 2.0, FIGURE_9_RHO["gandiva"][2.0], FIGURE_9["gandiva"][2.0],
                 id="gandiva-2.0"),
]


def figure_9_point(policy: str, rate: float, finish_time_fairness: bool = False) -> dict:
    """The study's replay of one point: its base document at ``rate`` under ``policy``, with
    the options under which the policy is Gavel's (``GAVEL_OPTIONS``, as the study
    ``specs/studies/gavel-fig9-finish-time.json`` sets them)."""
    document = with_policy(json.loads(BASES.get(policy, BASE).read_text()), policy)
    document["policy"].update(GAVEL_OPTIONS.get(policy, {}))
    document["trace"]["rate"] = rate
    document["measure"]["finish_time_fairness"] = finish_time_fairness
    return document


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "rate", "hours"), JCT_POINTS)
def test_figure_9_point_within_ten_percent(policy, rate, hours):
    document = figure_9_point(policy, rate)
    document["policy"].update(PINNED_AT.get(policy, {}))
    run = api.replay(document)
    assert run.status == "done"
    assert not run.summary["arrivals_ended_first"]
    assert run.summary["window"]["finished"] == 1000
    assert run.summary["average_jct_s"] / 3600 == pytest.approx(hours, rel=0.10)


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "rate", "rho", "hours"), RHO_POINTS)
def test_figure_9_finish_time_fairness_within_ten_percent(policy, rate, rho, hours):
    run = api.replay(figure_9_point(policy, rate, finish_time_fairness=True))
    assert run.status == "done"
    assert run.summary["rho_measured"] == 1000
    assert run.summary["average_rho"] == pytest.approx(rho, rel=0.10)
    if hours is not None:       # the same run's average JCT: one replay pins both
        assert not run.summary["arrivals_ended_first"]
        assert run.summary["average_jct_s"] / 3600 == pytest.approx(hours, rel=0.10)

"""fairalloc's ``fifo`` against Gavel's own simulator re-run here (``gavel_fifo.py``,
``gavel_figure9_reruns.json``), where Gavel's printed FIFO values come from other code: the
makespan table's printed mean of seeds 0-2 is 182.3 h at 100 jobs, but Gavel's current code runs
seed 0 to 660.8 h (at 0.6 h it places the queue on the K80s, among them a job of 141 h on a V100
that takes 660 h there), as fairalloc's ``fifo`` does.

The makespan case is cheap (0.5 s): Gavel's simulator logs the same first two allocations,
job for job, as fairalloc's; the per-job JCTs have a median ratio of 1.000. Figure 9's point
replays Gavel's jobs until the window is done (about 25 s of one core): 33.76 h against the
re-run's 34.00 h, the per-job median ratio 1.005. Job by job the runs part at the first round
in which a type is over-committed: Gavel's jobs of one type differ in priority by its rounding
(a round gives whole steps, so each job is credited its own fraction of 360 s) and the highest
goes first, where fairalloc's (steps not rounded) tie and go in order of arrival."""

from __future__ import annotations

import pytest
from gavel_fifo import MAKESPAN_RERUN_H
from gavel_figure9 import FIGURE_9_RERUN
from test_gavel_figure9 import figure_9_point
from test_gavel_makespan import makespan_document

from fairalloc import api


@pytest.mark.parametrize(("jobs", "seed"), sorted(MAKESPAN_RERUN_H))
def test_makespan_as_gavels_simulator_runs_it(jobs, seed):
    run = api.replay(makespan_document("fifo", jobs, seed))
    assert run.status == "done" and run.summary["finished"] == jobs
    hours = run.summary["makespan_s"] / 3600
    assert hours == pytest.approx(MAKESPAN_RERUN_H[jobs, seed], rel=0.01)


# Gavel's fifo re-runs pinned one by one where a point is stable
PINNED_FIFO_RATES = (1.6, 2.0)
# Past the knee a point is not: at 2.2 jobs/hour fairalloc gives 58.60 h against Gavel's run's
# 68.11 (-14%), but moving the rate by 0.01 jobs/hour moves fairalloc's average between 49.8
# and 86.6 h and Gavel's between 57.9 and 68.1 h (which type a job waits for decides where
# the later ones are placed; docs/replay.md); their means over five rates 0.01 apart are what
# both runs say of the rate, as the preset specs/studies/gavel-fig9-fifo-near.json runs them
NEAR_2_2 = (2.18, 2.19, 2.2, 2.21, 2.22)


def fifo_hours(rate: float) -> float:
    """fairalloc's fifo on figure 9's point at ``rate``: the window's average JCT (h)."""
    run = api.replay(figure_9_point("fifo", rate))
    assert run.status == "done"
    assert not run.summary["arrivals_ended_first"]
    return run.summary["average_jct_s"] / 3600


@pytest.mark.slow
@pytest.mark.parametrize("rate", PINNED_FIFO_RATES)
def test_figure_9_point_as_gavels_simulator_runs_it(rate):
    assert fifo_hours(rate) == pytest.approx(FIGURE_9_RERUN["fifo"][rate], rel=0.10)


@pytest.mark.slow
def test_figure_9_past_the_knee_as_gavels_simulator_runs_it_over_five_rates():
    ours = [fifo_hours(rate) for rate in NEAR_2_2]
    theirs = [FIGURE_9_RERUN["fifo"][rate] for rate in NEAR_2_2]
    assert sum(ours) / len(ours) == pytest.approx(sum(theirs) / len(theirs), rel=0.10)

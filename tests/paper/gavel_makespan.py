"""Gavel's printed makespan table (OSDI 2020, multi-GPU static jobs, 36 V100 + 36 P100 + 36
K80), which the paper test compares against (papers' printed numbers live here, never in
library code).

scheduler/notebooks/figures/evaluation/makespan.ipynb, cell 10: the makespan in hours by number
of jobs, printed by ``df.groupby(["policy", "num_total_jobs"]).mean()`` over its logs, whose
``seed`` column prints 1 for every row: the mean of seeds 0, 1 and 2. "FIFO" is Gavel's
``fifo``, "Gavel" its ``min_total_duration_perf``. FIFO's row is kept as printed but not
compared: Gavel's current code gives another (``gavel_fifo.py``)."""

MAKESPAN_JOBS = (100, 200, 300, 400, 500, 600, 700)
MAKESPAN = {
    "fifo": dict(zip(MAKESPAN_JOBS, (182.319456, 229.430326, 295.563378, 350.496270,
                                     426.584611, 506.228073, 619.518289))),
    "min-total-duration": dict(zip(MAKESPAN_JOBS, (161.163998, 161.164065, 161.164303,
                                                   161.291139, 169.422498, 194.993833,
                                                   244.231470))),
}
MAKESPAN_SEEDS = (0, 1, 2)

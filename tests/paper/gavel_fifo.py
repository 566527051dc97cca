"""Gavel's own simulator re-run on this machine for its FIFO (``fifo``: ``FIFOPolicy`` in mode
base), the values fairalloc's ``fifo`` is compared against where the printed ones come from
other code (measurements, not printed numbers; they live here beside them).

Gavel's repository (stanford-futuredata/gavel, HEAD of the mirror) with its simulator set up
by shared/tools/gavel-sim/setup.sh:

the makespan experiment (``scripts/sweeps/run_sweep_static.py``'s call of ``simulate``: lam 0,
so every job at time 0; multi-GPU jobs; 36 V100 + 36 P100 + 36 K80; one GPU a server; rounds
of 360 s), 100 jobs, seed 0: makespan 660.8185 h (33.8 s of wall time). Its figure 9 re-runs
are with the other policies' in ``gavel_figure9_reruns.json``.
"""

MAKESPAN_RERUN_H = {(100, 0): 660.818502411133}       # (jobs, seed) -> makespan, hours

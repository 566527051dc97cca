"""The accelos kind: its record in the kind contract (``fairalloc.contract``)."""

from __future__ import annotations

from fairalloc.checks import accelos as checks
from fairalloc.contract import Kind
from fairalloc.models import accelos as model
from fairalloc.plots import accelos as plots
from fairalloc.solvers import accelos as solvers
from fairalloc.studies import accelos as studies

KIND = Kind(
    name="accelos",
    summary="accelOS: resident work groups of concurrent kernels on one accelerator",
    from_spec=model.AccelosProblem.from_spec,
    methods={"accelos": solvers.accelos, "ilp": solvers.ilp, "fcfs": solvers.fcfs,
             "equal-threads": solvers.equal_threads},
    default="accelos",
    exact="ilp",
    checks=(checks.feasibility, checks.all_resident, checks.pareto_efficiency,
                checks.envy_freeness, checks.max_min),
    random_spec=studies.random_spec,
    experiment=studies.EXPERIMENT,
    metrics=model.metrics,
    plot=plots.resources,
    sweep_metrics=("min_weighted_dominant_share", "jain_index", "fairness_improvement",
                   "throughput_speedup"),
    units={"objective": "min weighted dominant share (of the device)",
           "*_weighted_dominant_share": "weighted dominant share (of the device)",
           "utilization.*": "utilization (share of the device)", "jain_index": "Jain index (0–1)",
           "*_slowdown": "slowdown (×)", "unfairness": "max ÷ min slowdown (ratio)",
           "fairness_improvement": "fairness improvement (ratio to fcfs)",
           "throughput_speedup": "throughput speedup (ratio to fcfs)",
           "thread_spread": "spread (threads)", "makespan": "time (model units)",
           "antt": "ANTT (×)", "stp": "STP (sum of progress rates)", "overlap": "overlap (share)"},
    reference=("Christos Margiolas and Michael F. P. O'Boyle. *Portable and Transparent Software "
              "Managed Scheduling on Accelerators for Fair Resource Sharing.* CGO 2016 "
              "(International Symposium on Code Generation and Optimization), ACM, 82–93. "
              "https://doi.org/10.1145/2854038.2854040"),
)

"""The hetero kind: its record in the kind contract (``fairalloc.contract``)."""

from __future__ import annotations

from fairalloc.checks import hetero as checks
from fairalloc.contract import Kind, Replay
from fairalloc.models import hetero as model
from fairalloc.plots import hetero as plots
from fairalloc.replay import fairshare
from fairalloc.replay import hetero as replay
from fairalloc.replay import hetero_trace as replay_trace
from fairalloc.solvers import hetero as solvers
from fairalloc.studies import hetero as studies

METHODS = {"max-min": solvers.max_min, "max-min-isolated": solvers.max_min_isolated,
           "max-min-packed": solvers.max_min_packed, "leximin": solvers.leximin,
           "agnostic-max-min": solvers.agnostic_max_min,
           "max-throughput": solvers.max_throughput, "finish-time": solvers.finish_time,
           "agnostic-finish-time": solvers.agnostic_finish_time,
           "isolated": solvers.isolated, "proportional": solvers.proportional}

KIND = Kind(
    name="hetero",
    summary="heterogeneity-aware sharing of GPU types (Gavel): time on each type, fairness "
            "on effective throughput",
    from_spec=model.HeteroProblem.from_spec,
    methods=METHODS,
    default="max-min",
    exact="max-min-isolated",
    checks=(checks.feasibility, checks.sharing_incentive, checks.envy_freeness,
                checks.pareto_efficiency, checks.max_min, checks.strategy_proofness),
    random_spec=studies.random_spec,
    metrics=model.metrics,
    plot=plots.time_per_type,
    sweep_metrics=("min_normalized_throughput", "total_normalized_throughput",
                   "utilization.*"),
    tradeoff_sweep=("jobs[0].weight", 1, 4, 0.5),
    tradeoff=("min_normalized_throughput", "total_normalized_throughput"),
    units={"objective": "weighted normalised throughput (× isolated)",
           "min_normalized_throughput": "weighted normalised throughput (× isolated)",
           "total_normalized_throughput": "total normalised throughput (× isolated)",
           "total_throughput": "throughput (steps/s)", "utilization.*": "utilization (share)",
           "max_finish_time_ratio": "finish-time ratio (× isolated)",
           "jobs*.weight": "weight of the job (relative)"},
    replay=Replay(
        summary="GPU jobs arriving over time on worker types (Gavel's simulator: its "
                "generator, rounds mechanism and policies)",
        cluster=replay.cluster, resources=replay.resources, jobs=replay.jobs,
        work=replay.work, generators={"gavel": replay.gavel, "static": replay.static},
        problem=replay.problem, rates=replay.rates, usage=replay.usage,
        least=replay.least, mechanisms={"rounds": replay.rounds},
        policies={**replay.POLICIES, "fair-share": fairshare.policy(
            fairshare.field_weights("weights"), replay.usage, METHODS, "max-min")},
        aware=replay.AWARE, default_policy="max-min", table=replay_trace.read_hetero_trace,
        formats={"gavel": replay_trace.read_gavel_trace}, typed=replay_trace.assign_types,
        untyped=replay_trace.read_untyped_trace,
        example={"workers": {"v100": 2, "p100": 2, "k80": 2}},
        columns=replay_trace.listed_columns),
    reference=("Deepak Narayanan, Keshav Santhanam, Fiodar Kazhamiaka, Amar Phanishayee and Matei "
              "Zaharia. *Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning "
              "Workloads.* OSDI 2020, USENIX, 481–498."),
    also_exact={
        "max-min": "its own objective, Gavel's level min_j s_j E_j / (w_j P_j) (P_j: under "
                   "Gavel's proportional share)",
        "max-min-packed": "its own objective, Gavel's level of max-min over allocations "
                          "where two jobs may share a GPU (the spec's colocated)",
        "leximin": "the kind's objective and, beyond it, the leximin",
        "max-throughput": "its own objective, the total normalised throughput",
        "finish-time": "its own objective, the largest finish-time ratio, to a bracket of 1e-9",
    },
)

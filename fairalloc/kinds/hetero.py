"""The hetero kind: its record in the kind contract (``fairalloc.contract``)."""

from __future__ import annotations

from fairalloc.contract import Kind, Replay
from fairalloc.models import hetero as model
from fairalloc.replay import hetero as replay
from fairalloc.solvers import hetero as solvers
from fairalloc.studies import hetero as studies
from fairalloc.validators import hetero as checks

KIND = Kind(
    name="hetero",
    summary="heterogeneity-aware sharing of GPU types (Gavel): time on each type, fairness "
            "on effective throughput",
    from_spec=model.HeteroProblem.from_spec,
    methods={"max-min": solvers.max_min, "leximin": solvers.leximin,
             "agnostic-max-min": solvers.agnostic_max_min,
             "max-throughput": solvers.max_throughput, "finish-time": solvers.finish_time,
             "isolated": solvers.isolated, "proportional": solvers.proportional},
    default="max-min",
    exact="max-min",
    validators=(checks.feasibility, checks.sharing_incentive, checks.envy_freeness,
                checks.pareto_efficiency, checks.max_min, checks.strategy_proofness),
    random_spec=studies.random_spec,
    metrics=model.metrics,
    sweep_metrics=("min_normalized_throughput", "total_normalized_throughput",
                   "utilization.*"),
    knob=("jobs[0].weight", 1, 4, 0.5),
    tradeoff=("min_normalized_throughput", "total_normalized_throughput"),
    units={"objective": "weighted normalised throughput (× isolated)",
           "min_normalized_throughput": "weighted normalised throughput (× isolated)",
           "total_normalized_throughput": "total normalised throughput (× isolated)",
           "total_throughput": "throughput (steps/s)", "utilization.*": "utilization (share)",
           "max_finish_time_ratio": "finish-time ratio (× isolated)"},
    replay=Replay(
        summary="GPU jobs arriving over time on worker types (Gavel's simulator: its "
                "generator, rounds mechanism and policies)",
        cluster=replay.cluster, resources=replay.resources, jobs=replay.jobs,
        work=replay.work, generators={"gavel": replay.gavel, "static": replay.static},
        problem=replay.problem, rates=replay.rates, usage=replay.usage,
        mechanisms={"rounds": replay.rounds}, policies=replay.POLICIES, aware=replay.AWARE,
        default_policy="max-min",
        example={"workers": {"v100": 2, "p100": 2, "k80": 2}}),
)

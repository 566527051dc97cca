"""The drf kind: its record in the kind contract (``fairalloc.contract``)."""

from __future__ import annotations

from fairalloc.checks import leontief
from fairalloc.contract import Kind, Replay
from fairalloc.models import drf as model
from fairalloc.plots import leontief as plots
from fairalloc.replay import drf as replay
from fairalloc.solvers import drf as solvers
from fairalloc.studies import drf as studies

METHODS = {"progressive-filling": solvers.progressive_filling, "lp": solvers.leximin_lp}

KIND = Kind(
    name="drf",
    summary="Dominant Resource Fairness by progressive filling (weighted, any resources)",
    from_spec=model.DrfProblem.from_spec,
    methods=METHODS,
    default="progressive-filling",
    exact="lp",
    checks=leontief.LEONTIEF_CHECKS,
    random_spec=studies.random_spec,
    metrics=model.metrics,
    plot=plots.shares,
    sweep_metrics=("total_tasks", "min_weighted_dominant_share", "utilization.*"),
    tradeoff_sweep=("users[0].weight", 1, 4, 0.5),
    tradeoff=("min_weighted_dominant_share", "utilization.*"),
    units={"objective": "min weighted dominant share (of capacity)",
           "*_weighted_dominant_share": "weighted dominant share (of capacity)",
           "utilization.*": "utilization (share of capacity)", "total_tasks": "tasks (count)",
           "users*.weight": "weight of the user (relative)"},
    replay=Replay(
        summary="jobs with a demand vector per task arriving over time (DRF online): progress "
                "at tasks held / tasks wanted",
        cluster=replay.cluster, resources=replay.resources, jobs=replay.jobs,
        work=replay.work, generators={"poisson": replay.poisson, "static": replay.static},
        problem=replay.problem, rates=replay.rates, usage=replay.usage,
        least=replay.least, policies=replay.policies(METHODS),
        default_policy="progressive-filling", table=replay.read_drf_trace,
        example={"capacity": {"cpu": 64, "mem": 512, "gpu": 8}}, columns=replay.columns),
    reference=("Ali Ghodsi, Matei Zaharia, Benjamin Hindman, Andy Konwinski, Scott Shenker and Ion "
              "Stoica. *Dominant Resource Fairness: Fair Allocation of Multiple Resource Types.* "
              "NSDI 2011, USENIX, 323–336."),
)

"""The registry of problem kinds: one entry per kind, the only thing the API and CLI talk to.

An entry names the kind's ``from_spec`` constructor (``models/<kind>.py``), its methods
(``name -> callable(problem, **options) -> Solution``, from ``solvers/<kind>.py``), the default
and the exact method, the validators (``(problem, allocation, mechanism=None) -> Finding``) and
the metrics computed from any allocation. Schemas live in ``schemas/<kind>.schema.json`` and
commented templates in ``templates/<kind>.jsonc``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fairalloc.models import accelos as accelos_model
from fairalloc.models import drf as drf_model
from fairalloc.models import emrf as emrf_model
from fairalloc.models import etf as etf_model
from fairalloc.models import moldable as moldable_model
from fairalloc.models import token as token_model
from fairalloc.solvers import accelos as accelos_solvers
from fairalloc.solvers import drf as drf_solvers
from fairalloc.solvers import emrf as emrf_solvers
from fairalloc.solvers import etf as etf_solvers
from fairalloc.solvers import moldable as moldable_solvers
from fairalloc.solvers import token as token_solvers
from fairalloc.validators import accelos as accelos_checks
from fairalloc.validators import axioms, schedule
from fairalloc.validators import etf as etf_checks
from fairalloc.validators import token as token_checks


@dataclass(frozen=True)
class Kind:
    """How fairalloc handles one problem kind."""

    name: str
    summary: str
    from_spec: Callable
    methods: dict[str, Callable]
    default: str
    exact: str | None
    validators: tuple[Callable, ...]
    metrics: Callable
    sweep_metrics: tuple[str, ...] = ()


KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    KINDS[kind.name] = kind
    return kind


LEONTIEF_CHECKS = (
    axioms.feasibility,
    axioms.sharing_incentive,
    axioms.envy_freeness,
    axioms.pareto_efficiency,
    axioms.strategy_proofness,
)

register(Kind(
    name="drf",
    summary="Dominant Resource Fairness by progressive filling (weighted, any resources)",
    from_spec=drf_model.DrfProblem.from_spec,
    methods={"progressive-filling": drf_solvers.progressive_filling, "lp": drf_solvers.leximin_lp},
    default="progressive-filling",
    exact="lp",
    validators=LEONTIEF_CHECKS,
    metrics=drf_model.metrics,
    sweep_metrics=("total_tasks", "min_weighted_dominant_share", "utilization.*"),
))

register(Kind(
    name="emrf",
    summary="Elastic Multi-Resource Fairness: DRF plus an efficiency LP, with a fairness knob",
    from_spec=emrf_model.EmrfProblem.from_spec,
    methods={"lp": emrf_solvers.knob_policy, "wfq": emrf_solvers.wfq, "drf": emrf_solvers.drf},
    default="lp",
    exact="lp",
    validators=LEONTIEF_CHECKS + (axioms.delta_fairness,),
    metrics=emrf_model.metrics,
    sweep_metrics=("delta_observed", "delta_bound", "utilization.*"),
))

register(Kind(
    name="etf",
    summary="Energy-Time Fairness: GPU time slices between time-fair and energy-fair",
    from_spec=etf_model.EtfProblem.from_spec,
    methods={"waterfill": etf_solvers.waterfill, "greedy": etf_solvers.greedy,
             "milp": etf_solvers.leximin_milp, "time-fair": etf_solvers.time_fair,
             "energy-fair": etf_solvers.energy_fair},
    default="waterfill",
    exact="milp",
    validators=(etf_checks.feasibility, etf_checks.time_guarantee, etf_checks.pareto_efficiency,
                etf_checks.max_min, etf_checks.strategy_proofness),
    metrics=etf_model.metrics,
    sweep_metrics=("time_fairness", "energy_fairness", "system_fairness"),
))

register(Kind(
    name="moldable",
    summary="Makespan of moldable jobs with serial host-to-accelerator offload",
    from_spec=moldable_model.MoldableProblem.from_spec,
    methods={"gpusched1-star": moldable_solvers.gpusched1_star,
             "gpusched1": moldable_solvers.gpusched1,
             "gpusched2": moldable_solvers.gpusched2,
             "work-conserving": moldable_solvers.work_conserving,
             "offload-then-list": moldable_solvers.offload_then_list,
             "offload-then-shelves": moldable_solvers.offload_then_shelves,
             "exact": moldable_solvers.exact},
    default="gpusched1-star",
    exact="exact",
    validators=(schedule.feasibility, schedule.claimed_bounds),
    metrics=moldable_solvers.metrics,
    sweep_metrics=("makespan", "lower_bound", "ratio"),
))

register(Kind(
    name="accelos",
    summary="accelOS: resident work groups of concurrent kernels on one accelerator",
    from_spec=accelos_model.AccelosProblem.from_spec,
    methods={"accelos": accelos_solvers.accelos, "ilp": accelos_solvers.ilp,
             "fcfs": accelos_solvers.fcfs, "equal-threads": accelos_solvers.equal_threads},
    default="accelos",
    exact="ilp",
    validators=(accelos_checks.feasibility, accelos_checks.pareto_efficiency,
                accelos_checks.envy_freeness, accelos_checks.max_min),
    metrics=accelos_model.metrics,
    sweep_metrics=("min_weighted_dominant_share", "jain_index", "fairness_improvement",
                   "throughput_speedup"),
))

register(Kind(
    name="token",
    summary="Token mechanism for boosts: mean-field equilibrium thresholds (Algorithm 1)",
    from_spec=token_model.TokenProblem.from_spec,
    methods={"mean-field": token_solvers.mean_field, "mean-field-lp": token_solvers.mean_field_lp},
    default="mean-field",
    exact=None,
    validators=(token_checks.equilibrium, token_checks.stationarity,
                token_checks.monotone_thresholds),
    metrics=token_model.metrics,
    sweep_metrics=("mean_tokens", "boosts_per_round", "iterations", "residual"),
))

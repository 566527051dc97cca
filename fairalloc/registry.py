"""The registry of problem kinds: one entry per kind, the only thing the API and CLI talk to.

An entry names the kind's ``from_spec`` constructor (``models/<kind>.py``), its methods
(``name -> callable(problem, **options) -> Solution``, from ``solvers/<kind>.py``), the default
and the exact method, the validators (``(problem, allocation, mechanism=None) -> Finding``) and
the metrics computed from any allocation. Schemas live in ``schemas/<kind>.schema.json`` and
commented templates in ``templates/<kind>.jsonc``.

Each kind is built by a function that imports its modules, the first time the kind is looked
up: a command that solves a drf spec does not pay for importing the other five kinds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass


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


class Kinds(Mapping):
    """Kind name -> Kind, each built by its loader on first use (names need no import)."""

    def __init__(self, loaders: dict[str, Callable[[], Kind]]):
        self._loaders = loaders
        self._built: dict[str, Kind] = {}

    def __getitem__(self, name: str) -> Kind:
        if name not in self._built:
            self._built[name] = self._loaders[name]()
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaders)

    def __len__(self) -> int:
        return len(self._loaders)

    def __contains__(self, name: object) -> bool:
        return name in self._loaders


def leontief_checks() -> tuple[Callable, ...]:
    """The axioms of drf and emrf allocations (Leontief markets)."""
    from fairalloc.validators import axioms

    return (axioms.feasibility, axioms.sharing_incentive, axioms.envy_freeness,
            axioms.pareto_efficiency, axioms.strategy_proofness)


def drf() -> Kind:
    from fairalloc.models import drf as model
    from fairalloc.solvers import drf as solvers

    return Kind(
        name="drf",
        summary="Dominant Resource Fairness by progressive filling (weighted, any resources)",
        from_spec=model.DrfProblem.from_spec,
        methods={"progressive-filling": solvers.progressive_filling, "lp": solvers.leximin_lp},
        default="progressive-filling",
        exact="lp",
        validators=leontief_checks(),
        metrics=model.metrics,
        sweep_metrics=("total_tasks", "min_weighted_dominant_share", "utilization.*"),
    )


def emrf() -> Kind:
    from fairalloc.models import emrf as model
    from fairalloc.solvers import emrf as solvers
    from fairalloc.validators import axioms

    return Kind(
        name="emrf",
        summary="Elastic Multi-Resource Fairness: DRF plus an efficiency LP, with a fairness knob",
        from_spec=model.EmrfProblem.from_spec,
        methods={"lp": solvers.knob_policy, "wfq": solvers.wfq, "drf": solvers.drf},
        default="lp",
        exact="lp",
        validators=leontief_checks() + (axioms.delta_fairness,),
        metrics=model.metrics,
        sweep_metrics=("delta_observed", "delta_bound", "utilization.*"),
    )


def etf() -> Kind:
    from fairalloc.models import etf as model
    from fairalloc.solvers import etf as solvers
    from fairalloc.validators import etf as checks

    return Kind(
        name="etf",
        summary="Energy-Time Fairness: GPU time slices between time-fair and energy-fair",
        from_spec=model.EtfProblem.from_spec,
        methods={"waterfill": solvers.waterfill, "greedy": solvers.greedy,
                 "milp": solvers.leximin_milp, "time-fair": solvers.time_fair,
                 "energy-fair": solvers.energy_fair},
        default="waterfill",
        exact="milp",
        validators=(checks.feasibility, checks.time_guarantee, checks.pareto_efficiency,
                    checks.max_min, checks.strategy_proofness),
        metrics=model.metrics,
        sweep_metrics=("time_fairness", "energy_fairness", "system_fairness"),
    )


def moldable() -> Kind:
    from fairalloc.models import moldable as model
    from fairalloc.solvers import moldable as solvers
    from fairalloc.validators import schedule

    return Kind(
        name="moldable",
        summary="Makespan of moldable jobs with serial host-to-accelerator offload",
        from_spec=model.MoldableProblem.from_spec,
        methods={"gpusched1-star": solvers.gpusched1_star,
                 "gpusched1": solvers.gpusched1,
                 "gpusched2": solvers.gpusched2,
                 "work-conserving": solvers.work_conserving,
                 "offload-then-list": solvers.offload_then_list,
                 "offload-then-shelves": solvers.offload_then_shelves,
                 "exact": solvers.exact},
        default="gpusched1-star",
        exact="exact",
        validators=(schedule.feasibility, schedule.no_unforced_idle, schedule.claimed_bounds),
        metrics=solvers.metrics,
        sweep_metrics=("makespan", "lower_bound", "ratio"),
    )


def accelos() -> Kind:
    from fairalloc.models import accelos as model
    from fairalloc.solvers import accelos as solvers
    from fairalloc.validators import accelos as checks

    return Kind(
        name="accelos",
        summary="accelOS: resident work groups of concurrent kernels on one accelerator",
        from_spec=model.AccelosProblem.from_spec,
        methods={"accelos": solvers.accelos, "ilp": solvers.ilp, "fcfs": solvers.fcfs,
                 "equal-threads": solvers.equal_threads},
        default="accelos",
        exact="ilp",
        validators=(checks.feasibility, checks.all_resident, checks.pareto_efficiency,
                    checks.envy_freeness, checks.max_min),
        metrics=model.metrics,
        sweep_metrics=("min_weighted_dominant_share", "jain_index", "fairness_improvement",
                       "throughput_speedup"),
    )


def token() -> Kind:
    from fairalloc.models import token as model
    from fairalloc.solvers import token as solvers
    from fairalloc.validators import token as checks

    return Kind(
        name="token",
        summary="Token mechanism for boosts: mean-field equilibrium thresholds (Algorithm 1)",
        from_spec=model.TokenProblem.from_spec,
        methods={"mean-field": solvers.mean_field, "mean-field-lp": solvers.mean_field_lp},
        default="mean-field",
        exact=None,
        validators=(checks.equilibrium, checks.stationarity, checks.monotone_thresholds),
        metrics=model.metrics,
        sweep_metrics=("mean_tokens", "boosts_per_round", "iterations", "residual"),
    )


KINDS: Kinds = Kinds({"drf": drf, "emrf": emrf, "etf": etf, "moldable": moldable,
                      "accelos": accelos, "token": token})

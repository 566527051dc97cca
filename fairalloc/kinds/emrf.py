"""The emrf kind: its record in the kind contract (``fairalloc.contract``)."""

from __future__ import annotations

from fairalloc.checks import emrf as checks
from fairalloc.checks import leontief
from fairalloc.contract import Kind
from fairalloc.models import emrf as model
from fairalloc.plots import leontief as plots
from fairalloc.solvers import emrf as solvers
from fairalloc.studies import emrf as studies

KIND = Kind(
    name="emrf",
    summary="Elastic Multi-Resource Fairness: DRF plus an efficiency LP, with a fairness knob",
    from_spec=model.EmrfProblem.from_spec,
    methods={"lp": solvers.knob_policy, "wfq": solvers.wfq, "drf": solvers.drf},
    default="lp",
    exact="lp",
    checks=leontief.LEONTIEF_CHECKS + (checks.delta_fairness,),
    probe_options={"formulation": "classes"},    # the Pyomo model's allocation, without it
    random_spec=studies.random_spec,
    metrics=model.metrics,
    plot=plots.shares,
    sweep_metrics=("delta_observed", "delta_bound", "utilization.*"),
    tradeoff_sweep=("knob", 0, 1, 0.1),
    tradeoff=("delta_observed", "utilization.*"),
    units={"objective": "total allocation (GFLOPS)", "total": "total allocation (GFLOPS)",
           "efficiency_lp_optimum": "total allocation (GFLOPS)",
           "residual.*": "residual capacity (GFLOPS)",
           "utilization.*": "utilization (share of capacity)",
           "delta_*": "δ: spread of allocation ÷ fair share (ratio)",
           "*_share_ratio": "allocation ÷ fair share (ratio)", "knob": "knob η (0–1)"},
    reference=("Shanjiang Tang, BingSheng He, Shuhao Zhang and Zhaojie Niu. *Elastic Multi-Resource"
              " Fairness: Balancing Fairness and Efficiency in Coupled CPU-GPU Architectures.* SC "
              "2016 (International Conference for High Performance Computing, Networking, Storage "
              "and Analysis), IEEE."),
)

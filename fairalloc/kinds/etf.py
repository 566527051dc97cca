"""The etf kind: its record in the kind contract (``fairalloc.contract``)."""

from __future__ import annotations

from fairalloc.checks import etf as checks
from fairalloc.contract import Kind
from fairalloc.models import etf as model
from fairalloc.plots import etf as plots
from fairalloc.solvers import etf as solvers
from fairalloc.studies import etf as studies

KIND = Kind(
    name="etf",
    summary="Energy-Time Fairness: GPU time slices between time-fair and energy-fair",
    from_spec=model.EtfProblem.from_spec,
    methods={"waterfill": solvers.waterfill, "greedy": solvers.greedy,
             "leximin": solvers.leximin, "milp": solvers.leximin_milp,
             "time-fair": solvers.time_fair, "energy-fair": solvers.energy_fair},
    default="waterfill",
    exact="leximin",
    checks=(checks.feasibility, checks.time_guarantee, checks.pareto_efficiency,
                checks.max_min, checks.strategy_proofness),
    random_spec=studies.random_spec,
    metrics=model.metrics,
    plot=plots.time_and_energy,
    sweep_metrics=("time_fairness", "energy_fairness", "system_fairness"),
    tradeoff_sweep=("phi", 0, 1, 0.1),
    tradeoff=("time_fairness", "energy_fairness"),
    units={"objective": "min weighted energy (W × slices)",
           "min_weighted_energy": "min weighted energy (W × slices)",
           "*_fairness": "fairness index (0–1)", "utilization": "GPU utilization (share)",
           "phi_fair": "φ (0–1)", "phi": "φ: weight of energy against time (0–1)"},
    reference=("Qianlin Liang, Walid A. Hanafy, Noman Bashir, David Irwin and Prashant Shenoy. "
              "*Energy Time Fairness: Balancing Fair Allocation of Energy and Time for GPU "
              "Workloads.* SEC 2023 (the Eighth ACM/IEEE Symposium on Edge Computing), ACM. "
              "https://doi.org/10.1145/3583740.3628435"),
    also_exact={'milp': "the kind's objective (the leximin, as a HiGHS MILP cross-check)"},
)

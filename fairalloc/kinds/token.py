"""The token kind: its record in the kind contract (``fairalloc.contract``)."""

from __future__ import annotations

from fairalloc.checks import token as checks
from fairalloc.contract import Kind
from fairalloc.models import token as model
from fairalloc.models import token_game as game
from fairalloc.plots import token as plots
from fairalloc.solvers import token as solvers
from fairalloc.studies import token as studies

KIND = Kind(
    name="token",
    summary="Token mechanism for boosts: mean-field equilibrium thresholds (Algorithm 1)",
    from_spec=model.TokenProblem.from_spec,
    methods={"mean-field": solvers.mean_field, "mean-field-lp": solvers.mean_field_lp},
    default="mean-field",
    exact=None,                             # an equilibrium: nothing to be optimal for
    equilibrium=True,
    checks=(checks.feasibility, checks.equilibrium, checks.stationarity, checks.token_supply,
                checks.monotone_thresholds),
    random_spec=studies.random_spec,
    simulation=studies.SIMULATION,
    plot=plots.equilibrium,
    metrics=game.metrics,                   # the model's, and the spec's simulation
    sweep_metrics=("mean_tokens", "boosts_per_round", "iterations", "residual"),
    units={"objective": "boost utility per agent and round (utility)",
           "mean_tokens": "tokens (per agent)", "boosts_per_round": "boosts (per round)",
           "boosts": "boosts (per round)", "agents": "agents (count)",
           "iterations": "iterations (count)", "residual": "fixed-point residual (utility)",
           "strategy_gap": "strategy gap (utility)"},
    reference=("Seyed Majid Zahedi, Songchun Fan and Benjamin C. Lee. *Managing Heterogeneous "
              "Datacenters with Tokens.* ACM Transactions on Architecture and Code Optimization "
              "15(2), Article 18, 2018. https://doi.org/10.1145/3191821"),
)

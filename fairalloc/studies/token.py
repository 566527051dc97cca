"""Token studies: random instances (``random_spec``) and the simulation record
(``fairalloc simulate``: its table and picture); the game itself is ``models.token_game``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.contract import Simulation
from fairalloc.models import token as model
from fairalloc.models.token import TokenProblem
from fairalloc.models.token_game import MECHANISMS, settings
from fairalloc.plots.token import token_game
from fairalloc.render import fmt


def random_spec(seed: int, types: int = 3, max_tokens: int = 20, points: int = 50) -> dict:
    """``types`` agent types in equal shares, each utility uniform on a random range within
    [0, 0.8] on a ``points``-point grid; Table 2's population (1,000 agents, 100 boosts, one
    initial token, gamma 0.99)."""
    rng = np.random.default_rng(seed)
    low = rng.uniform(0.0, 0.3, types)
    high = low + rng.uniform(0.05, 0.5, types)
    fractions = np.full(types, 1 / types)
    fractions[-1] = 1 - fractions[:-1].sum()
    return {"problem": "token", "agents": 1000, "boosts": 100, "initial_tokens": 1,
            "max_tokens": max_tokens, "discount": 0.99, "tolerance": 1e-3,
            "max_iterations": 200,
            "types": [{"id": f"type{i}", "fraction": float(fractions[i]),
                       "utility": {"uniform": [float(low[i]), float(high[i])],
                                   "points": points}} for i in range(types)]}


def _columns(p: TokenProblem) -> list[tuple[str, Callable[[dict], str]]]:
    metric = [("performance", "performance"), ("÷ max-welfare", "relative_performance"),
              ("share uniformity", "share_uniformity"), ("envy-free index", "envy_free_index")]
    return ([(header, lambda row, key=key: fmt(row[key])) for header, key in metric]
            + [(f"boosts {i}", lambda row, i=i: f"{row['boost_share'][i]:.3f}") for i in p.ids])


def _title(name: str, p: TokenProblem, rounds: int, seed: int, method: str, status: str) -> str:
    return (f"{name}: {p.agents} agents, {p.boosts} boosts, {rounds} rounds (seed {seed}); "
            f"thresholds by {method}: {status}")


def _plot(p: TokenProblem, allocation: Allocation, metrics: dict, title: str,
          path: str) -> None:
    token_game(p.ids, allocation.column("thresholds"), allocation.column("token_distribution"),
               metrics["boost_probability"], metrics.get("simulation"), title, path)


SIMULATION = Simulation(
    summary="solve for the thresholds, then play the token game and the baselines round by "
            "round (section 7 of the token paper)",
    mechanisms=MECHANISMS,
    settings=settings,
    too_big=lambda p, rounds: model.simulation_too_big(p.agents, rounds),
    columns=_columns,
    title=_title,
    plot=_plot,
)

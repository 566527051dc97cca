"""The token game on the engine for time (issue 25): each mechanism played round by round on
``fairalloc.replay.clock`` gives the boosts of its definition, written here over all rounds at
once from the same random streams (round-robin's rotation, the lottery's n largest of the same
uniform draws, max-welfare's n highest utilities, equal division's n/m; the n largest as
``top`` picks them over all rounds at once, as the game did before), and ``simulate``'s rows
are those boosts' metrics. Same seed, same numbers as before the game moved onto the engine."""

from __future__ import annotations

import numpy as np
import pytest

import fairalloc
from fairalloc.models import token_game as game
from fairalloc.studies.token import random_spec

ROUNDS = 150


def streams(seed: int) -> list[np.random.Generator]:
    """``simulate``'s generators: the population's, then one per mechanism of MECHANISMS."""
    return [np.random.default_rng(s)
            for s in np.random.SeedSequence(seed).spawn(1 + len(game.MECHANISMS))]


def rows(chosen: np.ndarray, m: int) -> np.ndarray:
    """(rounds, m) boosts from the chosen agents of each round."""
    x = np.zeros((chosen.shape[0], m), dtype=np.float32)
    np.put_along_axis(x, chosen, 1.0, axis=1)
    return x


def by_definition(name: str, p, pop: game.Population, rng: np.random.Generator) -> np.ndarray:
    """A baseline's boosts over all rounds, from its definition."""
    rounds, m, n = ROUNDS, p.agents, p.boosts
    if name == "round-robin":       # round r boosts rn, ..., rn + n - 1 (mod m)
        return rows((n * np.arange(rounds)[:, None] + np.arange(n)) % m, m)
    if name == "lottery":           # the n largest of m uniform draws, a row a round
        return rows(game.top(rng.random((rounds, m)), n), m)
    if name == "max-welfare":       # the n highest utilities of the round (ties as top's)
        return rows(game.top(pop.utilities, n), m)
    assert name == "equal-division"
    return np.full((rounds, m), n / m, dtype=np.float32)


@pytest.fixture(scope="module", params=[0, 1, 2])
def instance(request):
    data = random_spec(request.param, types=3, max_tokens=8, points=20)
    data.update(agents=120, boosts=12)
    p = fairalloc.load_spec(data).problem
    thresholds = np.array(fairalloc.solve(data).allocation.column("thresholds"), dtype=float)
    return request.param, p, thresholds


@pytest.mark.parametrize("name", ["round-robin", "lottery", "max-welfare", "equal-division"])
def test_each_baseline_plays_its_definition(instance, name):
    seed, p, thresholds = instance
    gens = streams(seed)
    pop = game.population(p, ROUNDS, gens[0])
    expected = by_definition(name, p, pop, gens[1 + game.MECHANISMS.index(name)])
    again = streams(seed)
    played = game.play(game.BASELINES[name](p, game.population(p, ROUNDS, again[0]),
                                            again[1 + game.MECHANISMS.index(name)]))
    np.testing.assert_array_equal(played, expected)
    if name == "max-welfare":
        best = -np.sort(-pop.utilities, axis=1)[:, :p.boosts].sum(axis=1)
        np.testing.assert_allclose((played * pop.utilities).sum(axis=1), best)
    row = game.simulate(p, thresholds, (name,), ROUNDS, seed)[name]
    metrics = game.mechanism_metrics(p, pop, pop.in_units(pop.scale), expected, pop.scale)
    assert {k: row[k] for k in metrics} == metrics


def test_mean_field_spends_and_hands_out_tokens_as_defined(instance):
    """Mean-field on the engine: at most n boosts a round, only to agents that signal (or hold
    t_max), the tokens conserved exactly (each spent one handed to another agent)."""
    seed, p, thresholds = instance
    gens = streams(seed)
    pop = game.population(p, ROUNDS, gens[0])
    mechanism = game.MeanField(p, pop, gens[1], thresholds)
    x = game.play(mechanism)
    assert (x.sum(axis=1) <= p.boosts).all() and x.sum() > 0
    assert mechanism.tokens.sum() == p.agents * p.initial_tokens
    assert ((mechanism.tokens >= 0) & (mechanism.tokens <= p.max_tokens)).all()


def test_progress_reports_rounds_over_every_mechanism(instance):
    seed, p, thresholds = instance
    told: list[tuple[int, int]] = []
    game.simulate(p, thresholds, ("lottery", "round-robin"), ROUNDS, seed,
                  progress=lambda played, total: told.append((played, total)))
    assert told[-1] == (2 * ROUNDS, 2 * ROUNDS)
    assert [played for played, _ in told] == sorted(played for played, _ in told)

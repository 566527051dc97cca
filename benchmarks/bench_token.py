"""Benchmark 9: token Algorithm 1, the simulation, and the LP best responses."""

from __future__ import annotations

import numpy as np
from harness import ROOT, SEED, Row, Table, random_spec, timed_row


def bench_token(quick: bool) -> list[Table]:
    """Token: Algorithm 1 with 12 types, t_max 100, 1,000-point grids under 1 s; the simulation
    of 1,000 agents x 3,000 rounds x 6 mechanisms under 5 s."""
    from dataclasses import replace

    import fairalloc
    from fairalloc.checks.token import equilibrium
    from fairalloc.models.token_game import MECHANISMS, simulate
    from fairalloc.solvers.token import mean_field, mean_field_lp

    types, t_max, points = (4, 30, 200) if quick else (12, 100, 1000)
    rounds = 500 if quick else 3000
    spec = random_spec("token", types=types, max_tokens=t_max, points=points)
    problem = fairalloc.load_spec(spec).problem
    rows: list[Row] = []

    def describe(sol, t):
        m = sol.metrics
        return (f"status {sol.status}: {m['iterations']} outer iterations, "
                f"{sol.solver['policy_rounds']:,} policy-iteration rounds, residual "
                f"{m['residual']:.2g}, {m['mixed_states']} mixed states")

    solved: dict = {}

    def solve():        # a fresh problem object each run: the utility grid is built every time
        solved["x"] = mean_field(replace(problem))
        return solved["x"]

    rows.append(timed_row(f"Algorithm 1 (`mean-field`), {types} types, t_max = {t_max}, "
                          f"{points}-point grids", solve,
                          None if quick else 1.0, describe=describe))
    if "x" in solved:
        sol = solved["x"]
        rows.append(timed_row("`equilibrium` check on that result",
                              lambda: equilibrium(problem, sol.allocation, sol.metrics),
                              describe=lambda f, t: f"{f.verdict}: {f.detail}",
                              profile=False))
        thresholds = np.asarray(sol.allocation.column("thresholds"), dtype=float)
        rows.append(timed_row(
            f"simulation, 1,000 agents x {rounds:,} rounds x {len(MECHANISMS)} mechanisms",
            lambda: simulate(problem, thresholds, rounds=rounds, seed=1),
            None if quick else 5.0,
            describe=lambda r, t: "; ".join(f"{name} {row['relative_performance']:.2f}"
                                            for name, row in r.items())
            + " of max-welfare's performance"))
        for name in MECHANISMS:
            rows.append(timed_row(f"  one mechanism: `{name}` ({rounds:,} rounds, utilities "
                                  "drawn again)",
                                  lambda name=name: simulate(problem, thresholds, (name,),
                                                             rounds, seed=1),
                                  profile=False))
    pair = fairalloc.load_spec(str(ROOT / "specs" / "token" / "kmeans-pagerank.json")).problem
    pair = replace(pair, simulation=None)
    rows.append(timed_row("`mean-field-lp` on specs/token/kmeans-pagerank.json (2 types, "
                          "t_max 10, 41 points)", lambda: mean_field_lp(replace(pair)),
                          describe=lambda s, t: f"status {s.status}, {s.solver['lps']} LPs, "
                          f"{s.metrics['iterations']} outer iterations", profile=False))
    rows.append(timed_row("`mean-field` on the same spec", lambda: mean_field(replace(pair)),
                          describe=lambda s, t: f"status {s.status}, "
                          f"{s.metrics['iterations']} outer iterations", profile=False))
    return [Table(
        "token", "9. token: Algorithm 1 and the simulation",
        f"Random types (seed {SEED}): utilities uniform on random ranges in [0, 0.8]; 1,000 "
        "agents, 100 boosts, one initial token, gamma 0.99, tolerance 1e-3. Timed: "
        "`fairalloc.solvers.token.mean_field` on a fresh problem object (the utility grid is "
        "built inside), the `equilibrium` check, and `fairalloc.models.token_game.simulate` "
        "(all mechanisms on one population, then each alone). Targets from the issue: Algorithm 1 "
        "with 12 types, t_max 100 and 1,000-point grids under 1 s (the paper: about 10 s in R "
        "for its setting); 1,000 agents x 3,000 rounds x 6 mechanisms under 5 s.",
        rows)]

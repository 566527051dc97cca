"""Benchmark 8: accelOS split + greedy at 100-1e4 kernels, and the exact ILP."""

from __future__ import annotations

from harness import (
    REPEAT,
    Row,
    Table,
    checks_table,
    fmt_seconds,
    market_of,
    measure,
    random_spec,
    safe,
    size,
    timed_row,
)

ILP_TARGET = 2.0
# issue 24: the whole solve (the method and the metrics every solve computes, the
# standard-OpenCL baseline among them) within the budget the issue gives a kind's checks
SOLVE_RATIO_TARGET = 3.0
# runs of each side of that ratio: a few milliseconds each, and one preempted run of the
# method on a shared machine moved the ratio from 2.6x to 1.5x in a best of 3
RATIO_REPEAT = 7


def bench_accelos(quick: bool) -> list[Table]:
    """accelOS: the split + greedy with 1e3 kernels under 0.1 s; the ILP at 100 kernels."""
    from fairalloc.models.accelos import weighted_dominant_share
    from fairalloc.solvers.accelos import accelos, ilp

    target_k, target = 1000, 0.1
    greedy_sizes = (100, 1000) if quick else (100, 1000, 10000)
    ilp_sizes = (10, 30) if quick else (10, 30, 100, 300, 1000)
    rows: list[Row] = []
    for k in greedy_sizes:
        p = market_of(random_spec("accelos", kernels=k))
        for order in ("dominant-share", "round-robin"):
            goal = target if (k, order) == (target_k, "dominant-share") else None

            def describe(sol, t):
                return (f"{sol.solver['groups_from_split']:,} groups from the split, "
                        f"{sol.solver['groups_from_greedy']:,} from the greedy; smallest "
                        f"weighted dominant share {sol.objective:.4g}")

            rows.append(timed_row(f"`accelos` (greedy {order}), {size(k)} kernels",
                                  lambda p=p, order=order: accelos(p, greedy=order), goal,
                                  describe=describe))
    import fairalloc

    fairalloc.solve(random_spec("accelos", kernels=5))       # warm-up: imports, schema
    for k in ilp_sizes[-1:] + (target_k,):

        def describe_solve(result, t):
            return ("metrics include the wave model's standard-OpenCL run (an event loop, one "
                    "event per finish time); checks: "
                    + ", ".join(f"{f.check} {f.mark}"
                                for f in result.validation))

        rows.append(timed_row(f"`fairalloc.solve(spec)` (accelos, metrics and checks), "
                              f"{size(k)} kernels",
                              first_solves(random_spec("accelos", kernels=k)),
                              describe=describe_solve, profile=False))
    rows.append(solve_ratio_row(target_k))
    ilp(market_of(random_spec("accelos", kernels=2)))        # warm-up: HiGHS's first solve
    for k in ilp_sizes:
        p = market_of(random_spec("accelos", kernels=k))

        def describe_ilp(sol, t, p=p):
            heuristic = accelos(p)
            n = sol.allocation.column("work_groups")
            return (f"status {sol.status}, gap {sol.solver.get('gap', 0):.1g}; smallest weighted "
                    f"dominant share {sol.objective:.4g} (accelos {heuristic.objective:.4g}); "
                    f"threads in use {int(n @ p.demand[:, 0]):,} of {int(p.capacity[0]):,}; "
                    f"max share {float(weighted_dominant_share(p, n).max()):.4g}")

        rows.append(timed_row(f"`ilp` (level bisection, then the threads ILP), {k} kernels",
                              lambda p=p: ilp(p), ILP_TARGET if k == 1000 else None,
                              describe=describe_ilp, profile=False))
    return [Table(
        "accelos", "8. accelOS work groups: the split + greedy and the exact ILP",
        "Random mixes of the synthetic Parboil-like kernels of `fairalloc experiment accelos` "
        "on a GCN-like device with 44 compute units per 8 kernels, shares 1, 2 or 0.5. Timed: "
        "`fairalloc.solvers.accelos.accelos` (section 3's split, then the greedy; batched, "
        "exactly the one-group-at-a-time greedy) and `ilp` (round 1 the max-min level by exact "
        "bisection, round 2 the threads ILP; the round-1 max-min ILP it replaced took 0.06 s, "
        "11.8 s and 2.75 s at 100, 300 and 1,000 kernels) "
        "on the problem object (building it is setup; a warm-up solve first). Target from the "
        f"issue: `accelos` with {size(target_k)} kernels under {fmt_seconds(target)}; issue 14: "
        f"`ilp` with 1,000 kernels under {fmt_seconds(ILP_TARGET)}; issue 24: the whole "
        f"`fairalloc.solve(spec, validate=False)` at most {SOLVE_RATIO_TARGET:g}x the method at "
        f"{size(target_k)} kernels. The `fairalloc.solve` rows solve a freshly loaded spec each "
        "run (the standard-OpenCL baseline is cached per problem: a user who solves once pays "
        "it every time).",
        rows), bench_accelos_checks(quick)]


def first_solves(data: dict, runs: int = REPEAT, **options):
    """``fairalloc.solve(spec, **options)`` on a freshly loaded spec at each of up to ``runs``
    calls (loading is setup, done here): the standard-OpenCL baseline is cached per problem,
    so a second solve of one loaded spec would not pay it, where a user who solves once pays
    it every time."""
    import fairalloc

    specs = iter([fairalloc.load_spec(data) for _ in range(runs)])
    return lambda: fairalloc.solve(next(specs), **options)


def solve_ratio_row(k: int) -> Row:
    """The whole ``fairalloc.solve(spec, validate=False)`` (first solves, ``first_solves``) over
    the default method alone on the problem object, at k kernels, each the best of
    ``RATIO_REPEAT`` runs; the note says how much of it is the standard-OpenCL event loop."""
    from fairalloc.models.accelos import execute
    from fairalloc.registry import KINDS

    case = f"`fairalloc.solve(spec, validate=False)` ÷ `accelos` method, {size(k)} kernels"

    def run() -> Row:
        data = random_spec("accelos", kernels=k)
        p, method = market_of(data), KINDS["accelos"].methods["accelos"]
        alone = measure(lambda: method(p), repeat=RATIO_REPEAT).best
        baseline = measure(lambda: execute(p), repeat=RATIO_REPEAT).best
        solve = measure(first_solves(data, RATIO_REPEAT, validate=False), repeat=RATIO_REPEAT)
        ratio = solve.best / alone
        return Row(case, solve.best, SOLVE_RATIO_TARGET * alone, solve.runs,
                   f"{ratio:.2f}x the method ({fmt_seconds(alone)}; target "
                   f"{SOLVE_RATIO_TARGET:g}x); the standard-OpenCL baseline alone "
                   f"(`execute(p)`, the wave model's event loop) takes {fmt_seconds(baseline)}, "
                   f"{baseline / alone:.2f}x the method")

    return safe(case, run, target=None)


def bench_accelos_checks(quick: bool) -> Table:
    """accelOS: every check against the method's solve at 1e3 kernels (issue 24)."""
    return checks_table("accelos", "kernels", (100,) if quick else (1_000,),
                        lambda k: random_spec("accelos", kernels=k))

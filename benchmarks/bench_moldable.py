"""Benchmark 7: moldable jobs (list algorithms at m = 1024, the exact MILP at m = 8, the
experiment)."""

from __future__ import annotations

import gc
import math
import os
import subprocess
import sys
import traceback

from harness import (
    CHECKS_TARGET,
    SEED,
    Row,
    Table,
    checks_ratio_row,
    fairalloc_command,
    fmt_seconds,
    log,
    nice,
    random_spec,
    size,
    timed,
    timed_row,
)

MOLDABLE_LISTS = ("gpusched1-star", "gpusched1", "gpusched2", "work-conserving",
                  "offload-then-list", "impl-b")
MOLDABLE_RUN_BUDGET = 30.0   # seconds: a 1e5 case predicted to take longer is extrapolated


def moldable_problem(seed: int, n: int, m: int, beta: float = 0.5):
    """A loaded random section-V spec (linear speedup; beta 0.5 as in section V): its problem
    object."""
    import fairalloc

    return fairalloc.load_spec(random_spec("moldable", seed, jobs=n, processors=m,
                                           beta=beta)).problem


def moldable_lists(quick: bool) -> Table:
    """Each list algorithm at m = 1024; 1e5 jobs measured only when 1e3 and 1e4 predict it under
    ``MOLDABLE_RUN_BUDGET``, else extrapolated from their growth."""
    from fairalloc.registry import KINDS

    kind = KINDS["moldable"]
    m, target_n, target = 1024, 10**5, 5.0
    sizes = (10**2, 10**3) if quick else (10**3, 10**4)
    rows: list[Row] = []
    problems = {}
    for n in sizes:
        log(f"moldable: loading a {size(n)}-job instance")
        problems[n] = moldable_problem(SEED, n, m)
    for name in MOLDABLE_LISTS:
        method = kind.methods[name]
        measured: dict[int, float] = {}
        for n in sizes:
            row = timed_row(f"`{name}`, {size(n)} jobs, m = {m}",
                            lambda n=n, method=method: method(problems[n]),
                            describe=lambda s, t: f"makespan {s.objective:.6g} ({s.status})",
                            profile=False)
            rows.append(row)
            if row.seconds:
                measured[n] = row.seconds
        if len(measured) < 2:
            rows.append(Row(f"`{name}`, {size(target_n)} jobs, m = {m}", target=target,
                            error="no growth to extrapolate from (a smaller size failed)"))
            continue
        (n0, t0), (n1, t1) = sorted(measured.items())
        k = min(max(math.log(t1 / t0) / math.log(n1 / n0), 1.0), 2.0)
        predicted = t1 * (target_n / n1) ** k
        case = f"`{name}`, {size(target_n)} jobs, m = {m}"
        # profile at the size the fit puts near 3 s (a full-size profile would take minutes)
        n_prof = int(min(n0, max(50, nice(n0 * (3.0 / t0) ** (1 / k)))))
        if predicted <= MOLDABLE_RUN_BUDGET:
            log(f"moldable: {case} ... (predicted {fmt_seconds(predicted)})")
            problem = moldable_problem(SEED, target_n, m)

            basis = f"{size(n0)} and {size(n1)} (n^{k:.2f})"

            def describe(s, t, predicted=predicted, basis=basis):
                return (f"makespan {s.objective:.6g}; predicted {fmt_seconds(predicted)} "
                        f"from {basis}")

            row = timed_row(case, lambda problem=problem, method=method: method(problem),
                            target, describe=describe)
            del problem
        else:
            note = (f"not run (predicted > {MOLDABLE_RUN_BUDGET:.0f} s): extrapolated from "
                    f"{fmt_seconds(t0)} at {size(n0)} and {fmt_seconds(t1)} at {size(n1)}, "
                    f"growth n^{k:.2f}" + (" (clamped: linear)" if k <= 1.0 else
                                           " (clamped: quadratic)" if k >= 2.0 else ""))
            log(f"moldable: {case}: ≈ {fmt_seconds(predicted)} (extrapolated)")
            prof_problem = moldable_problem(SEED, n_prof, m)
            row = Row(case, predicted, target, note=note, estimate=True,
                      profile=lambda problem=prof_problem, method=method: method(problem),
                      profile_label=f"{case}: profiled at {size(n_prof)} jobs")
        rows.append(row)
        gc.collect()
    problems.clear()
    return Table(
        "moldable", "7.1 Moldable jobs: the list algorithms at m = 1024",
        "Random section-V instances (`random_spec(seed, jobs=n, processors=1024, "
        "beta=0.5, speedup='linear')`, loaded with `fairalloc.load_spec`; the same instance for "
        "every method). Timed: the method of `KINDS['moldable']` on the loaded problem. The "
        f"{size(target_n)} case is run only when the growth between the two smaller sizes "
        f"(clamped to n^1..n^2) predicts under {MOLDABLE_RUN_BUDGET:.0f} s; otherwise it is "
        "that prediction, marked extrapolated (and a MISS). Target from the issue: each list "
        f"algorithm on {size(target_n)} jobs and m = {m} under {target:.0f} s.",
        rows)


SIZES = (6, 8, 10, 12, 14, 16, 20, 24, 32, 48, 64)
FRONTIER = {(8, 0.5): SIZES, (16, 0.5): SIZES, (28, 0.5): SIZES, (8, 0.1): (6, 8)}
FRONTIER_SEEDS = 5
EXACT_LIMIT = 60.0
EXACT_AIM = 12           # issue 14: every seed of n = 12 proven at m = 8 (aim for 16)


def how_proven(sol) -> str:
    """Which part of the exact method decided: a list schedule at the lower bound, the last
    jobs' search (and how deep), or HiGHS."""
    name = sol.solver["name"]
    if name.startswith("list"):
        return "list at the bound"
    if "no MILP" in name:
        return f"last {sol.solver['tail_depth']} jobs' bound"
    return f"MILP after the last {sol.solver['tail_depth']} jobs"


def exact_runs(exact, n: int, m: int, beta: float, seeds: list[int],
               limit: float) -> list[tuple]:
    """One run of the exact method per seed: (seed, seconds, status, what it did)."""
    runs = []
    for seed in seeds:
        log(f"moldable: exact, {n} jobs, m = {m}, beta = {beta}, seed {seed} ...")
        problem = moldable_problem(seed, n, m, beta)
        try:
            t, sol = timed(lambda problem=problem: exact(problem, time_limit=limit))
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            runs.append((seed, None, None, f"{type(exc).__name__}: {exc}"))
            continue
        runs.append((seed, t, sol.status,
                     f"{how_proven(sol)}, gap {sol.solver.get('gap') or 0:.2g}"))
        log(f"moldable: exact, {n} jobs, m = {m}, seed {seed}: {fmt_seconds(t)}, {sol.status}")
    return runs


def moldable_exact(quick: bool) -> Table:
    """The exact method's frontier: per m (and beta) and n, on five seeds, how many instances
    it proves optimal within the limit (n grows until no seed is proven)."""
    from fairalloc.registry import KINDS

    exact = KINDS["moldable"].methods["exact"]
    limit = EXACT_LIMIT
    frontier = {(8, 0.5): (6,)} if quick else FRONTIER
    seeds = [SEED + s for s in range(1 if quick else FRONTIER_SEEDS)]
    exact(moldable_problem(1, 6, 8), time_limit=limit)       # warm-up: builds and solves a MILP
    rows: list[Row] = []
    for (m, beta), sizes in frontier.items():
        family = f"m = {m}" + ("" if beta == 0.5 else f", beta = {beta}")
        largest = None
        for n in sizes:
            runs = exact_runs(exact, n, m, beta, seeds, limit)
            proven = sum(1 for _, t, status, _ in runs if status == "optimal" and t <= limit)
            times = [t for _, t, _, _ in runs if t is not None]
            detail = "; ".join(
                f"seed {seed}: {fmt_seconds(t) if t is not None else 'error'} "
                f"{status or ''} ({what})".replace("  ", " ")
                for seed, t, status, what in runs)
            row = Row(f"`exact`, {n} jobs, {family} (slowest of {len(seeds)})",
                      max(times) if times else None, limit, runs=len(runs),
                      note=f"**{proven} of {len(runs)} proven optimal**; {detail}")
            if proven < len(seeds):
                row.verdict = "MISS"
            rows.append(row)
            if proven == len(seeds) and largest == (sizes[sizes.index(n) - 1]
                                                    if sizes.index(n) else None):
                largest = n
            if proven == 0:
                break                   # larger n only take longer
        summary = Row(f"largest n proven optimal on all {len(seeds)} seeds within "
                      f"{limit:.0f} s, {family}", runs=0,
                      note=(f"n = {largest}" if largest else "none")
                      + (f" (aim: {EXACT_AIM}; largest measured: {sizes[-1]})"
                         if (m, beta) == (8, 0.5) else f" (largest measured: {sizes[-1]})"))
        if (m, beta) == (8, 0.5):
            summary.verdict = "PASS" if largest is not None and largest >= EXACT_AIM else "MISS"
        rows.append(summary)
    return Table(
        "moldable-exact", "7.2 Moldable jobs: the exact method's frontier",
        f"`KINDS['moldable'].methods['exact'](problem, time_limit={limit:.0f})` on random "
        "section-V instances (`random_spec(seed, jobs=n, processors=m, beta=0.5)`, seeds "
        f"{', '.join(map(str, seeds))}), one run each after a warm-up solve; n grows until no "
        "seed is proven. A run is proven when its status is `optimal`. What decided: 'list at "
        "the bound' (the best list schedule met `lower_bound`, the bus alone and the processors "
        "alone after the first offload), 'last d jobs' bound' (`tail_search`: the bus and the "
        "processors together over the last d jobs, d deepened from 2, met by a schedule it "
        "completed; no MILP), or 'MILP' (HiGHS on `exact_model` from that bound and schedule, "
        "after the search's share of the limit); a `time_limit` run reports its remaining gap. "
        f"Target from issue 14: every seed of n = {EXACT_AIM} proven within {limit:.0f} s at "
        "m = 8 (aim for 16); m = 16 and 28 (the case study's size) reported. Section V's beta "
        "= 0.5 makes the bus the bottleneck; the last family (beta = 0.1, offloads a tenth of "
        "the work at most) makes it the processors, where the MILP does the work.",
        rows)


def moldable_experiment(quick: bool) -> Table:
    """``fairalloc experiment moldable`` as a subprocess: how it scales with instances and
    workers."""
    command = fairalloc_command()
    counts = (5, 10) if quick else (20, 40, 80)
    pool_at = counts[1]
    cores = os.cpu_count() or 1
    rows: list[Row] = []
    base: list[tuple[int, float]] = []
    pooled: dict[int, float] = {}
    cases = [(k, None) for k in counts] + [(pool_at, 1)]
    for k, workers in cases:
        args = [*command, "experiment", "moldable", "--jobs", "20", "--processors", "8",
                "--instances", str(k), "--format", "json"]
        if workers:
            args += ["--workers", str(workers)]
        pool = (f"--workers {workers}" if workers
                else f"default pool ({min(cores, k)} processes)")

        def run(args=args):
            done = subprocess.run(args, capture_output=True, timeout=1800)
            if done.returncode:
                raise RuntimeError(f"exit {done.returncode}: {done.stderr.decode()[-300:]}")
            return done.returncode

        def describe(value, t, k=k, workers=workers):
            text = f"{t.best / k * 1e3:.0f} ms an instance"
            if base and workers is None:
                text += f"; {t.best / base[0][1]:.2f}x the {base[0][0]}-instance time"
            elif not base:
                base.append((k, t.best))
            if workers == 1 and pooled.get(k):
                text += (f"; {t.best / pooled[k]:.2f}x the default pool's time at "
                         f"{k} instances")
            return text

        row = timed_row(f"`fairalloc experiment moldable --jobs 20 --processors 8 "
                        f"--instances {k}`, {pool}", run, describe=describe, profile=False)
        if workers is None and row.seconds:
            pooled[k] = row.seconds
        rows.append(row)
    return Table(
        "moldable-experiment", "7.3 Moldable jobs: `fairalloc experiment moldable`",
        "The section-V experiment as a subprocess (wall clock, with `--format json`; Python "
        "start-up and imports included): every method but `exact` on each of K random "
        f"instances of 20 jobs and 8 processors; the default pool has min(cores, K) processes "
        f"({cores} cores here). No target in the issue.",
        rows)


def moldable_checks(quick: bool) -> Table:
    """Issue 24: every moldable check on the default method's schedule against that solve."""
    m = 1024
    sizes = (10**2, 10**3) if quick else (10**3, 10**4)
    rows = [checks_ratio_row("moldable", random_spec("moldable", jobs=n, processors=m),
                             f"{size(n)} jobs, m = {m}") for n in sizes]
    return Table(
        "moldable-checks", "7.4 Moldable jobs: checks ÷ solve",
        f"Random section-V instances (`random_spec(seed, jobs=n, processors={m})`). Timed: "
        "`fairalloc.solve(spec, validate=False)` (default method `gpusched1-star`, after a "
        "warm-up solve), then each check of the kind on its schedule (the claimed bound with "
        "the method's metrics). Measured: the checks' total; target: "
        f"{CHECKS_TARGET:.0f}x the solve (issue 24, at 1e4 jobs).",
        rows)


def bench_moldable(quick: bool) -> list[Table]:
    """Moldable jobs: list algorithms at m = 1024 (1e5 under 5 s), exact at m = 8, 16 and 28,
    experiment."""
    tables = []
    for name, part in (("lists", moldable_lists), ("exact", moldable_exact),
                       ("experiment", moldable_experiment), ("checks", moldable_checks)):
        try:
            tables.append(part(quick))
        except Exception as exc:  # noqa: BLE001 - a broken part is reported, not raised
            traceback.print_exc(file=sys.stderr)
            tables.append(Table(f"moldable-{name}", f"7. moldable ({name}): failed", "",
                                [Row(name, error=f"{type(exc).__name__}: {exc}")]))
    return tables

"""Benchmark 4: ``fairalloc solve SPEC --format json`` as a subprocess at 1e5 users, and where
its time goes."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import harness
from harness import (
    PROBE_CAP,
    STAGE_BUDGET,
    Row,
    Table,
    fairalloc_command,
    fmt_seconds,
    fmt_time,
    log,
    market_of,
    measure,
    random_spec,
    safe,
    size,
    timed,
    workdir,
)


@dataclass
class Context:
    """One spec at one size, solved: what the checks need."""

    problem: Any
    allocation: Any
    mechanism: Callable


def solved_context(kind_name: str, data: dict) -> tuple[Context, Any]:
    from fairalloc.registry import KINDS

    kind = KINDS[kind_name]
    problem = market_of(data)
    options = {k: v for k, v in data.get("options", {}).items() if k != "method"}
    run = kind.methods[kind.default]
    solution = run(problem, **options)
    return Context(problem, solution.allocation, lambda p: run(p, **options)), solution


def guarded_stage(name: str, n: int, call_at: Callable[[int], Callable[[], Any]],
                  budget: float = STAGE_BUDGET) -> tuple[Row, Any]:
    """Time ``call_at(n)()``, unless probes predict more than ``budget`` seconds: then report
    the extrapolation instead. Probes start at n/40 and double while they stay cheap (under
    ``PROBE_CAP`` s, up to n/5); the growth exponent comes from the last two, so fixed costs
    at small sizes do not flatter it. Returns the row and the stage's value (None if
    extrapolated)."""
    sizes, times = [max(2, n // 40)], []
    times.append(timed(call_at(sizes[0]))[0])
    if times[0] * (n / sizes[0]) ** 2 > budget:          # quadratic growth would blow the budget
        while times[-1] < PROBE_CAP and 2 * sizes[-1] <= n // 5:
            sizes.append(2 * sizes[-1])
            times.append(timed(call_at(sizes[-1]))[0])
        if len(sizes) > 1:
            k = math.log(max(times[-1], 1e-9) / max(times[-2], 1e-9)) / math.log(2)
        else:
            k = 2.0
        k = min(max(k, 1.0), 3.0)
        predicted = times[-1] * (n / sizes[-1]) ** k
        if predicted > budget:
            probes = ", ".join(f"{fmt_seconds(t)} at {m}" for m, t in zip(sizes, times))
            note = (f"not run (predicted > {budget:.0f} s): {probes} users; "
                    f"grows like n^{k:.2f}")
            log(f"{name}: ≈ {fmt_seconds(predicted)} predicted; {note}")
            return Row(name, predicted, note=note, estimate=True, profile=call_at(sizes[-1]),
                       profile_label=f"{name} at {sizes[-1]} users (the largest probe)"), None
    fn = call_at(n)
    t = measure(fn)
    return Row(name, t.best, runs=t.runs, profile=fn), t.value


def breakdown(kind_name: str, path: Path, make: Callable[[int], dict], n: int,
              startup: Row | None) -> list[Row]:
    """Where the time of ``fairalloc solve SPEC --format json`` goes, stage by stage, in the
    order the command runs them."""
    from fairalloc.errors import Violations
    from fairalloc.registry import KINDS
    from fairalloc.result import Result
    from fairalloc.spec import check_schema, read_json

    kind = KINDS[kind_name]
    rows: list[Row] = [startup] if startup is not None else []

    def stage(name: str, fn: Callable[[], Any], note: str = "") -> Any:
        log(f"cli/{kind_name}: {name} ...")
        t = measure(fn)
        rows.append(Row(name, t.best, runs=t.runs, note=note, profile=fn))
        return t.value

    data, _ = stage("JSON parse: `spec.read_json`", lambda: read_json(path),
                    f"{path.stat().st_size / 1e6:.1f} MB file")
    stage("schema check: `spec.check_schema`", lambda: check_schema(kind_name, data, Violations()))
    problem = stage(f"preconditions: `KINDS['{kind_name}'].from_spec`",
                    lambda: kind.from_spec(data, Violations()))
    options = {k: v for k, v in data.get("options", {}).items() if k != "method"}
    run = kind.methods[kind.default]
    solution = stage(f"solve: method `{kind.default}` (`{run.__name__}`)",
                     lambda: run(problem, **options))
    allocation = solution.allocation
    metrics = stage(f"metrics: `{kind.metrics.__module__}.{kind.metrics.__name__}`",
                    lambda: kind.metrics(problem, allocation))
    contexts = {n: Context(problem, allocation, lambda p: run(p, **options))}

    def at(m: int) -> Context:
        if m not in contexts:
            contexts[m], _ = solved_context(kind_name, make(m))
        return contexts[m]

    findings = []
    for check in kind.checks:
        def call_at(m: int, check=check) -> Callable[[], Any]:
            c = at(m)
            return lambda: check(c.problem, c.allocation, mechanism=c.mechanism)

        name = f"check `{check.__name__}`"
        log(f"cli/{kind_name}: {name} ...")
        got: dict = {}

        def guarded(name=name, call_at=call_at, got=got) -> Row:
            row, got["finding"] = guarded_stage(name, n, call_at)
            return row

        rows.append(safe(name, guarded))
        finding = got.get("finding")
        if finding is not None:
            findings.append(finding)
            rows[-1].note = f"{finding.verdict}: {finding.detail}"
    result = Result(problem=kind_name, method=kind.default, status=solution.status,
                    objective=solution.objective, allocation=allocation,
                    metrics={**metrics, **solution.metrics}, validation=findings,
                    solver={**solution.solver, "time_s": 0.0}, name=data.get("name"))
    text = stage("JSON rendering: `Result.to_json`", lambda: result.to_json())
    with open(os.devnull, "w", encoding="utf-8") as sink:
        stage("write to stdout (/dev/null)", lambda: sink.write(text + "\n"),
              f"{len(text) / 1e6:.1f} MB of JSON")
    return rows


def bench_cli(quick: bool) -> list[Table]:
    """Target 4: the whole command on 1e5-user specs under 3 s, and where the time goes."""
    target_n, target = 10**5, 3.0
    n = 10**4 if quick else target_n
    goal = target if n == target_n else None
    command = fairalloc_command()
    cases = [
        ("emrf", f"EMRF, {size(n)} users, 10 ratio classes",
         lambda m: random_spec("emrf", users=m)),
        ("drf", f"DRF, {size(n)} users, random demands (every user its own demand class)",
         lambda m: random_spec("drf", users=m)),
        ("drf", f"DRF, {size(n)} users, 20 task types (extra: few demand classes)",
         lambda m: random_spec("drf", users=m, types=20)),
    ]
    log("cli: python start-up + imports")
    startup = safe("startup", lambda: startup_row())
    summary: list[Row] = []
    tables: list[Table] = []
    for k, (kind_name, label, make) in enumerate(cases):
        path = workdir() / f"{kind_name}-{k}-{n}.json"
        log(f"cli: writing {label} to {path}")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(make(n), fh)
        try:
            stages = breakdown(kind_name, path, make, n, None if startup.error else startup)
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            stages = [Row("breakdown", error=f"{type(exc).__name__}: {exc}")]
        total = sum(r.seconds or 0.0 for r in stages)
        estimated = any(r.estimate for r in stages)
        top = max(stages, key=lambda r: r.seconds or 0.0)
        stages = [Row(r.case, r.seconds, r.target, r.runs, r.note, r.error, r.estimate,
                      (r.seconds or 0.0) / total if total else None, r.profile, r.profile_label)
                  for r in stages]
        stages.append(Row("**sum of the stages**", total, estimate=estimated, share=1.0,
                          note=f"largest: {top.case}"))
        row = run_command(command, path, label, goal, total, top)
        if top.profile is not None:
            row.profile = top.profile
            row.profile_label = f"{label}: its largest stage, {top.profile_label or top.case}"
        summary.append(row)
        tables.append(Table(
            f"cli-{k}", f"4.{k + 1} Where the time goes: {label}",
            "Each stage of `fairalloc solve SPEC --format json` timed in-process, in the order "
            "the command runs them (checks get the default method as mechanism, as the "
            "command does). A check whose probes (n/40, doubling) predict more than "
            f"{STAGE_BUDGET:.0f} s is extrapolated, not run.",
            stages, breakdown=True))
    intro = ("`fairalloc solve SPEC --format json > /dev/null` as a subprocess (wall clock, "
             "this venv's `fairalloc` script), specs written as JSON to a temp dir. Target "
             f"from the issue: 1e5 users under {target:.0f} s each. The third spec is an extra "
             "(same generator, demands drawn from 20 task types), not a target of the issue.")
    return [Table("cli", "4. The whole command", intro, summary), *tables]


def startup_row() -> Row:
    """Python start plus ``import fairalloc.cli`` (what every command pays before any work)."""
    def run():
        subprocess.run([sys.executable, "-c", "import fairalloc.cli"], check=True)

    t = measure(run)
    return Row("python start + `import fairalloc.cli` (subprocess)", t.best, runs=t.runs)


def run_command(command: list[str], path: Path, label: str, goal: float | None, predicted: float,
                top: Row) -> Row:
    case = f"`fairalloc solve` {label}"
    largest = f"largest stage: {top.case} ({fmt_time(top)})"
    if predicted > harness.CLI_BUDGET:
        log(f"cli: not starting the command: its stages add up to ≈ {fmt_seconds(predicted)}")
        return Row(case, predicted, goal, estimate=True,
                   note=f"not run: its stages add up to ≈ {fmt_seconds(predicted)}; {largest}")

    def run():
        with open(os.devnull, "wb") as sink:
            done = subprocess.run([*command, "solve", str(path), "--format", "json"],
                                  stdout=sink, stderr=subprocess.PIPE,
                                  timeout=max(60.0, 3 * predicted))
        if done.returncode not in (0, 1):
            raise RuntimeError(f"exit {done.returncode}: {done.stderr.decode()[-300:]}")
        return done.returncode

    def make_row() -> Row:
        log(f"cli: running {case}")
        t = measure(run)
        extra = t.best - predicted
        note = (f"exit {t.value}; stages in-process add up to {fmt_seconds(predicted)} "
                f"(the command takes {fmt_seconds(abs(extra))} "
                f"{'more' if extra >= 0 else 'less'}); {largest}")
        return Row(case, t.best, goal, t.runs, note)

    return safe(case, make_row, target=goal)

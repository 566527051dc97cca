"""Scaling benchmarks for fairalloc: measure, compare with the targets, write RESULTS.md.

Benchmarks are not tests: a missed target is reported (MISS), never raised, and a case that
fails is shown as ERROR while the others go on. Timings use ``time.perf_counter``; a case whose
first run is fast (under ``FAST`` seconds) is run three times and the best is kept, a slow one
once. Every random spec comes from a fixed seed.

    python benchmarks/run.py                       # everything, tables on stdout
    python benchmarks/run.py --write benchmarks/RESULTS.md
    python benchmarks/run.py --quick               # small sizes only (a smoke run)
    python benchmarks/run.py --only cli            # one benchmark (see --list)

Benchmarks (the issue's targets):

* ``drf``          progressive filling (``fill_divisible``) at 1e5 and 1e6 users, ``continue`` and
                   ``stop``; whole-task filling (``fill_whole_tasks``) at the size that takes ~1 s;
* ``emrf``         ``fairalloc.solve(spec, validate=False)`` on a loaded spec at 1e5 and 1e6 users
                   (~10 distinct splits), and each validator separately at 1e5;
* ``formulation``  the EMRF efficiency LP, literal Pyomo model vs ratio classes;
* ``cli``          ``fairalloc solve SPEC --format json`` as a subprocess at 1e5 users, and where
                   its time goes (parse, schema, preconditions, solve, each validator, JSON);
* ``drf-lp``       the exact DRF (leximin LPs through Pyomo) vs progressive filling;
* ``etf``          ETF slices: the closed form ``waterfill_slices`` at T = 1e3..1e9 with 1e5 apps,
                   Algorithm 1's heap ``greedy_slices`` at T = 1e4..1e6 (checked slice for slice
                   against it), ``fairalloc.solve`` on a loaded spec, the leximin MILP at 4..8 apps;
* ``moldable``     each list algorithm on section-V instances at m = 1024, n = 1e3..1e5 (1e5
                   extrapolated where 1e3 and 1e4 predict more than ~30 s); the exact MILP at
                   m = 8, n = 6..12; ``fairalloc experiment moldable`` at 20..80 instances.
* ``accelos``      the split + greedy (both greedy orders) at 100..1e4 kernels, the exact ILP
                   (max-min, then threads) at 10..100 kernels.
* ``token``        Algorithm 1 (``mean-field``) at 12 types, t_max 100, 1,000-point grids; the
                   simulation of 1,000 agents x 3,000 rounds x 6 mechanisms (and each alone);
                   ``mean-field-lp`` vs ``mean-field`` on the KMeans-vs-PageRank spec.

When a target is missed the case is run once more under cProfile and its hot spots are listed.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import importlib.metadata
import io
import json
import math
import os
import platform
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FAST = 2.0            # a first run faster than this is repeated (best of REPEAT)
REPEAT = 3
STAGE_BUDGET = 60.0   # seconds: a breakdown stage predicted to take longer is extrapolated
PROBE_CAP = 3.0       # seconds: probes for the extrapolation grow while faster than this
CLI_BUDGET = 120.0    # seconds: the command is not started when its stages add up to more
SEED = 20240531

ROOT = Path(__file__).resolve().parent.parent


def log(message: str) -> None:
    """Progress on stderr, so that stdout holds only the tables."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- random specs


DRF_RESOURCES = ("cpu", "mem", "disk", "net")
# capacity per user for each resource: cpu is the scarcest, so the first saturation ("stop")
# and Ghodsi's filling ("continue") end in different places
DRF_CAPACITY_PER_USER = (1.5, 2.5, 4.0, 6.0)


def drf_spec(n: int, seed: int = SEED, divisible: bool = True, saturation: str = "continue",
             types: int | None = None) -> dict:
    """A random DRF spec: 4 resources; each user needs a resource with probability 3/4 (and at
    least one), in an amount uniform in [0.1, 4) per task (3 decimals); weights uniform in
    [0.5, 4) (2 decimals); ~10% of users with max_tasks in 1..5. Resources a user does not need
    are left out of its demand, so users of a saturated resource freeze while others go on.

    ``types``: draw the demand vectors from that many task types instead (a cluster with a few
    job shapes)."""
    rng = np.random.default_rng(seed)
    D = len(DRF_RESOURCES)

    def demands(rng, count):
        amount = np.round(rng.uniform(0.1, 4.0, (count, D)), 3)
        needs = rng.random((count, D)) < 0.75
        needs[np.arange(count), rng.integers(0, D, count)] = True
        return np.where(needs, amount, 0.0)

    demand = demands(rng, n)
    weight = np.round(rng.uniform(0.5, 4.0, n), 2)
    capped = rng.random(n) < 0.10
    caps = rng.integers(1, 6, n)
    if types:
        demand = demands(np.random.default_rng(seed + 1), types)[rng.integers(0, types, n)]
    demand_l, weight_l = demand.tolist(), weight.tolist()
    users = []
    for i in range(n):
        user = {"id": f"u{i}", "weight": weight_l[i],
                "demand": {r: a for r, a in zip(DRF_RESOURCES, demand_l[i]) if a > 0}}
        if capped[i]:
            user["max_tasks"] = int(caps[i])
        users.append(user)
    return {
        "problem": "drf",
        "name": f"random drf, {n} users",
        "capacity": {r: round(c * n, 6) for r, c in zip(DRF_RESOURCES, DRF_CAPACITY_PER_USER)},
        "users": users,
        "divisible": divisible,
        "saturation": saturation,
    }


# ~10 distinct splits over 2 devices (the paper's cpu/gpu pair, GFLOPS capacities 100/800 per
# 10 users); the gpu fraction is written so that the two sum to exactly 1.0 in floating point
EMRF_CPU_FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def emrf_spec(n: int, seed: int = SEED, knob: float = 0.5,
              formulation: str | None = None) -> dict:
    """A random EMRF spec: 2 devices, each user's split one of 10 ratios, weights uniform in
    [0.5, 4) (2 decimals), knob 0.5."""
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, len(EMRF_CPU_FRACTIONS), n).tolist()
    weight = np.round(rng.uniform(0.5, 4.0, n), 2).tolist()
    splits = [{"cpu": c, "gpu": 1.0 - c} for c in EMRF_CPU_FRACTIONS]
    users = [{"id": f"u{i}", "weight": weight[i], "split": dict(splits[kind[i]])}
             for i in range(n)]
    spec = {
        "problem": "emrf",
        "name": f"random emrf, {n} users",
        "capacity": {"cpu": 10.0 * n, "gpu": 80.0 * n},
        "knob": knob,
        "users": users,
    }
    if formulation:
        spec["options"] = {"formulation": formulation}
    return spec


ETF_PHI = 0.5


def etf_spec(n: int, quantum: int, seed: int = SEED, phi: float = ETF_PHI) -> dict:
    """A random ETF spec: powers whole watts uniform in 50..300, weights 1, 2 or 3 (whole numbers,
    so that weighted energies often tie and the tie-break is exercised), ~10% of apps with a
    demand log-uniform in 1..1e5 slices, phi 0.5. The apps depend on n and the seed only, so
    the same apps can be given different quanta."""
    rng = np.random.default_rng(seed)
    power = rng.integers(50, 301, n).tolist()
    weight = rng.integers(1, 4, n).tolist()
    limited = rng.random(n) < 0.10
    demand = np.floor(10 ** rng.uniform(0.0, 5.0, n)).astype(np.int64).tolist()
    apps = []
    for i in range(n):
        app = {"id": f"a{i}", "weight": weight[i], "power": power[i]}
        if limited[i]:
            app["demand"] = demand[i]
        apps.append(app)
    return {
        "problem": "etf",
        "name": f"random etf, {n} apps, T = {quantum}",
        "quantum": int(quantum),
        "phi": phi,
        "apps": apps,
    }


def market_of(data: dict):
    """The problem object of a spec built straight from its kind's constructor (no schema
    check, no deep copy: setup for benchmarks that time the solver alone)."""
    from fairalloc.errors import Violations
    from fairalloc.registry import KINDS

    found = Violations()
    problem = KINDS[data["problem"]].from_spec(data, found)
    found.raise_if_any("benchmark spec")
    return problem


# --------------------------------------------------------------------------- measuring


@dataclass
class Timing:
    best: float
    runs: int
    value: Any = None


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def measure(fn: Callable[[], Any], fast: float = FAST, repeat: int = REPEAT) -> Timing:
    """Best of ``repeat`` runs when the first is under ``fast`` seconds, else the one run."""
    first, value = timed(fn)
    times = [first]
    if first < fast:
        times += [timed(fn)[0] for _ in range(repeat - 1)]
    return Timing(min(times), len(times), value)


@dataclass
class Row:
    """One line of a table. ``target`` in seconds (PASS when ``seconds <= target``)."""

    case: str
    seconds: float | None = None
    target: float | None = None
    runs: int = 0
    note: str = ""
    error: str | None = None
    estimate: bool = False           # ``seconds`` is extrapolated, not measured
    share: float | None = None       # breakdown tables: fraction of the whole
    profile: Callable[[], Any] | None = field(default=None, repr=False)
    profile_label: str = ""
    verdict: str | None = None       # overrides the PASS/MISS of seconds vs target

    @property
    def status(self) -> str:
        if self.error:
            return "ERROR"
        if self.verdict:
            return self.verdict
        if self.target is None or self.seconds is None:
            return "—"
        return "PASS" if self.seconds <= self.target and not self.estimate else "MISS"


@dataclass
class Table:
    key: str
    title: str
    intro: str
    rows: list[Row]
    breakdown: bool = False          # a "where the time goes" table (share column, no targets)

    def markdown(self) -> str:
        out = [f"### {self.title}", "", self.intro, ""]
        if self.breakdown:
            out += ["| stage | time | share | notes |", "| --- | ---: | ---: | --- |"]
            for r in self.rows:
                share = "" if r.share is None else f"{100 * r.share:.1f}%"
                out.append(f"| {r.case} | {fmt_time(r)} | {share} | {notes(r)} |")
        else:
            out += ["| case | target | measured | result | runs | notes |",
                    "| --- | ---: | ---: | :---: | ---: | --- |"]
            for r in self.rows:
                target = f"< {fmt_seconds(r.target)}" if r.target is not None else "—"
                out.append(f"| {r.case} | {target} | {fmt_time(r)} | {r.status} | "
                           f"{r.runs or ''} | {notes(r)} |")
        return "\n".join(out) + "\n"


def fmt_seconds(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "—"
    if s < 0:
        return "-" + fmt_seconds(-s)
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1.0:
        return f"{s * 1e3:.1f} ms"
    if s < 10.0:
        return f"{s:.3f} s"
    return f"{s:.1f} s"


def fmt_time(r: Row) -> str:
    if r.error:
        return "error"
    text = fmt_seconds(r.seconds)
    return f"≈ {text} (extrapolated)" if r.estimate and r.seconds is not None else text


def notes(r: Row) -> str:
    text = r.note
    if r.error:
        text = f"{text}; {r.error}" if text else r.error
    return text.replace("|", "\\|").replace("\n", " ")


def safe(case: str, fn: Callable[[], Row], **defaults) -> Row:
    """Run a case; an exception becomes an ERROR row (benchmarks never raise)."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        log(f"{case}: {type(exc).__name__}: {exc}")
        traceback.print_exc(file=sys.stderr)
        return Row(case, error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
                   **defaults)


def timed_row(case: str, fn: Callable[[], Any], target: float | None = None, note: str = "",
              describe: Callable[[Any, Timing], str] | None = None, profile: bool = True) -> Row:
    def run() -> Row:
        log(f"{case} ...")
        t = measure(fn)
        text = describe(t.value, t) if describe else note
        row = Row(case, t.best, target, t.runs, text, profile=fn if profile else None)
        log(f"{case}: {fmt_seconds(t.best)} ({t.runs} run{'s' if t.runs > 1 else ''})")
        return row

    return safe(case, run, target=target, note=note)


def nice(n: float) -> int:
    """n rounded to two significant digits."""
    if n < 100:
        return max(1, int(round(n)))
    digits = int(math.floor(math.log10(n))) - 1
    return int(round(n / 10 ** digits) * 10 ** digits)


def size(n: int) -> str:
    """1000000 -> 1e6, 30000 -> 3e4, 12345 -> 12345."""
    exp = int(math.floor(math.log10(n))) if n > 0 else 0
    mant = n / 10 ** exp
    if n >= 1000 and mant == int(mant):
        return f"{int(mant)}e{exp}" if mant != 1 else f"1e{exp}"
    return str(n)


# --------------------------------------------------------------------------- profiles


@dataclass
class HotSpot:
    case: str
    profiled_as: str
    total: float
    lines: list[tuple[str, int, float, float]]   # function, calls, own time, cumulative time


def _short_path(filename: str) -> str:
    for marker in ("/fairalloc/", "/site-packages/", "/lib/python"):
        if marker in filename:
            return filename[filename.index(marker) + 1:]
    return filename


def profile_call(case: str, fn: Callable[[], Any], label: str = "") -> HotSpot | None:
    """Run ``fn`` once under cProfile: the fairalloc functions with the most cumulative time
    (where to look) and the functions with the most own time (what actually burns it)."""
    log(f"profiling {case} ...")
    prof = cProfile.Profile()
    try:
        start = time.perf_counter()
        prof.runcall(fn)
        total = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001
        log(f"profiling {case} failed: {exc}")
        return None
    stats = pstats.Stats(prof, stream=io.StringIO())
    entries = []
    for (filename, line, name), (_, calls, own, cum, _) in stats.stats.items():
        where = _short_path(filename)
        label_fn = f"{where}:{line}({name})" if line else name
        entries.append((label_fn, calls, own, cum, "fairalloc/" in where))
    ours = sorted((e for e in entries if e[4]), key=lambda e: -e[3])[:8]
    own = sorted(entries, key=lambda e: -e[2])[:6]
    lines, seen = [], set()
    for e in ours + own:
        if e[0] not in seen:
            seen.add(e[0])
            lines.append(e[:4])
    return HotSpot(case, label or case, total, lines)


def hotspot_markdown(spots: list[HotSpot]) -> str:
    if not spots:
        return ""
    out = ["## Hot spots of the missed targets", "",
           "Each missed case run once more under cProfile (profiling slows pure-Python code down, "
           "so read the proportions, not the totals). First the fairalloc functions by cumulative "
           "time, then the functions (anywhere) with the most time of their own.", ""]
    for s in spots:
        out += [f"#### {s.profiled_as} — {fmt_seconds(s.total)} under the profiler", "",
                "| function | calls | own | cumulative |", "| --- | ---: | ---: | ---: |"]
        for name, calls, own, cum in s.lines:
            out.append(f"| `{name}` | {calls} | {fmt_seconds(own)} | {fmt_seconds(cum)} |")
        out.append("")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- 1. DRF filling


def bench_drf(quick: bool) -> list[Table]:
    """Target 1: DRF progressive filling, 1e6 users x 4 resources, under 0.5 s."""
    from fairalloc.solvers.drf import fill_divisible, fill_whole_tasks

    target_n, target = 10**6, 0.5
    sizes = (10**4, 10**5) if quick else (10**5, 10**6)
    rows: list[Row] = []
    for n in sizes:
        log(f"drf: building a {size(n)}-user market")
        market = market_of(drf_spec(n)).market
        goal = target if n == target_n else None
        for stop in (False, True):
            mode = "stop" if stop else "continue"

            def describe(x, t, market=market):
                capped = int(np.sum(np.isfinite(market.caps) & (x >= market.caps - 1e-9)))
                return f"{x.sum():.6g} tasks in all, {capped} users at max_tasks"

            rows.append(timed_row(
                f"`fill_divisible`, {size(n)} users, saturation={mode}",
                lambda market=market, stop=stop: fill_divisible(market, stop),
                goal, describe=describe))
        del market
        gc.collect()

    def whole(n: int) -> Row:
        market = market_of(drf_spec(n, divisible=False)).market
        return timed_row(
            f"`fill_whole_tasks`, {size(n)} users",
            lambda: fill_whole_tasks(market),
            describe=lambda x, t: f"{x.sum():.0f} whole tasks, {x.sum() / t.best:,.0f} tasks/s",
            profile=False)

    # whole tasks: grow the size towards one second (the heap makes it a little superlinear)
    n = 5000 if quick else 10**4
    tried: dict[int, float] = {}
    for _ in range(1 if quick else 4):
        row = whole(n)
        rows.append(row)
        if not row.seconds:
            break
        tried[n] = row.seconds
        if 0.8 <= row.seconds <= 1.25:
            break
        n = nice(n / row.seconds)
        if n in tried:
            break
    near = [r for r in rows if r.case.startswith("`fill_whole_tasks`") and r.seconds]
    if not quick and near:
        best = min(near, key=lambda r: abs(math.log(r.seconds)))
        best.note += " (the size nearest ~1 s)"
    return [Table(
        "drf", "1. DRF progressive filling (`fairalloc.solvers.drf`)",
        "Random demands (4 resources, each needed with probability 3/4, uniform amounts; capacity "
        "per user 1.5/2.5/4/6), random weights, "
        "~10% of users with max_tasks in 1..5. Timed: the filling on the problem's market "
        "(building the market is setup). Target from the issue: 1e6 users under 0.5 s "
        "(applied to both saturation modes).",
        rows)]


# --------------------------------------------------------------------------- 2. EMRF solve


def emrf_mechanism(problem):
    """The mechanism the brief asks for: the EMRF ``lp`` method with default options."""
    from fairalloc.registry import KINDS

    return KINDS["emrf"].methods["lp"](problem)


def bench_emrf(quick: bool) -> list[Table]:
    """Target 2: fairalloc.solve on a loaded EMRF spec, 1e6 users / ~10 ratios, under 1 s."""
    import fairalloc
    from fairalloc.registry import KINDS

    target_n, target = 10**6, 1.0
    sizes = (10**4, 10**5) if quick else (10**5, 10**6)
    validate_n = sizes[0]
    rows: list[Row] = []
    for n in sizes:
        data = emrf_spec(n)
        case = f"load_spec(dict), {size(n)} users (setup, not timed below)"
        log(f"emrf: {case}")
        loaded: dict = {}

        def load(data=data, loaded=loaded):
            loaded["spec"] = fairalloc.load_spec(data)
            return loaded["spec"]

        rows.append(safe(case, lambda case=case, load=load: Row(
            case, timed(load)[0], runs=1, note="schema check + preconditions")))
        spec = loaded.get("spec")
        del data
        if spec is None:
            continue
        goal = target if n == target_n else None

        def describe(r, t):
            formulation = r.solver["extra"].get("formulation", r.solver["name"] or "")
            return f"status {r.status}, objective {r.objective:.6g}; {formulation}"

        rows.append(timed_row(f"solve(spec, validate=False), {size(n)} users",
                              lambda spec=spec: fairalloc.solve(spec, validate=False),
                              goal, describe=describe))
        if n == validate_n:
            rows.append(timed_row(
                f"solve(spec, validate=True), {size(n)} users",
                lambda spec=spec: fairalloc.solve(spec, validate=True),
                describe=lambda r, t: "checks: " + ", ".join(
                    f"{f.check} {f.verdict}" for f in r.validation),
                profile=False))
            result = fairalloc.solve(spec, validate=False)
            kind = KINDS["emrf"]

            for check in kind.validators:
                def call(check=check, spec=spec, result=result):
                    return check(spec.problem, result.allocation, mechanism=emrf_mechanism)

                rows.append(timed_row(
                    f"validator `{check.__name__}`, {size(n)} users", call,
                    describe=lambda f, t: "skipped (None)" if f is None else
                    f"{f.verdict}: {f.detail}",
                    profile=False))
        del spec
        gc.collect()
    return [Table(
        "emrf", "2. EMRF solve through the API (spec already loaded)",
        "Random splits from 10 distinct cpu/gpu ratios, random weights, knob 0.5. Timed: "
        "`fairalloc.solve(spec, validate=False)` after `fairalloc.load_spec(dict)`; each "
        "validator of `KINDS['emrf']` separately on the same allocation with "
        "`mechanism = lambda p: KINDS['emrf'].methods['lp'](p)`. "
        "Target from the issue: 1e6 users under 1 s.",
        rows)]


# --------------------------------------------------------------------------- 3. formulations


def bench_formulation(quick: bool) -> list[Table]:
    """Target 3: the literal Pyomo LP vs the ratio-class LP for EMRF."""
    import fairalloc
    from fairalloc.models.emrf import efficiency_model, residual_capacity

    sizes = (100, 1000) if quick else (100, 1000, 10000)
    rows: list[Row] = []
    # warm-up: the first Pyomo solve pays for importing and registering the HiGHS interface
    fairalloc.solve(fairalloc.load_spec(emrf_spec(10, formulation="literal")), validate=False)
    for n in sizes:
        objectives = {}
        for formulation in ("classes", "literal"):
            spec = fairalloc.load_spec(emrf_spec(n, formulation=formulation))

            def describe(r, t, formulation=formulation, objectives=objectives):
                objectives[formulation] = r.objective
                return f"objective {r.objective:.10g}"

            row = timed_row(f"EMRF {formulation}, {size(n)} users",
                            lambda spec=spec: fairalloc.solve(spec, validate=False),
                            describe=describe, profile=False)
            if formulation == "literal" and rows and rows[-1].seconds and row.seconds:
                row.note += f"; {row.seconds / rows[-1].seconds:.0f}x the class path"
                a, b = objectives.get("classes"), objectives.get("literal")
                if a is not None and b is not None:
                    row.note += f", objectives differ by {abs(a - b) / max(abs(a), 1e-300):.1e}"
            rows.append(row)
            if formulation == "literal":
                m = spec.problem.market
                residual = residual_capacity(m, spec.problem.effective_knob())
                rows.append(timed_row(
                    f"&nbsp;&nbsp;of which building the Pyomo model, {size(n)} users",
                    lambda m=m, residual=residual: efficiency_model(m, residual),
                    describe=lambda model, t: f"{model.nconstraints()} constraints, "
                                              f"{model.nvariables()} variables",
                    profile=False))
    return [Table(
        "formulation", "3. EMRF efficiency LP: literal Pyomo model vs ratio classes",
        "Same random specs as target 2 (10 ratio classes), `options.formulation` set to "
        "`classes` or `literal`; timed: `fairalloc.solve(spec, validate=False)`. The literal "
        "model has one variable per user and chains F_i/S_i = F_j/S_j user to user; the class "
        "path has one variable per ratio class whatever n is.",
        rows)]


# --------------------------------------------------------------------------- 4. the command


def fairalloc_command() -> list[str]:
    script = Path(sys.executable).parent / "fairalloc"
    if script.exists():
        return [str(script)]
    found = shutil.which("fairalloc")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from fairalloc.cli import main; sys.exit(main())"]


@dataclass
class Context:
    """One spec at one size, solved: what the validators need."""

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
    for check in kind.validators:
        def call_at(m: int, check=check) -> Callable[[], Any]:
            c = at(m)
            return lambda: check(c.problem, c.allocation, mechanism=c.mechanism)

        name = f"validator `{check.__name__}`"
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
        ("emrf", f"EMRF, {size(n)} users, 10 ratio classes", lambda m: emrf_spec(m)),
        ("drf", f"DRF, {size(n)} users, random demands (every user its own demand class)",
         lambda m: drf_spec(m)),
        ("drf", f"DRF, {size(n)} users, 20 task types (extra: few demand classes)",
         lambda m: drf_spec(m, types=20)),
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
            "the command runs them (validators get the default method as mechanism, as the "
            "command does). A validator whose probes (n/40, doubling) predict more than "
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


_WORKDIR: list[Path] = []


def workdir() -> Path:
    """A temporary directory for spec files, removed when the run ends."""
    if not _WORKDIR:
        _WORKDIR.append(Path(tempfile.mkdtemp(prefix="fairalloc-bench-")))
    return _WORKDIR[0]


def run_command(command: list[str], path: Path, label: str, goal: float | None, predicted: float,
                top: Row) -> Row:
    case = f"`fairalloc solve` {label}"
    largest = f"largest stage: {top.case} ({fmt_time(top)})"
    if predicted > CLI_BUDGET:
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


# --------------------------------------------------------------------------- 5. DRF exact


def bench_drf_lp(quick: bool) -> list[Table]:
    """Target 5: the exact DRF (leximin LP rounds through Pyomo) vs progressive filling."""
    import fairalloc

    sizes = (10, 100) if quick else (10, 100, 1000)
    rows: list[Row] = []
    fairalloc.solve(fairalloc.load_spec(drf_spec(5)), method="lp", validate=False)  # warm-up
    for n in sizes:
        spec = fairalloc.load_spec(drf_spec(n))
        found = {}
        for method in ("progressive-filling", "lp"):
            def describe(r, t, method=method, found=found):
                found[method] = np.asarray(r.allocation.column("tasks"), dtype=float)
                rounds = r.solver["extra"].get("rounds")
                return f"status {r.status}" + (f", {rounds} LP rounds" if rounds else "")

            row = timed_row(f"DRF {method}, {size(n)} users",
                            lambda spec=spec, method=method: fairalloc.solve(
                                spec, method=method, validate=False),
                            describe=describe, profile=False)
            if method == "lp" and rows and rows[-1].seconds and row.seconds:
                a, b = found.get("progressive-filling"), found.get("lp")
                row.note += f"; {row.seconds / rows[-1].seconds:,.0f}x progressive filling"
                if a is not None and b is not None:
                    gap = float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(a)))))
                    row.note += f"; tasks differ by at most {gap:.1e} (relative)"
                    if gap > 1e-6:
                        row.note += " — **the two methods disagree**"
            rows.append(row)
    return [Table(
        "drf-lp", "5. DRF: exact leximin LP (Pyomo + HiGHS) vs progressive filling",
        "Same random DRF specs as target 1 (divisible, saturation continue); timed: "
        "`fairalloc.solve(spec, method=..., validate=False)`.",
        rows)]


# --------------------------------------------------------------------------- 6. ETF slices


def etf_leftover(problem) -> int:
    """Slices the guarantees leave for the energy-fair step (what Algorithm 1's loop walks)."""
    from fairalloc.models.etf import guarantee

    g = guarantee(problem)
    room = np.minimum(problem.demand, float(problem.quantum)) - g
    return int(min(problem.quantum - g.sum(), room.sum()))


def etf_level_zero(problem) -> bool:
    """True when every leftover slice is handed out at weighted energy 0: at least as many apps
    with a zero guarantee (and room) as leftover slices, so the slices go by spec order and the
    water level the bisection looks for is 0."""
    from fairalloc.models.etf import guarantee

    g = guarantee(problem)
    return int(np.sum((g == 0) & (problem.demand > 0))) >= etf_leftover(problem)


def slice_agreement(a: np.ndarray, b: np.ndarray, what: str) -> str:
    diff = np.flatnonzero(np.asarray(a) != np.asarray(b))
    if not len(diff):
        return f"agrees with {what} slice for slice"
    worst = int(np.max(np.abs(np.asarray(a, dtype=np.int64)[diff]
                              - np.asarray(b, dtype=np.int64)[diff])))
    return (f"**differs from {what} on {len(diff)} apps** (by up to {worst} slices; "
            f"first: app index {int(diff[0])})")


def etf_api_rows(data: dict, n: int, target_t: int) -> list[Row]:
    """``fairalloc.solve(spec, validate=False)`` on the loaded ETF spec (loading timed as setup),
    compared with the bare ``waterfill_slices`` on the same problem timed right after it."""
    import fairalloc
    from fairalloc.solvers.etf import waterfill_slices

    rows: list[Row] = []
    case = f"load_spec(dict), {size(n)} apps, T = {size(target_t)} (setup, not timed below)"
    log(f"etf: {case}")
    loaded: dict = {}

    def load():
        loaded["spec"] = fairalloc.load_spec(data)

    rows.append(safe(case, lambda: Row(case, timed(load)[0], runs=1,
                                       note="schema check + preconditions")))
    spec = loaded.get("spec")
    if spec is not None:
        def describe_api(r, t):
            m = r.metrics
            text = (f"method {r.method}, status {r.status}, objective (min weighted energy) "
                    f"{r.objective:.6g}; F_T {m['time_fairness']:.3g}, "
                    f"F_E {m['energy_fairness']:.3g}, phi_fair {m['phi_fair']:.3g}")
            bare = measure(lambda: waterfill_slices(spec.problem)).best
            return (text + f"; {t.best / bare:.2f}x the bare `waterfill_slices` on the same "
                    f"problem, timed right after ({fmt_seconds(bare)})")

        rows.append(timed_row(f"solve(spec, validate=False), {size(n)} apps, "
                              f"T = {size(target_t)}",
                              lambda: fairalloc.solve(spec, validate=False),
                              describe=describe_api))
    return rows


def bench_etf(quick: bool) -> list[Table]:
    """Target 6: ETF water-filling, 1e5 apps at T = 1e9, under 1 s; Algorithm 1 and the MILP."""
    from fairalloc.models.etf import energy_key
    from fairalloc.solvers.etf import greedy_slices, leximin_milp, waterfill_slices

    target_n, target_t, target = 10**5, 10**9, 1.0
    n = 10**4 if quick else target_n
    fill_quanta = (10**9, 10**6, 10**3)
    greedy_quanta = (10**3, 10**4, 10**5) if quick else (10**4, 10**5, 10**6)
    milp_sizes = (4, 6) if quick else (4, 6, 8)
    log(f"etf: building {size(n)} random apps")
    data = etf_spec(n, target_t)
    problems = {T: market_of({**data, "quantum": T})
                for T in sorted({*fill_quanta, *greedy_quanta, 1})}
    rows: list[Row] = []

    # the closed form: its cost should not depend on T
    fill: dict[int, np.ndarray] = {}
    base: list[float] = []
    for T in fill_quanta:
        p = problems[T]
        goal = target if (n, T) == (target_n, target_t) else None

        def describe(x, t, p=p, T=T):
            fill[T] = x
            hi = np.minimum(p.demand, float(p.quantum))
            at_demand = int(np.sum(np.isfinite(p.demand) & (x >= hi)))
            text = (f"{int(x.sum()):,} slices, {etf_leftover(p):,} left after the guarantees; "
                    f"{at_demand:,} apps at their demand")
            if base:
                text += f"; {t.best / base[0]:.2f}x the T = {size(fill_quanta[0])} time"
            else:
                base.append(t.best)
            if etf_level_zero(p):
                text += ("; every leftover slice goes at weighted energy 0 (spec order), so the "
                         "bisection searches down through subnormal floats")
            return text

        rows.append(timed_row(f"`waterfill_slices`, {size(n)} apps, T = {size(T)}",
                              lambda p=p: waterfill_slices(p), goal, describe=describe))

    # Algorithm 1 as printed: one heap pop per leftover slice
    def fixed_part(x, t):
        return ("the part that does not grow with T (guarantees, lists, a heap of "
                f"{size(n)} apps)")

    fixed = timed_row(f"`greedy_slices`, {size(n)} apps, T = 1 (extra: its fixed cost)",
                      lambda: greedy_slices(problems[1]), describe=fixed_part, profile=False)
    rows.append(fixed)
    previous: tuple[Row, int, int] | None = None      # row, T, leftover slices
    for T in greedy_quanta:
        p = problems[T]
        left = etf_leftover(p)
        found: dict = {}

        def describe(x, t, p=p, T=T, left=left, found=found):
            found["x"] = x
            text = f"{left:,} leftover slices, {left / t.best:,.0f} slices/s"
            if fixed.seconds and t.best > fixed.seconds:
                per = (t.best - fixed.seconds) / max(left, 1)
                text += f" ({per * 1e6:.2f} µs a slice beyond the T = 1 time)"
            return text

        row = timed_row(f"`greedy_slices`, {size(n)} apps, T = {size(T)}",
                        lambda p=p: greedy_slices(p), describe=describe, profile=False)
        if previous is not None and previous[0].seconds and row.seconds:
            last, last_t, last_left = previous
            row.note += (f"; {T // last_t}x T: {row.seconds / last.seconds:.1f}x the time, "
                         f"{left / max(last_left, 1):.1f}x the leftover slices")
        if "x" in found:
            reference = fill.get(T)
            if reference is None:
                reference = waterfill_slices(p)
            row.note += "; " + slice_agreement(found["x"], reference, "`waterfill_slices`")
        rows.append(row)
        previous = (row, T, left)
    fill.clear()
    problems.clear()
    rows += etf_api_rows(data, n, target_t)
    del data
    gc.collect()

    # the exact leximin: n MILPs of O(n^2) columns
    leximin_milp(market_of(etf_spec(2, 100)))              # warm-up: HiGHS's first solve
    first: list[float] = []
    for m in milp_sizes:
        p = market_of(etf_spec(m, 100))

        def describe_milp(sol, t, p=p):
            text = (f"status {sol.status}, {sol.solver.get('rounds')} MILP rounds, "
                    f"gap {sol.solver.get('gap', 0):.1g}")
            t_milp = np.asarray(sol.allocation.column("time"), dtype=float)
            mine = np.sort(energy_key(t_milp, p.power, p.weights))
            theirs = np.sort(energy_key(waterfill_slices(p).astype(float), p.power, p.weights))
            same = np.allclose(mine, theirs, rtol=1e-9, atol=1e-9)
            text += ("; sorted weighted energies equal waterfill's" if same else
                     f"; **sorted weighted energies differ from waterfill's** (min "
                     f"{mine[0]:.6g} vs {theirs[0]:.6g})")
            if first:
                text += f"; {t.best / first[0]:.1f}x the {milp_sizes[0]}-app time"
            else:
                first.append(t.best)
            return text

        rows.append(timed_row(f"`leximin_milp` (method `milp`), {m} apps, T = 100",
                              lambda p=p: leximin_milp(p), describe=describe_milp,
                              profile=False))
    return [Table(
        "etf", "6. ETF time slices: closed form, Algorithm 1, the API, the exact MILP",
        f"Random apps: powers 50..300 W and weights 1..3 (whole numbers, so weighted energies tie "
        f"often), ~10% with a demand log-uniform in 1..1e5 slices, phi {ETF_PHI}; the same "
        f"{size(n)} apps at every T. Timed: `fairalloc.solvers.etf.waterfill_slices` and "
        "`greedy_slices` on the problem object (building it is setup); "
        "`fairalloc.solve(spec, validate=False)` after `fairalloc.load_spec(dict)`; "
        "`leximin_milp` on small random specs at T = 100 (a warm-up solve first). Each "
        "`greedy_slices` row is checked slice for slice against `waterfill_slices` at the same "
        f"T (a disagreement is reported in bold, not raised). Target from the issue: "
        f"`waterfill_slices` with {size(target_n)} apps at T = {size(target_t)} under "
        f"{target:.0f} s.",
        rows)]


# --------------------------------------------------------------------------- 7. moldable jobs


MOLDABLE_LISTS = ("gpusched1-star", "gpusched1", "gpusched2", "work-conserving",
                  "offload-then-list", "offload-then-shelves")
MOLDABLE_RUN_BUDGET = 30.0   # seconds: a 1e5 case predicted to take longer is extrapolated


def moldable_problem(seed: int, n: int, m: int):
    """A loaded random section-V spec (beta 0.5, linear speedup): its problem object."""
    import fairalloc
    from fairalloc.experiment import moldable_instance

    return fairalloc.load_spec(moldable_instance(seed, n, m, beta=0.5, speedup="linear")).problem


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
        "Random section-V instances (`fairalloc.experiment.moldable_instance(seed, n, 1024, "
        "beta=0.5, speedup='linear')`, loaded with `fairalloc.load_spec`; the same instance for "
        "every method). Timed: the method of `KINDS['moldable']` on the loaded problem. The "
        f"{size(target_n)} case is run only when the growth between the two smaller sizes "
        f"(clamped to n^1..n^2) predicts under {MOLDABLE_RUN_BUDGET:.0f} s; otherwise it is "
        "that prediction, marked extrapolated (and a MISS). Target from the issue: each list "
        f"algorithm on {size(target_n)} jobs and m = {m} under {target:.0f} s.",
        rows)


def moldable_exact(quick: bool) -> Table:
    """The exact method at m = 8: how many random instances it proves optimal, and how fast."""
    from fairalloc.registry import KINDS

    exact = KINDS["moldable"].methods["exact"]
    m, limit, aim = 8, 60.0, 12
    sizes = (6,) if quick else (6, 8, 10, 12)
    seeds = [SEED + s for s in range(1 if quick else 3)]
    exact(moldable_problem(1, 6, m), time_limit=limit)       # warm-up: builds and solves a MILP
    rows: list[Row] = []
    all_proven: list[int] = []
    for n in sizes:
        runs = []
        for seed in seeds:
            log(f"moldable: exact, {n} jobs, m = {m}, seed {seed} ...")
            problem = moldable_problem(seed, n, m)
            try:
                t, sol = timed(lambda problem=problem: exact(problem, time_limit=limit))
            except Exception as exc:  # noqa: BLE001
                traceback.print_exc(file=sys.stderr)
                runs.append((seed, None, None, f"{type(exc).__name__}: {exc}"))
                continue
            milp = "no MILP" if "no MILP" in sol.solver["name"] else "MILP"
            runs.append((seed, t, sol.status,
                         f"{milp}, gap {sol.solver.get('gap', 0):.1g}"))
            log(f"moldable: exact, {n} jobs, seed {seed}: {fmt_seconds(t)}, {sol.status}")
        proven = sum(1 for _, t, status, _ in runs if status == "optimal" and t <= limit)
        times = [t for _, t, _, _ in runs if t is not None]
        detail = "; ".join(
            f"seed {seed}: {fmt_seconds(t) if t is not None else 'error'} "
            f"{status or ''} ({what})".replace("  ", " ")
            for seed, t, status, what in runs)
        row = Row(f"`exact`, {n} jobs, m = {m} (slowest of {len(seeds)})",
                  max(times) if times else None, limit, runs=len(runs),
                  note=f"**{proven} of {len(runs)} proven optimal**; {detail}")
        if proven < len(seeds):
            row.verdict = "MISS"
        rows.append(row)
        if proven == len(seeds):
            all_proven.append(n)
    largest = max((n for n in all_proven if all(k in all_proven for k in sizes if k <= n)),
                  default=None)
    summary = Row(f"largest n proven optimal on all {len(seeds)} seeds within "
                  f"{limit:.0f} s, m = {m}", runs=0,
                  note=(f"n = {largest}" if largest else "none") + f" (aim: {aim}; sizes tried: "
                  f"{', '.join(map(str, sizes))})")
    summary.verdict = "PASS" if largest is not None and largest >= aim else "MISS"
    rows.append(summary)
    return Table(
        "moldable-exact", "7.2 Moldable jobs: the exact method at m = 8",
        f"`KINDS['moldable'].methods['exact'](problem, time_limit={limit:.0f})` on random "
        f"section-V instances (`moldable_instance(seed, n, {m}, beta=0.5, speedup='linear')`, "
        f"seeds {', '.join(map(str, seeds))}), one run each after a warm-up solve. A run is "
        "proven when its status is `optimal`; 'no MILP' means the best list schedule already "
        "met the lower bound (`lower_bound`: the bus alone, and the processors alone after the "
        "first offload), so HiGHS was not "
        f"called. Target from the issue: the largest n proven optimal within {limit:.0f} s for "
        f"m = {m} (aim for {aim}).",
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


def bench_moldable(quick: bool) -> list[Table]:
    """Moldable jobs: list algorithms at m = 1024 (1e5 under 5 s), exact at m = 8, experiment."""
    tables = []
    for name, part in (("lists", moldable_lists), ("exact", moldable_exact),
                       ("experiment", moldable_experiment)):
        try:
            tables.append(part(quick))
        except Exception as exc:  # noqa: BLE001 - a broken part is reported, not raised
            traceback.print_exc(file=sys.stderr)
            tables.append(Table(f"moldable-{name}", f"7. moldable ({name}): failed", "",
                                [Row(name, error=f"{type(exc).__name__}: {exc}")]))
    return tables


# --------------------------------------------------------------------------- 8. accelos


def accelos_spec(k: int, seed: int = SEED) -> dict:
    """k kernels drawn (with repetition) from the experiment's synthetic Parboil-like table on a
    GCN-like device scaled to them: 44 compute units per 8 kernels (2560 threads, 64 KiB of
    local memory and 65536 registers each); shares 1, 2 or 0.5."""
    from fairalloc.experiments_accelos import KERNELS, Device

    rng = np.random.default_rng(seed)
    device = Device("scaled gcn", max(44, math.ceil(44 * k / 8)), 2560, 64 * 1024, 65536)
    picks = rng.integers(0, len(KERNELS), k).tolist()
    shares = rng.choice([1.0, 2.0, 0.5], k).tolist()
    kernels = [{"id": f"k{i}", "work_group_size": KERNELS[t].work_group_size,
                "local_memory_per_group": KERNELS[t].local_memory_per_group,
                "registers_per_thread": KERNELS[t].registers_per_thread,
                "work_groups": KERNELS[t].work_groups,
                "time_per_group": KERNELS[t].time_per_group, "share": shares[i]}
               for i, t in enumerate(picks)]
    return {"problem": "accelos", "device": device.spec(), "kernels": kernels}


def bench_accelos(quick: bool) -> list[Table]:
    """accelOS: the split + greedy with 1e3 kernels under 0.1 s; the ILP at 100 kernels."""
    from fairalloc.models.accelos import weighted_dominant_share
    from fairalloc.solvers.accelos import accelos, ilp

    target_k, target = 1000, 0.1
    greedy_sizes = (100, 1000) if quick else (100, 1000, 10000)
    ilp_sizes = (10, 30) if quick else (10, 30, 100)
    rows: list[Row] = []
    for k in greedy_sizes:
        p = market_of(accelos_spec(k))
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

    for k in ilp_sizes[-1:] + (target_k,):
        loaded = fairalloc.load_spec(accelos_spec(k))

        def describe_solve(result, t):
            return ("metrics include the wave model's standard-OpenCL run (an event loop, one "
                    "event per batch of finishing groups); checks: "
                    + ", ".join(f"{f.check} {f.mark}"
                                for f in result.validation))

        rows.append(timed_row(f"`fairalloc.solve(spec)` (accelos, metrics and checks), "
                              f"{size(k)} kernels", lambda loaded=loaded: fairalloc.solve(loaded),
                              describe=describe_solve, profile=False))
    ilp(market_of(accelos_spec(2)))                    # warm-up: HiGHS's first solve
    for k in ilp_sizes:
        p = market_of(accelos_spec(k))

        def describe_ilp(sol, t, p=p):
            heuristic = accelos(p)
            n = sol.allocation.column("work_groups")
            return (f"status {sol.status}, gap {sol.solver.get('gap', 0):.1g}; smallest weighted "
                    f"dominant share {sol.objective:.4g} (accelos {heuristic.objective:.4g}); "
                    f"threads in use {int(n @ p.demand[:, 0]):,} of {int(p.capacity[0]):,}; "
                    f"max share {float(weighted_dominant_share(p, n).max()):.4g}")

        rows.append(timed_row(f"`ilp` (two HiGHS MILPs), {k} kernels", lambda p=p: ilp(p),
                              describe=describe_ilp, profile=False))
    return [Table(
        "accelos", "8. accelOS work groups: the split + greedy and the exact ILP",
        "Random mixes of the synthetic Parboil-like kernels of `fairalloc experiment accelos` "
        "on a GCN-like device with 44 compute units per 8 kernels, shares 1, 2 or 0.5. Timed: "
        "`fairalloc.solvers.accelos.accelos` (section 3's split, then the greedy; batched, "
        "exactly the one-group-at-a-time greedy) and `ilp` (round 1 max-min, round 2 threads) "
        "on the problem object (building it is setup; a warm-up solve first). Target from the "
        f"issue: `accelos` with {size(target_k)} kernels under {fmt_seconds(target)}; the ILP "
        "at 100 kernels is reported, no target.",
        rows)]


# --------------------------------------------------------------------------- 9. token


def token_spec(types: int, max_tokens: int, points: int, seed: int = SEED) -> dict:
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


def bench_token(quick: bool) -> list[Table]:
    """Token: Algorithm 1 with 12 types, t_max 100, 1,000-point grids under 1 s; the simulation
    of 1,000 agents x 3,000 rounds x 6 mechanisms under 5 s."""
    from dataclasses import replace

    import fairalloc
    from fairalloc.simulation import MECHANISMS, simulate
    from fairalloc.solvers.token import mean_field, mean_field_lp
    from fairalloc.validators.token import equilibrium

    types, t_max, points = (4, 30, 200) if quick else (12, 100, 1000)
    rounds = 500 if quick else 3000
    problem = fairalloc.load_spec(token_spec(types, t_max, points)).problem
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
        "built inside), the `equilibrium` validator, and `fairalloc.simulation.simulate` (all "
        "mechanisms on one population, then each alone). Targets from the issue: Algorithm 1 "
        "with 12 types, t_max 100 and 1,000-point grids under 1 s (the paper: about 10 s in R "
        "for its setting); 1,000 agents x 3,000 rounds x 6 mechanisms under 5 s.",
        rows)]


# --------------------------------------------------------------------------- report


BENCHMARKS: dict[str, Callable[[bool], list[Table]]] = {
    "drf": bench_drf,
    "emrf": bench_emrf,
    "formulation": bench_formulation,
    "cli": bench_cli,
    "drf-lp": bench_drf_lp,
    "etf": bench_etf,
    "moldable": bench_moldable,
    "accelos": bench_accelos,
    "token": bench_token,
}


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _commit() -> str:
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=10)
        if head.returncode:
            return "unknown"
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--"], cwd=ROOT, env=env,
                               capture_output=True, timeout=10).returncode
        return head.stdout.strip() + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


LOAD_AT_START = _load()


def machine_notes() -> list[str]:
    cores = os.cpu_count()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = cores
    coretype = os.environ.get("OPENBLAS_CORETYPE")
    return [
        f"- CPU: {_cpu_model()}",
        f"- cores: {cores} ({usable} usable by this process)",
        f"- memory: {_memory()}",
        f"- OS: {platform.system()} {platform.release()} ({platform.machine()})",
        f"- Python: {platform.python_version()} ({platform.python_implementation()})",
        f"- numpy {np.__version__}, highspy {_version('highspy')}, pyomo {_version('pyomo')}, "
        f"jsonschema-rs {_version('jsonschema-rs')}, orjson {_version('orjson')}, "
        f"fairalloc {_version('fairalloc')}",
        f"- OPENBLAS_CORETYPE: {'set to ' + repr(coretype) if coretype else 'not set'}",
        f"- date: {dt.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"- load average (1/5/15 min) at start: {LOAD_AT_START}, at the end: {_load()} "
        "(other work on the machine makes timings noisy)",
        f"- fairalloc commit: {_commit()}",
    ]


def render(tables: list[Table], spots: list[HotSpot], argv: list[str], elapsed: float) -> str:
    misses = [(t, r) for t in tables if not t.breakdown for r in t.rows
              if r.status in ("MISS", "ERROR")]
    out = [
        "# fairalloc benchmarks", "",
        f"Written by `python benchmarks/run.py {' '.join(argv)}`".rstrip() + f" in "
        f"{elapsed / 60:.1f} min. Benchmarks, not tests: a MISS is reported, never raised. "
        f"Timings: `time.perf_counter`, best of {REPEAT} runs when the first run takes under "
        f"{FAST:.0f} s, else one run (column `runs`); fixed seeds.", "",
        "## Machine", "", *machine_notes(), "",
        "## Targets", "",
    ]
    if misses:
        out += ["Missed: " + "; ".join(f"{r.case} ({fmt_time(r)} vs {fmt_seconds(r.target)})"
                                       if r.status == "MISS" else f"{r.case} (error)"
                                       for _, r in misses), ""]
    else:
        out += ["Every target measured here is met.", ""]
    for t in tables:
        out.append(t.markdown())
    out.append(hotspot_markdown(spots))
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    global CLI_BUDGET
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", metavar="FILE", help="write the Markdown report to FILE")
    ap.add_argument("--quick", action="store_true", help="smaller sizes only (a smoke run)")
    ap.add_argument("--only", action="append", metavar="NAME",
                    help=f"run only this benchmark (repeatable or comma-separated): "
                         f"{', '.join(BENCHMARKS)}")
    ap.add_argument("--max-command", type=float, default=CLI_BUDGET, metavar="SECONDS",
                    help="target 4: do not start the command when its stages add up to more "
                         f"(default {CLI_BUDGET:.0f})")
    ap.add_argument("--no-profile", action="store_true",
                    help="do not profile the cases that miss their targets")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = ap.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    if args.list:
        for name, fn in BENCHMARKS.items():
            print(f"{name:12} {(fn.__doc__ or '').strip().splitlines()[0]}")
        return 0
    CLI_BUDGET = args.max_command
    names = [n for item in args.only or [] for n in item.split(",") if n] or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)} (known: {', '.join(BENCHMARKS)})")

    start = time.perf_counter()
    tables: list[Table] = []
    spots: list[HotSpot] = []
    try:
        for name in names:
            log(f"=== {name}{' (quick)' if args.quick else ''}")
            try:
                produced = BENCHMARKS[name](args.quick)
            except Exception as exc:  # noqa: BLE001 - a broken benchmark is reported, not raised
                traceback.print_exc(file=sys.stderr)
                produced = [Table(name, f"{name}: failed", "", [Row(name, error=f"{exc}")])]
            for table in produced:
                print(table.markdown(), flush=True)
            tables += produced
            for table in produced:
                for r in table.rows:
                    if (r.status == "MISS" and r.profile is not None and not args.no_profile
                            and not table.breakdown):
                        spot = profile_call(r.case, r.profile, r.profile_label)
                        if spot:
                            spots.append(spot)
                            print(hotspot_markdown([spot]), flush=True)
                    r.profile = None            # let the benchmark's data go
            del produced
            gc.collect()
    finally:
        for path in _WORKDIR:
            shutil.rmtree(path, ignore_errors=True)
    text = render(tables, spots, argv, time.perf_counter() - start)
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")
        log(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

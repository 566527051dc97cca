"""The benchmarks' harness: timing, result tables, profiles of missed targets, and the
kinds' own random specs (``Kind.random_spec``) at the benchmarks' fixed seed."""

from __future__ import annotations

import cProfile
import gc
import io
import math
import pstats
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def random_spec(kind: str, seed: int = SEED, **size) -> dict:
    """The kind's own random spec (``fairalloc/studies/<kind>.py``) at the benchmarks'
    fixed seed: the instances tests and studies draw too."""
    from fairalloc.registry import KINDS

    return KINDS[kind].random_spec(seed, **size)


def market_of(data: dict):
    """The problem object of a spec built straight from its kind's constructor (no schema
    check, no deep copy: setup for benchmarks that time the solver alone)."""
    from fairalloc.errors import Violations
    from fairalloc.registry import KINDS

    found = Violations()
    problem = KINDS[data["problem"]].from_spec(data, found)
    found.raise_if_any("benchmark spec")
    return problem


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


_WORKDIR: list[Path] = []


def workdir() -> Path:
    """A temporary directory for spec files, removed when the run ends."""
    if not _WORKDIR:
        _WORKDIR.append(Path(tempfile.mkdtemp(prefix="fairalloc-bench-")))
    return _WORKDIR[0]


def fairalloc_command() -> list[str]:
    script = Path(sys.executable).parent / "fairalloc"
    if script.exists():
        return [str(script)]
    found = shutil.which("fairalloc")
    if found:
        return [found]
    return [sys.executable, "-c", "import sys; from fairalloc.cli import main; sys.exit(main())"]




CHECKS_TARGET = 3.0   # issue 24: a kind's full set of checks costs at most 3x its solve
# runs of the solve and of the checks when they are fast: on a shared machine one preempted
# run inflates a total of a few milliseconds several times, and the best of 3 still caught it
CHECKS_REPEAT = 7


def checks_ratio_row(kind_name: str, data: dict, label: str) -> Row:
    """One row of a "checks ÷ solve" table: ``fairalloc.solve(spec, validate=False)`` with the
    kind's default method (best of runs, after a warm-up solve; loading the spec is setup),
    then every check of the kind in turn on that allocation, as ``solve`` runs them (the
    default method with the kind's ``probe_options`` as the strategy-proofness probe's
    mechanism, its metrics as the claims;
    each run on a fresh copy of the allocation, so that nothing one run worked out is reused
    by the next). ``seconds`` is the sum of each check's best time over ``CHECKS_REPEAT`` runs
    (``REPEAT`` when a run takes ``FAST`` seconds or more; the solve likewise: best of its
    runs), as each is timed on its own and one preempted check should not stand for the
    run; the target is ``CHECKS_TARGET`` times the solve; the note gives the ratio and each
    check's best time and verdict."""
    import fairalloc
    from fairalloc.allocation import Allocation
    from fairalloc.registry import KINDS

    def judge(spec, result, method) -> list[tuple[str, float, str]]:
        allocation = Allocation(result.allocation.ids, dict(result.allocation.columns))
        parts = []
        for check in KINDS[kind_name].checks:
            gc.collect()
            start = time.perf_counter()
            found = check(spec.problem, allocation, mechanism=method, claims=result.metrics)
            if found is not None:
                parts.append((check.__name__, time.perf_counter() - start, found.verdict))
        return parts

    def run() -> Row:
        kind = KINDS[kind_name]
        spec = fairalloc.load_spec(data)
        run_default = kind.methods[kind.default]
        probing = kind.probing(run_default)           # as ``solve`` re-runs it for the checks

        def method(problem):
            return run_default(problem, **probing)

        fairalloc.solve(spec, validate=False)                       # warm-up
        solve = measure(lambda: fairalloc.solve(spec, validate=False), repeat=CHECKS_REPEAT)
        runs = [judge(spec, solve.value, method)]
        repeat = CHECKS_REPEAT if sum(seconds for _, seconds, _ in runs[0]) < FAST else REPEAT
        runs += [judge(spec, solve.value, method) for _ in range(repeat - 1)]
        parts = [(name, min(run[k][1] for run in runs), verdict)
                 for k, (name, _, verdict) in enumerate(runs[0])]
        total = sum(seconds for _, seconds, _ in parts)
        each = ", ".join(f"{name} {fmt_seconds(s)} ({verdict})" for name, s, verdict in parts)
        log(f"{kind_name} checks, {label}: {fmt_seconds(total)} = "
            f"{total / solve.best:.2f}x the solve")
        return Row(f"{kind_name} checks, {label}", total, CHECKS_TARGET * solve.best, len(runs),
                   f"{total / solve.best:.2f}x the solve ({fmt_seconds(solve.best)}, "
                   f"`{kind.default}`); {each}")

    return safe(f"{kind_name} checks, {label}", run)


def checks_table(kind: str, unit: str, sizes: tuple[int, ...],
                 make: Callable[[int], dict]) -> Table:
    """The "checks ÷ solve" table of a kind: ``checks_ratio_row`` on ``make(n)`` (a spec of size n)
    at each size, after a warm-up solve with checks on ``make(5)`` (imports, first models)."""
    import fairalloc

    fairalloc.solve(make(5))
    rows = [checks_ratio_row(kind, make(n), f"{n:,} {unit}") for n in sizes]
    return Table(f"{kind}-checks", f"{kind}: checks ÷ solve",
                 f"Random {kind} specs (`random_spec` at the fixed seed, as above). Timed: "
                 "`fairalloc.solve(spec, validate=False)` (the default method and the metrics), "
                 "then each check on its allocation (as `solve` runs them, the method as the "
                 "probe's mechanism; a warm-up solve with checks first), best of "
                 f"{CHECKS_REPEAT} runs each (each check on its own; {REPEAT} when a run takes "
                 f"{FAST:g} s or more). Target from issue 24: "
                 f"all checks together at most {CHECKS_TARGET:g}x the solve (the target column "
                 "is that multiple).", rows)

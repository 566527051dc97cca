"""Issue 24: ``fairalloc solve SPEC --format json`` against the one-pass yardstick
(``yardstick.py``: read the spec with orjson, write an output of the same size with orjson),
both as subprocesses in one run: wall time and peak memory (max RSS)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from harness import (
    REPEAT,
    Row,
    Table,
    fairalloc_command,
    fmt_seconds,
    log,
    random_spec,
    safe,
    size,
    workdir,
)

TIME_TARGET = 2.0      # the command within 2x the yardstick's wall time ...
MEMORY_TARGET = 1.3    # ... and 1.3x its max RSS
YARDSTICK = Path(__file__).with_name("yardstick.py")
TARGET_USERS = 10**5   # the targets hold from this size (the 1e5 and 1e6 users)
SLOW = 5.0             # seconds: a command slower than this is run once, else best of REPEAT


@dataclass
class Run:
    """One subprocess: wall seconds, peak memory in bytes, exit code, CPU seconds."""

    seconds: float
    rss: int
    code: int
    cpu: float


# Runs a Python program (a file, or ``-m module``) and, as it exits, writes its peak resident
# memory (``VmHWM``) and its CPU time (user + system: steadier than wall time on a shared
# machine) to a file. ``ru_maxrss`` of a child cannot say it: a process keeps the
# peak of the memory it was forked from across ``exec``, so every child of this (large)
# process would report at least this process's peak.
LAUNCHER = """\
import atexit, resource, runpy, sys
peak_file, target = sys.argv[1], sys.argv[2:]

def write_peak():
    with open("/proc/self/status") as fh:
        peak = next(line.split()[1] for line in fh if line.startswith("VmHWM"))
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    with open(peak_file, "w") as fh:
        fh.write(f"{peak} {cpu.ru_utime + cpu.ru_stime}")

atexit.register(write_peak)
if target[0] == "-m":
    sys.argv = [target[1], *target[2:]]
    runpy.run_module(target[1], run_name="__main__", alter_sys=True)
else:
    sys.argv = target
    runpy.run_path(target[0], run_name="__main__")
"""


def program(script: Path | None, module: str, *args: str) -> list[str]:
    """The command line that runs ``script`` (else ``-m module``) with ``args`` under the
    launcher; its first argument (the peak file) is filled in by ``run_measured``."""
    target = [str(script)] if script is not None else ["-m", module]
    return [sys.executable, "-c", LAUNCHER, "PEAK", *target, *args]


def run_measured(argv: list[str], out: Path | None = None) -> Run:
    """Run ``argv`` (a ``program``) with its standard output to ``out`` (None: /dev/null): its
    wall time and the peak memory the launcher wrote down."""
    with open(out or os.devnull, "wb") as sink, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".peak") as peak:
        argv = [peak.name if a == "PEAK" else a for a in argv]
        start = time.perf_counter()
        done = subprocess.run(argv, stdout=sink, stderr=err)
        seconds = time.perf_counter() - start
        if done.returncode not in (0, 1):
            err.seek(0)
            raise RuntimeError(f"exit {done.returncode}: "
                               f"{err.read().decode(errors='replace')[-300:]}")
        peak_kib, cpu = peak.read().split()
        return Run(seconds, int(peak_kib) * 1024, done.returncode, float(cpu))


def fairalloc_script() -> Path | None:
    """This venv's ``fairalloc`` script (what ``fairalloc_command`` runs), else None."""
    script = Path(fairalloc_command()[0])
    return script if script.name == "fairalloc" else None


def best(runs: list[Run]) -> Run:
    """The fastest run, with the smallest peak memory and CPU time of the runs."""
    fastest = min(runs, key=lambda r: r.seconds)
    return Run(fastest.seconds, min(r.rss for r in runs), fastest.code,
               min(r.cpu for r in runs))


def reported_time(out: Path) -> str:
    """The ``solver.time_s`` a result file reports (from its tail: the file may be 200 MB)."""
    with open(out, "rb") as fh:
        fh.seek(max(0, out.stat().st_size - 4096))
        tail = fh.read().decode(errors="replace")
    found = re.search(r'"time_s": ([-+.\deE]+)', tail)
    return fmt_seconds(float(found[1])) if found else "—"


def compare(kind: str, n: int) -> list[Row]:
    """The rows of one spec: the command with its checks and without, each against the
    yardstick on the same spec and output size."""
    label = f"{kind} {size(n)} users"
    path = workdir() / f"yardstick-{kind}-{n}.json"
    log(f"yardstick: writing {label} to {path}")
    path.write_text(json.dumps(random_spec(kind, users=n)), encoding="utf-8")
    command = program(fairalloc_script(), "fairalloc.cli", "solve", str(path), "--format", "json")
    variants = {"`solve --format json`": command,
                "`solve --format json --no-validate`": [*command, "--no-validate"]}
    out = workdir() / f"yardstick-{kind}-{n}.out.json"
    log(f"yardstick: {label}: first run (its output's size)")
    first = run_measured([*command, "--no-validate"], out)
    output = out.stat().st_size
    time_s = reported_time(out)
    yard = program(YARDSTICK, "", str(path), str(output))
    yard_out = workdir() / f"yardstick-{kind}-{n}.yard.json"
    run_measured(yard, yard_out)
    yard_size = yard_out.stat().st_size
    out.unlink()
    yard_out.unlink()
    repeat = 1 if first.seconds > SLOW else REPEAT
    runs: dict[str, list[Run]] = {name: [] for name in [*variants, "yardstick"]}
    for _ in range(repeat):                 # interleaved, so that a load hits each alike
        for name, argv in [*variants.items(), ("yardstick", yard)]:
            log(f"yardstick: {label}: {name}")
            runs[name].append(run_measured(argv))
    stick = best(runs["yardstick"])
    goal = n >= TARGET_USERS
    rows = []
    for name in variants:
        got = best(runs[name])
        rows.append(Row(
            f"{label}: {name}", got.seconds, TIME_TARGET * stick.seconds if goal else None,
            repeat,
            f"{got.seconds / stick.seconds:.2f}x the yardstick ({fmt_seconds(stick.seconds)}); "
            f"CPU {fmt_seconds(got.cpu)} = {got.cpu / stick.cpu:.2f}x its "
            f"{fmt_seconds(stick.cpu)}; max RSS {got.rss / 2**20:,.0f} MiB = "
            f"{got.rss / stick.rss:.2f}x its {stick.rss / 2**20:,.0f} MiB; exit {got.code}"))
    command_rss = best(runs["`solve --format json`"]).rss
    ratio = command_rss / stick.rss
    rows.append(Row(
        f"{label}: peak memory of `solve --format json`", runs=repeat,
        verdict=("PASS" if ratio <= MEMORY_TARGET else "MISS") if goal else None,
        note=f"max RSS {command_rss / 2**20:,.0f} MiB = {ratio:.2f}x the yardstick's "
             f"{stick.rss / 2**20:,.0f} MiB (target {MEMORY_TARGET:g}x); output "
             f"{output / 1e6:.1f} MB, the yardstick's {yard_size / 1e6:.1f} MB; the result's "
             f"`solver.time_s` {time_s}"))
    return rows


def bench_yardstick(quick: bool) -> list[Table]:
    """Issue 24: `solve --format json` within 2x the one-pass yardstick's time, 1.3x its
    memory."""
    sizes = (10**4,) if quick else (10**5, 10**6)
    rows = [row for kind in ("drf", "emrf") for n in sizes
            for row in safe_rows(kind, n)]
    intro = (
        "`fairalloc solve SPEC --format json` (this venv's `fairalloc` script) and the one-pass "
        "yardstick `benchmarks/yardstick.py` (reads the spec with orjson, writes an output of "
        "the same size with orjson: Python start, parse, one object per user, the output's "
        "text), each as a subprocess on the same random spec (`random_spec`, fixed seed), "
        "standard output to /dev/null, interleaved in one run; wall time and the peak "
        "resident memory (`VmHWM`) each child writes down as it exits (a child's `ru_maxrss` "
        "would hold this process's peak, from which it was forked), and its CPU time (user + "
        "system; on a loaded machine wall time is mostly waiting for a core). Best of "
        f"{REPEAT} when the command takes under {SLOW:.0f} s, else one run. Targets from issue "
        f"24: at most {TIME_TARGET:g}x the yardstick's time (the target column) and "
        f"{MEMORY_TARGET:g}x its peak memory, at 1e5 and 1e6 users (smaller sizes: no "
        "target, Python start and imports weigh most). With checks and without "
        "(`--no-validate`): the checks' own cost is the difference.")
    return [Table("yardstick", "4b. The command against a one-pass reader and writer", intro,
                  rows)]


def safe_rows(kind: str, n: int) -> list[Row]:
    """``compare``'s rows, or one ERROR row when it fails."""
    got: list[Row] = []

    def run() -> Row:
        got.extend(compare(kind, n))
        return got[-1]

    failed = safe(f"{kind} {size(n)} users", run)
    return got if failed.error is None else [failed]

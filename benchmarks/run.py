"""Scaling benchmarks for fairalloc: measure, compare with the targets, write RESULTS.md.

This file is the driver; each benchmark lives in ``bench_<kind>.py`` (``bench_cli.py`` for the
command), the timing, tables and profiles in ``harness.py``, and every random spec is the kind's
own ``random_spec`` (``fairalloc/studies/<kind>.py``).

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
                   (~10 distinct splits), and each check separately at 1e5;
* ``formulation``  the EMRF efficiency LP, literal Pyomo model vs ratio classes;
* ``cli``          ``fairalloc solve SPEC --format json`` as a subprocess at 1e5 users, and where
                   its time goes (parse, schema, preconditions, solve, each check, JSON);
* ``yardstick``    ``fairalloc solve SPEC --format json`` (with checks and ``--no-validate``)
                   against ``yardstick.py`` (read the spec, write as much JSON, both with orjson)
                   at 1e5 and 1e6 users, drf and emrf: wall time and peak memory of each;
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
* ``hetero``       max-min at 1e3 and 1e4 jobs x 3 types, leximin at 1e2 and 1e3 jobs.
* ``replay``       the replay engine in Gavel's rounds (6,000 jobs at 5.6 jobs/hour) per CPU
                   second: aware max-min (target 460 jobs), LAS (600), finish-time (200),
                   and aware max-min at the centre of its optimal face (no target);
                   Gavel's figure 8, LAS agnostic and aware at 14 input rates, against its
                   published values (within 10%). ``replay-speed``: the speed cases alone.
* ``import``       ``fairalloc import drf`` of 1e5 and 1e6-row traces, CSV and Parquet.
* ``report``       ``fairalloc report`` of every shipped example spec (target: 20 s each).
* ``studies``      per-task overhead of 1,000 tiny solves (in process, local pool, Dask
                   LocalCluster of 2), one worker to two on ~0.2 s tasks, store rows/s.

When a target is missed the case is run once more under cProfile and its hot spots are listed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import harness
import numpy as np
from bench_accelos import bench_accelos
from bench_cli import bench_cli
from bench_drf import bench_drf, bench_drf_lp
from bench_emrf import bench_emrf, bench_formulation
from bench_etf import bench_etf
from bench_hetero import bench_hetero
from bench_import import bench_import
from bench_moldable import bench_moldable
from bench_replay import bench_replay, bench_replay_speed
from bench_report import bench_report
from bench_studies import bench_studies
from bench_token import bench_token
from bench_yardstick import bench_yardstick
from harness import (
    _WORKDIR,
    FAST,
    REPEAT,
    ROOT,
    HotSpot,
    Row,
    Table,
    hotspot_markdown,
    log,
    profile_call,
)

BENCHMARKS: dict[str, Callable[[bool], list[Table]]] = {
    "drf": bench_drf,
    "emrf": bench_emrf,
    "formulation": bench_formulation,
    "cli": bench_cli,
    "yardstick": bench_yardstick,
    "drf-lp": bench_drf_lp,
    "etf": bench_etf,
    "moldable": bench_moldable,
    "accelos": bench_accelos,
    "token": bench_token,
    "studies": bench_studies,
    "import": bench_import,
    "hetero": bench_hetero,
    "report": bench_report,
    "replay": bench_replay,
    "replay-speed": bench_replay_speed,
}
PARTS = {"replay-speed"}       # run only when named: a whole run measures them in their benchmark


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
        f"duckdb {_version('duckdb')}, distributed {_version('distributed')}, "
        f"fairalloc {_version('fairalloc')}",
        f"- OPENBLAS_CORETYPE: {'set to ' + repr(coretype) if coretype else 'not set'}",
        f"- date: {dt.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"- load average (1/5/15 min) at start: {LOAD_AT_START}, at the end: {_load()} "
        "(other work on the machine makes timings noisy)",
        f"- fairalloc commit: {_commit()}",
    ]


SECTION = re.compile(r"<!-- bench:(?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- /bench:(?P=name) -->\n",
                     re.S)
MISSED = re.compile(r"^\| (?P<case>.+?) \| (?P<target>[^|]*) \| (?P<measured>[^|]*) \| "
                    r"(?P<result>MISS|ERROR) \|", re.M)


def section(name: str, tables: list[Table], spots: list[HotSpot], quick: bool) -> str:
    """One benchmark's tables (and the hot spots of its misses) between markers, with when,
    where and at what load they were measured: ``--only NAME --write`` replaces just this."""
    when = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    body = [f"<!-- bench:{name} -->",
            f"*`{name}`{' (quick)' if quick else ''}: measured {when}, commit {_commit()}, "
            f"load average at its end {_load()}.*", ""]
    body += [t.markdown() for t in tables]
    if spots:
        body.append(hotspot_markdown(spots))
    return "\n".join(body).rstrip() + f"\n<!-- /bench:{name} -->\n"


def sections_of(text: str) -> dict[str, str]:
    """The benchmark sections of a RESULTS.md written by ``section``."""
    return {m["name"]: m.group(0) for m in SECTION.finditer(text)}


def render(sections: dict[str, str], argv: list[str], elapsed: float) -> str:
    """The whole report: how it was written, the machine, the missed targets of every section,
    then the sections in the drivers' order."""
    order = dict.fromkeys([*BENCHMARKS, *sections])
    body = "\n".join(sections[n] for n in order if n in sections)
    misses = list(MISSED.finditer(body))
    out = [
        "# fairalloc benchmarks", "",
        f"Last written by `python benchmarks/run.py {' '.join(argv)}`".rstrip() + f" in "
        f"{elapsed / 60:.1f} min (a run with `--only` rewrites only its sections; each says "
        f"when it was measured). Benchmarks, not tests: a MISS is reported, never raised. "
        f"Timings: `time.perf_counter`, best of {REPEAT} runs when the first run takes under "
        f"{FAST:.0f} s, else one run (column `runs`); fixed seeds.", "",
        "## Machine", "", *machine_notes(), "",
        "## Targets", "",
    ]
    if misses:
        out += ["Missed: " + "; ".join(
            f"{m['case']} ({m['measured']} vs {m['target']})" if m["result"] == "MISS"
            else f"{m['case']} (error)" for m in misses), ""]
    else:
        out += ["Every target measured here is met.", ""]
    return "\n".join(out) + "\n" + body


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", metavar="FILE", help="write the Markdown report to FILE")
    ap.add_argument("--quick", action="store_true", help="smaller sizes only (a smoke run)")
    ap.add_argument("--only", action="append", metavar="NAME",
                    help=f"run only this benchmark (repeatable or comma-separated): "
                         f"{', '.join(BENCHMARKS)}")
    ap.add_argument("--max-command", type=float, default=harness.CLI_BUDGET, metavar="SECONDS",
                    help="target 4: do not start the command when its stages add up to more "
                         f"(default {harness.CLI_BUDGET:.0f})")
    ap.add_argument("--no-profile", action="store_true",
                    help="do not profile the cases that miss their targets")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = ap.parse_args(argv)
    argv = sys.argv[1:] if argv is None else argv
    if args.list:
        for name, fn in BENCHMARKS.items():
            print(f"{name:12} {(fn.__doc__ or '').strip().splitlines()[0]}")
        return 0
    harness.CLI_BUDGET = args.max_command
    names = [n for item in args.only or [] for n in item.split(",") if n] or [
        n for n in BENCHMARKS if n not in PARTS]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)} (known: {', '.join(BENCHMARKS)})")

    start = time.perf_counter()
    sections: dict[str, str] = {}
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
            spots: list[HotSpot] = []
            for table in produced:
                for r in table.rows:
                    if (r.status == "MISS" and r.profile is not None and not args.no_profile
                            and not table.breakdown):
                        spot = profile_call(r.case, r.profile, r.profile_label)
                        if spot:
                            spots.append(spot)
                            print(hotspot_markdown([spot]), flush=True)
                    r.profile = None            # let the benchmark's data go
            sections[name] = section(name, produced, spots, args.quick)
            del produced
            gc.collect()
    finally:
        for path in _WORKDIR:
            shutil.rmtree(path, ignore_errors=True)
    if args.write and Path(args.write).exists():   # keep the sections this run did not measure
        sections = {**sections_of(Path(args.write).read_text(encoding="utf-8")), **sections}
    text = render(sections, argv, time.perf_counter() - start)
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")
        log(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: ``fairalloc report`` of every shipped example spec, in process (the report made
and written as HTML: every method compared and checked, the figures, the trade-off sweep)."""

from __future__ import annotations

import os

from harness import ROOT, Row, Table, timed_row, workdir

from fairalloc import api

TARGET = 20.0       # seconds a report of any shipped example (issue 27)
QUICK = ("etf/datacenter-mix.json", "emrf/example1-knob0.5.json")   # the slowest, a small one


def examples() -> list[str]:
    """The shipped example specs (specs/<kind>/*.json; not the study presets)."""
    specs = ROOT / "specs"
    return sorted(str(p.relative_to(specs)) for p in specs.glob("*/*.json")
                  if p.parent.name != "studies")


def make_report(name: str) -> int:
    """The report of ``specs/<name>``, written as HTML; its size in bytes."""
    doc = api.report(str(ROOT / "specs" / name))
    path = workdir() / "report.html"
    api.write_report(doc, path)
    return path.stat().st_size


def bench_report(quick: bool) -> list[Table]:
    """fairalloc report of every shipped example (in process, written as HTML)"""
    rows: list[Row] = []
    for name in QUICK if quick else examples():
        rows.append(timed_row(f"`fairalloc report specs/{name}`",
                              lambda name=name: make_report(name), TARGET,
                              describe=lambda size, t: f"{size / 1e3:,.0f} kB of HTML; load "
                                                       f"{os.getloadavg()[0]:.1f}"))
    return [Table("report", "Reports: `fairalloc report` of every example",
                  "Each shipped example spec's report made in process (every method compared "
                  "and checked, the figures, the kind's trade-off sweep with every check but "
                  "the strategy-proofness probe at each point) and written as one HTML file; "
                  "the process's one-off start-up (importing Pyomo, matplotlib) is paid by the "
                  f"first case. Target: under {TARGET:.0f} s each. The load average (1 min) "
                  "when each case ended is in its notes: the machine is shared.", rows)]

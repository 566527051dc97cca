"""Benchmark: replays — the speed of the engine with the aware max-min LP in the loop (target:
200 simulated jobs per second, Gavel's rounds at 5.6 jobs/hour, 6,000 jobs, one core), and
Gavel's figure 8 reproduced (LAS agnostic and aware, 14 input rates, seed 0 on Gavel's own
jobs; target: every value within 10% of Gavel's, and the agnostic/aware ratio at 5.6 jobs/hour
at least 2.5)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from harness import Row, Table, safe

from fairalloc import api
from fairalloc.replay.hetero import figure_8_document

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "paper"))
from gavel_figure8 import FIGURE_8, FIGURE_8_RATES  # noqa: E402  (Gavel's printed values)

JOBS_PER_S_TARGET = 200
SPEED_JOBS = 6_000
TOLERANCE = 0.10
RATIO_TARGET = 2.5


def _speed_row() -> Row:
    doc = figure_8_document("max-min", 5.6, jobs=SPEED_JOBS, stream="numpy")
    doc["measure"] = {"finish_time_fairness": False}
    cpu = time.process_time()
    run = api.replay(doc)
    cpu = time.process_time() - cpu       # on a loaded machine, wall time is not one core's
    s = run.summary
    rate = s["finished"] / s["wall_s"]
    per_allocation = 1000 * s["solve_s"] / max(s["allocations"], 1)
    return Row(f"`max-min` in Gavel's rounds, 5.6 jobs/h, {SPEED_JOBS:,} jobs", s["wall_s"],
               SPEED_JOBS / JOBS_PER_S_TARGET, 1,
               f"{rate:.0f} jobs/s ({s['finished'] / cpu:.0f} per CPU second, {cpu:.1f} s "
               f"of CPU); {s['allocations']:,} allocations at {per_allocation:.1f} ms "
               f"each (two LPs: max-min, then max-sum at its level) = "
               f"{s['solve_s'] / s['wall_s']:.0%} of the run")


def _figure_row(policy: str, rate: float, found: dict) -> Row:
    run = api.replay(figure_8_document(policy, rate))
    hours = run.summary["average_jct_s"] / 3600
    found[(policy, rate)] = hours
    paper = FIGURE_8[policy][rate]
    off = hours / paper - 1
    return Row(f"`{policy}` at {rate:g} jobs/h", run.summary["wall_s"], None, 1,
               f"average JCT {hours:.2f} h, Gavel {paper:.2f} h ({off:+.1%})",
               verdict="PASS" if abs(off) <= TOLERANCE else "MISS")


def bench_replay(quick: bool) -> list[Table]:
    """replay: engine speed with the max-min LP in the loop; Gavel's figure 8 reproduced"""
    rows = [safe("speed", _speed_row, target=SPEED_JOBS / JOBS_PER_S_TARGET)]
    found: dict = {}
    rates = (3.2, 5.6) if quick else FIGURE_8_RATES
    for policy in ("max-min", "agnostic-max-min"):
        for rate in rates:
            rows.append(safe(f"{policy} {rate}",
                             lambda p=policy, r=rate: _figure_row(p, r, found)))
    both = [found.get((p, 5.6)) for p in ("agnostic-max-min", "max-min")]
    if all(both):
        ratio = both[0] / both[1]
        gavel = FIGURE_8["agnostic-max-min"][5.6] / FIGURE_8["max-min"][5.6]
        rows.append(Row("agnostic / aware average JCT at 5.6 jobs/h", None, None, 0,
                        f"{ratio:.2f} (Gavel {gavel:.2f}; target >= {RATIO_TARGET})",
                        verdict="PASS" if ratio >= RATIO_TARGET else "MISS"))
    return [Table("replay", "replay: Gavel's simulator reproduced",
                  "`fairalloc.replay` with hetero's `rounds` mechanism. Speed: Gavel's "
                  "generator (numpy stream, seed 0), the aware max-min LP re-solved at each "
                  "allocation reset. Figure 8: Gavel's own jobs for its seed 0 (the generator's "
                  "`gavel` stream), the average JCT of jobs 4000-5000 against the values "
                  "printed in Gavel's `continuous_jobs.ipynb`.", rows)]

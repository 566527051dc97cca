"""Benchmark: ``fairalloc import drf`` of a DRF trace with 1e5 and 1e6 rows (CSV and Parquet),
the whole command as a subprocess: DuckDB read, rows to users, the spec's checks, JSON out."""

from __future__ import annotations

import subprocess

import duckdb
import numpy as np
from harness import Row, Table, fairalloc_command, log, measure, safe, workdir

ROWS = (100_000, 1_000_000)
TARGET = 10.0          # seconds at 1e6 rows: "fast on millions of rows"


def trace(rows: int, seed: int = 7) -> tuple[str, str]:
    """A random DRF trace (id, weight, three demands, max_tasks with gaps) as CSV and Parquet."""
    rng = np.random.default_rng(seed)
    folder = workdir()
    csv_path, parquet = folder / f"trace-{rows}.csv", folder / f"trace-{rows}.parquet"
    with duckdb.connect() as con:
        con.execute("CREATE TABLE t AS SELECT * FROM (SELECT 'u' || i AS id, "
                    "w AS weight, c AS \"demand.cpu\", m AS \"demand.mem\", g AS \"demand.gpu\", "
                    "CASE WHEN k > 0 THEN k END AS max_tasks FROM (SELECT unnest(?) AS i, "
                    "unnest(?) AS w, unnest(?) AS c, unnest(?) AS m, unnest(?) AS g, "
                    "unnest(?) AS k))",
                    [list(range(rows)), rng.integers(1, 4, rows).tolist(),
                     rng.uniform(0.1, 4, rows).round(3).tolist(),
                     rng.uniform(0.5, 16, rows).round(3).tolist(),
                     rng.integers(0, 2, rows).tolist(), rng.integers(-5, 6, rows).tolist()])
        con.execute(f"COPY t TO '{csv_path}' (HEADER)")
        con.execute(f"COPY t TO '{parquet}' (FORMAT parquet)")
    return str(csv_path), str(parquet)


def run_import(path: str, rows: int) -> int:
    """The command on one trace (a cluster with about one CPU a user); the users written."""
    out = str(workdir() / "imported.json")
    done = subprocess.run([*fairalloc_command(), "import", "drf", path, "-o", out, "-q",
                           "--set", f"capacity.cpu={rows}", "--set", f"capacity.mem={4 * rows}",
                           "--set", f"capacity.gpu={rows // 4}"], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stderr[-500:])
    return len(open(out, encoding="utf-8").read().splitlines())


def bench_import(quick: bool) -> list[Table]:
    """fairalloc import drf at 1e5 and 1e6 rows, CSV and Parquet (whole command)"""
    rows: list[Row] = []
    for n in ROWS[:1] if quick else ROWS:
        log(f"import: writing a trace of {n:,} rows")
        csv_path, parquet = trace(n)
        for label, path in (("CSV", csv_path), ("Parquet", parquet)):
            case = f"`fairalloc import drf` of {n:,} rows ({label})"

            def one(path=path, case=case, n=n) -> Row:
                log(f"{case} ...")
                t = measure(lambda: run_import(path, n), repeat=1)
                return Row(case, t.best, TARGET if n == ROWS[-1] else None, t.runs,
                           f"{n / t.best:,.0f} rows/s, the whole command (start-up included)")

            rows.append(safe(case, one, target=TARGET if n == ROWS[-1] else None))
    return [Table("import", "Traces in: `fairalloc import`",
                  "A random DRF trace (id, weight, three demands, max_tasks with empty cells) "
                  "written by DuckDB as CSV and Parquet; timed: the command as a subprocess "
                  "(DuckDB reads the table, each row becomes a user, the spec is checked like "
                  "any, JSON is written one user a line). Target: 1e6 rows in under "
                  f"{TARGET:.0f} s.", rows)]

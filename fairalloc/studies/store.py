"""The study store: an embedded DuckDB file, one row per (study, instance, method, repeat).

Tables (query them with ``duckdb`` itself, pandas or Polars):

* ``studies``: one row per study — its spec (JSON), kind, the objective's sense, the exact
  method, the reference and grid keys;
* ``runs``: what each task produced — seed, the grid point's values (one column per grid key),
  status, objective, MIP gap and bound, the kind's bound on the optimum when that is the
  reference, solve time, error message, worker, the whole result as JSON when the study
  keeps ``results``, and one ``check.<name>`` (verdict) and
  ``metric.<name>`` (number) column per check and chosen metric;
* ``results`` (a view): ``runs`` with each row's ``reference`` value, ``reference_status`` and
  ``ratio`` — objective ÷ reference for a min objective, reference ÷ objective for a max one
  (as ``fairalloc.result.ratio_to``), so 1 is as good as the reference and above 1 worse.
  An exact reference is the exact method's *proven* optimum: when that method stopped at its
  limit the reference is null and ``reference_status`` says why, so no ratio pretends to be one
  to the optimum.

* ``spec_files``: the spec files a study's instances were made from (``instances.specs`` or
  ``base``), their data as they were read when the study first ran: ``--resume`` refuses a
  file changed since (its rows would mix two specs) and ``study instance`` re-makes an
  instance from them, not from the file as it is now (``spec``: a replay document's trace
  table made absolute, so that it is found from anywhere; ``written``: as the file had it,
  what a report shows — added to a version 2 store the first time it is written to, null
  for a study stored before);
* ``replay_jobs`` and ``replay_utilization``: a replay study's rows beyond its ``runs`` row
  (whose ``metric.*`` columns hold the run's measures, ``check.*`` each check's verdict over
  the run, ``result`` the run's settings, summary and verdict counts as JSON): one row per job
  per run (job id, its position in the trace, arrival, start, finish, JCT, queueing delay, rho
  — null for a job the run did not finish, or without rho) and the share of each resource in
  use per bin of time. Added to a version 2 store the first time it is written to (a store
  made before has none and reads as one without replays): the format stays 2;
* ``data_files``: the SHA-256 of each file a study's spec files read (a replay document's
  trace table) when the study first ran: ``--resume`` and ``study instance`` refuse a file
  changed since (rows replayed on two versions of a trace would be compared as one). Added
  to a version 2 store as the replay tables are (a study stored before has none to check);
* ``fairalloc_meta``: the marker of a fairalloc store, its format and version. fairalloc adds
  its tables only to a new or empty database, and opens only a store of its own format: a
  foreign database, a store of an older format (before version 2 the spec files were not
  kept) or a damaged file is refused with one line (``StoreError``).

Only the driver writes, one transaction per batch; the primary key makes a row stored twice an
error, never a duplicate.
"""

from __future__ import annotations

import datetime
import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fairalloc import startup
from fairalloc.documents import sort_of
from fairalloc.errors import InputRefused, StoreError, interrupted_query
from fairalloc.files import digest, replacing
from fairalloc.registry import KINDS
from fairalloc.render import csv_safe
from fairalloc.version import __version__

FORMAT = "fairalloc study store"
VERSION = 2                 # 2: spec_files and fairalloc_meta; 1 (unmarked) had neither
OK = ("optimal", "feasible", "heuristic", "done")    # done: a replay that ran to its end
REACHED = (*OK, "time_limit", "iteration_limit")    # statuses whose objective was reached

_TABLES = """
CREATE TABLE IF NOT EXISTS studies (
    study VARCHAR PRIMARY KEY, kind VARCHAR NOT NULL, sense VARCHAR NOT NULL, exact VARCHAR,
    reference VARCHAR NOT NULL, grid VARCHAR[] NOT NULL, spec JSON NOT NULL, source VARCHAR,
    created TIMESTAMP NOT NULL, fairalloc VARCHAR NOT NULL);
CREATE TABLE IF NOT EXISTS spec_files (
    study VARCHAR NOT NULL, position INTEGER NOT NULL, file VARCHAR NOT NULL, spec JSON NOT NULL,
    written JSON, PRIMARY KEY (study, position));
CREATE TABLE IF NOT EXISTS runs (
    study VARCHAR NOT NULL, instance INTEGER NOT NULL, method VARCHAR NOT NULL,
    "repeat" INTEGER NOT NULL, seed BIGINT, status VARCHAR NOT NULL, objective DOUBLE,
    gap DOUBLE, bound DOUBLE, reference_bound DOUBLE, time_s DOUBLE, error VARCHAR,
    worker VARCHAR, finished TIMESTAMP,  -- UTC
    result JSON,                         -- the whole result, when the study keeps results
    PRIMARY KEY (study, instance, method, "repeat"));
"""

# a replay study's per job and per time rows, keyed like its run's row (no primary key: the
# run's row, stored in the same transaction, already refuses a run stored twice)
_REPLAY_TABLES = """
CREATE TABLE IF NOT EXISTS replay_jobs (
    study VARCHAR NOT NULL, instance INTEGER NOT NULL, method VARCHAR NOT NULL,
    "repeat" INTEGER NOT NULL, job VARCHAR NOT NULL, position INTEGER NOT NULL,
    arrival DOUBLE, start DOUBLE, finish DOUBLE, jct DOUBLE, queueing DOUBLE, rho DOUBLE);
CREATE TABLE IF NOT EXISTS replay_utilization (
    study VARCHAR NOT NULL, instance INTEGER NOT NULL, method VARCHAR NOT NULL,
    "repeat" INTEGER NOT NULL, "from" DOUBLE NOT NULL, "to" DOUBLE NOT NULL,
    resource VARCHAR NOT NULL, share DOUBLE NOT NULL);
CREATE TABLE IF NOT EXISTS data_files (
    study VARCHAR NOT NULL, file VARCHAR NOT NULL, sha256 VARCHAR NOT NULL,
    PRIMARY KEY (study, file));
"""
# each spec file's data as the file has it (``spec`` holds it with a replay document's trace
# table made absolute): added to a store made before it the first time it is written to
_WRITTEN = "ALTER TABLE spec_files ADD COLUMN IF NOT EXISTS written JSON;"
REPLAY_PARTS = {"replay_jobs": ("job", "position", "arrival", "start", "finish", "jct",
                                "queueing", "rho"),
                "replay_utilization": ("from", "to", "resource", "share")}
RUN_KEY = ("study", "instance", "method", "repeat")

_VIEW = f"""
CREATE OR REPLACE VIEW results AS
WITH per_instance AS (
    SELECT r.study, r.instance,
        CASE WHEN any_value(s.sense) = 'min'
             THEN min(r.objective) FILTER (WHERE r.status IN {REACHED})
             ELSE max(r.objective) FILTER (WHERE r.status IN {REACHED}) END AS best,
        min(r.objective) FILTER (WHERE r.method = s.exact AND r.status = 'optimal') AS optimum,
        string_agg(DISTINCT r.status, ',') FILTER (WHERE r.method = s.exact) AS exact_status
    FROM runs r JOIN studies s USING (study)
    GROUP BY r.study, r.instance),
referenced AS (
    SELECT r.*,
        CASE s.reference WHEN 'best' THEN p.best WHEN 'exact' THEN p.optimum
             ELSE r.reference_bound END AS reference,
        CASE s.reference WHEN 'best' THEN 'best'
             WHEN 'exact' THEN CASE WHEN p.optimum IS NOT NULL THEN 'optimal'
                                    ELSE coalesce('exact ' || p.exact_status, 'exact not run')
                               END
             ELSE CASE WHEN r.reference_bound IS NULL THEN 'no bound' ELSE 'bound' END
        END AS reference_status,
        s.sense
    FROM runs r JOIN studies s USING (study)
        JOIN per_instance p ON p.study = r.study AND p.instance = r.instance)
SELECT * EXCLUDE (sense),
    CASE WHEN objective > 0 AND reference > 0 THEN
        CASE sense WHEN 'min' THEN objective / reference ELSE reference / objective END
    END AS ratio
FROM referenced
"""


def utc_now() -> datetime.datetime:
    """Now, in UTC without a zone (``TIMESTAMP`` columns; a zoned one needs pytz to read)."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _database_errors(method):
    """``method`` with DuckDB's errors (a damaged or truncated file is often found only when a
    query reads the broken block) raised as a one-line ``StoreError`` naming the store."""
    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        import duckdb

        try:
            return method(self, *args, **kwargs)
        except duckdb.Error as exc:
            raise StoreError(f"{self.path or 'the store'}: cannot use it as a study store: "
                             f"{_first_line(exc)}") from None
        except RuntimeError as exc:     # Ctrl-C mid-query: the study's own handling takes it
            if interrupted_query(exc):
                raise KeyboardInterrupt from None
            raise
    return guarded


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _sql_type(values: Sequence[Any]) -> str:
    """The column type of a grid key's values."""
    if all(isinstance(v, bool) for v in values):
        return "BOOLEAN"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "BIGINT"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "DOUBLE"
    if all(isinstance(v, str) for v in values):
        return "VARCHAR"
    return "JSON"


def cell(value: Any, sql_type: str) -> Any:
    """A grid value as its column stores it (JSON text for lists and objects)."""
    return json.dumps(value) if sql_type == "JSON" else value


def quoted(name: str) -> str:
    """An SQL identifier for any column name (``check.bound:theorem2``, ``users[0].weight``)."""
    return '"' + name.replace('"', '""') + '"'


def csv_safe_columns(con) -> str:
    """The ``results`` columns for a CSV export on connection ``con``: each text column
    through :func:`~fairalloc.render.csv_safe` (registered on ``con``) and each name made
    safe, so no cell of the file starts a spreadsheet formula."""
    con.create_function("csv_safe", csv_safe, ["VARCHAR"], "VARCHAR")
    return ", ".join((f"csv_safe({quoted(name)})" if kind == "VARCHAR" else quoted(name))
                     + f" AS {quoted(csv_safe(name))}"
                     for name, kind, *_ in con.execute("DESCRIBE results").fetchall())


class Store:
    """A DuckDB study store at ``path`` (None: in memory, for a run whose rows are only
    summarised). ``read_only`` opens an existing store for summaries and exports."""

    def __init__(self, path: str | Path | None = None, read_only: bool = False):
        duckdb = startup.duckdb()  # lazy: heavy, only commands with a store need it

        self.path = str(path) if path else None
        if read_only and not Path(self.path).is_file():
            raise StoreError(f"{self.path}: no such store")
        try:
            self.con = duckdb.connect(self.path or ":memory:", read_only=read_only)
        except duckdb.Error as exc:
            raise StoreError(f"{self.path}: cannot open as a DuckDB store: "
                             f"{_first_line(exc)}") from None
        try:
            self._prepare(read_only)
        except BaseException:
            self.con.close()
            raise

    @_database_errors
    def _prepare(self, read_only: bool) -> None:
        """Check that the database is a store of this format (or, to write, empty: then make
        the tables)."""
        tables = {t for (t,) in self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'")
            .fetchall()}
        if "fairalloc_meta" in tables:
            self._check_format()
            if not read_only:
                self.con.execute(_REPLAY_TABLES + _WRITTEN)
                tables |= set(REPLAY_PARTS)
        elif tables or read_only:
            raise StoreError(self._not_ours(tables))
        else:
            self.con.execute(_TABLES + _REPLAY_TABLES + "CREATE TABLE fairalloc_meta (format "
                             "VARCHAR NOT NULL, version INTEGER NOT NULL);")
            tables |= set(REPLAY_PARTS)
            self.con.execute("INSERT INTO fairalloc_meta VALUES (?, ?)", [FORMAT, VERSION])
            self.con.execute(_VIEW)
        self._columns = self._runs_columns()
        self.has_replays = set(REPLAY_PARTS) <= tables
        self.has_data_files = not read_only or "data_files" in tables
        self.has_written = bool(self.con.execute(
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'spec_files' "
            "AND column_name = 'written'").fetchone()[0])

    def _check_format(self) -> None:
        marks = self.con.execute("SELECT format, version FROM fairalloc_meta").fetchall()
        if len(marks) != 1 or marks[0][0] != FORMAT:
            raise StoreError(f"{self.path}: not a fairalloc study store (its fairalloc_meta "
                             f"table does not say {FORMAT!r})")
        if marks[0][1] != VERSION:
            raise StoreError(f"{self.path}: a study store of format version {marks[0][1]}; "
                             f"this fairalloc reads version {VERSION}")

    def _not_ours(self, tables: set[str]) -> str:
        """Why a database without fairalloc's marker is refused."""
        if {"studies", "runs"} <= tables:
            return (f"{self.path}: a study store of an older format (version 1, which did not "
                    "keep the spec files a study ran on); run the study into a new store")
        if not tables:
            return f"{self.path}: not a fairalloc study store (an empty database)"
        held = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        return (f"{self.path}: not a fairalloc study store (it holds other tables: {held}); "
                "fairalloc adds its tables only to a new or empty database")

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def _runs_columns(self) -> set[str]:
        return {name for (name,) in self.con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs'")
            .fetchall()}

    @_database_errors
    def studies(self) -> list[str]:
        return [s for (s,) in self.con.execute("SELECT study FROM studies ORDER BY created")
                .fetchall()]

    @_database_errors
    def study(self, name: str | None = None) -> dict:
        """The stored record of study ``name`` (or of the only study in the store)."""
        names = self.studies()
        if name is None:
            if len(names) != 1:
                held = ", ".join(names) if names else "none"
                raise StoreError(f"{self.path}: holds {len(names)} studies ({held}); name one "
                                 "with --study")
            name = names[0]
        if name not in names:
            raise StoreError(f"{self.path}: no study {name!r} (it holds: "
                             f"{', '.join(names) or 'none'})")
        row = self.con.execute("SELECT study, kind, sense, exact, reference, grid, spec, source "
                               "FROM studies WHERE study = ?", [name]).fetchone()
        keys = ("study", "kind", "sense", "exact", "reference", "grid", "spec", "source")
        record = dict(zip(keys, row))
        record["spec"] = json.loads(record["spec"])
        # a replay study: its instances are replay documents (``plan.is_replay``)
        record["replay"] = any(sort_of(data) == "replay" for _, data in self.spec_files(name))
        return record

    @_database_errors
    def open_study(self, study, resume: bool) -> set[tuple[int, str, int]]:
        """Record ``study`` (a ``plan.Study``) and return the (instance, method, repeat) keys
        already stored. A study of that name with rows is continued only with ``resume``, and
        only if its spec is the same."""
        existing = self.con.execute("SELECT spec FROM studies WHERE study = ?",
                                    [study.name]).fetchone()
        if existing is not None:
            if json.loads(existing[0]) != study.spec:
                raise StoreError(f"{self.path}: holds a study {study.name!r} with a different "
                                 "spec; rename the study or use another --store")
            self._check_files(study)
            self.check_data_files(study.name)
            done = self.done(study.name)
            if done and not resume:
                raise StoreError(f"{self.path}: already holds {len(done)} rows of study "
                                 f"{study.name!r}; --resume continues it")
            return done
        kind = KINDS[study.kind]
        for key, values in study.grid:
            if key not in self._columns:
                self.con.execute(f"ALTER TABLE runs ADD COLUMN {quoted(key)} "
                                 f"{_sql_type(values)}")
        self.con.execute(
            "INSERT INTO studies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [study.name, study.kind, kind.sense, kind.exact, study.reference,
             [k for k, _ in study.grid], json.dumps(study.spec), study.source,
             utc_now(), __version__])
        if study.files:
            written = study.written or [data for _, data in study.files]
            self.con.executemany("INSERT INTO spec_files (study, position, file, spec, written) "
                                 "VALUES (?, ?, ?, ?, ?)",
                                 [[study.name, k, file, json.dumps(data), json.dumps(as_read)]
                                  for k, ((file, data), as_read)
                                  in enumerate(zip(study.files, written))])
        if study.data_files:
            self.con.executemany("INSERT INTO data_files VALUES (?, ?, ?)",
                                 [[study.name, str(file), digest(file)]
                                  for file in study.data_files])
        self._columns = self._runs_columns()
        return set()

    @_database_errors
    def spec_files(self, study: str, written: bool = False) -> list[tuple[str, Any]]:
        """The (file, data) of each spec file study ``study`` ran on, in instance order, as
        they were when it first ran: as they are run (a replay document's trace table made
        absolute), or with ``written`` as the files had them (where the store kept it)."""
        column = "coalesce(written, spec)" if written and self.has_written else "spec"
        return [(file, json.loads(data)) for file, data in self.con.execute(
            f"SELECT file, {column} FROM spec_files WHERE study = ? ORDER BY position",
            [study]).fetchall()]

    def _check_files(self, study) -> None:
        """Refuse to continue ``study`` on spec files other than those it ran on: rows solved
        on two versions of one instance would be compared as one."""
        ran = self.spec_files(study.name)
        if len(ran) != len(study.files):
            raise StoreError(f"{self.path}: study {study.name!r} ran on {len(ran)} spec "
                             f"files and its instances now match {len(study.files)}; a "
                             "resumed study must run on the same files")
        for k, ((then, before), (now, after)) in enumerate(zip(ran, study.files)):
            if before != after:
                ids = [p * study.per_point + k for p in range(len(study.points))]
                shown = ", ".join(map(str, ids[:3])) + (f" and {len(ids) - 3} more"
                                                        if len(ids) > 3 else "")
                named = now if now == then else f"{now} (read as {then})"
                raise StoreError(f"{self.path}: {named} has changed since study "
                                 f"{study.name!r} ran instance{'s' if len(ids) > 1 else ''} "
                                 f"{shown} on it; restore it, or run the study under a new "
                                 "name or into a new store")

    @_database_errors
    def check_data_files(self, study: str) -> None:
        """Refuse (``StoreError``) to go on with study ``study`` when a file its spec files
        read (a replay document's trace table) has changed since it first ran, naming it: its
        rows, old and new, would mix two versions of one trace."""
        if not self.has_data_files:
            return
        for file, then in self.con.execute("SELECT file, sha256 FROM data_files WHERE study "
                                           "= ? ORDER BY file", [study]).fetchall():
            try:
                now = digest(file)
            except (OSError, InputRefused):
                now = None
            if now != then:
                raise StoreError(f"{self.path}: {file} has "
                                 f"{'changed' if now else 'gone'} since study {study!r} "
                                 "first ran on it; restore it, or run the study under a new "
                                 "name or into a new store")

    @_database_errors
    def done(self, study: str) -> set[tuple[int, str, int]]:
        return set(self.con.execute('SELECT instance, method, "repeat" FROM runs '
                                    "WHERE study = ?", [study]).fetchall())

    @_database_errors
    def add(self, rows: list[dict]) -> None:
        """Store rows (dicts of column -> value) in one transaction; a new column (``check.*``,
        ``metric.*``, ``warm`` in a store made before it) is added first."""
        if not rows:
            return
        parts = {table: [(row, row[table]) for row in rows if table in row]
                 for table in REPLAY_PARTS}
        rows = [{k: v for k, v in row.items() if k not in REPLAY_PARTS} for row in rows]
        names = list(dict.fromkeys(k for row in rows for k in row))
        for name in names:
            if name not in self._columns:
                given = [row[name] for row in rows if row.get(name) is not None]
                sql_type = "VARCHAR" if name.startswith("check.") else \
                    "BOOLEAN" if given and all(isinstance(v, bool) for v in given) else "DOUBLE"
                self.con.execute(f"ALTER TABLE runs ADD COLUMN {quoted(name)} {sql_type}")
                self._columns.add(name)
        batch = {name: np.array([row.get(name) for row in rows], dtype=object)
                 for name in names}
        self.con.register("fairalloc_batch", batch)
        try:
            self.con.execute("BEGIN TRANSACTION")
            self.con.execute("INSERT INTO runs BY NAME SELECT * FROM fairalloc_batch")
            for table, pairs in parts.items():
                if pairs:
                    self._add_part(table, pairs)
            self.con.execute("COMMIT")
        except BaseException:       # KeyboardInterrupt too: never leave the transaction open
            self.con.execute("ROLLBACK")
            raise
        finally:
            self.con.unregister("fairalloc_batch")

    def _add_part(self, table: str, pairs: list[tuple[dict, dict]]) -> None:
        """Insert a replay's per job or per time rows (``pairs``: its run's row, its columns)
        keyed by their run's row; a value that is not finite (a job never finished) is null."""
        columns = REPLAY_PARTS[table]
        sizes = [len(next(iter(part.values()))) for _, part in pairs]
        batch = {key: np.repeat(np.array([row[key] for row, _ in pairs], dtype=object), sizes)
                 for key in RUN_KEY}
        for name in columns:
            if name == "position":
                batch[name] = np.concatenate([np.arange(n) for n in sizes])
            else:
                batch[name] = np.concatenate([np.asarray(part[name]) for _, part in pairs])
        self.con.register("fairalloc_part", batch)
        try:
            values = ", ".join(
                quoted(c) if batch[c].dtype.kind not in "f" else
                f"CASE WHEN isfinite({quoted(c)}) THEN {quoted(c)} END"
                for c in (*RUN_KEY, *columns))
            self.con.execute(f"INSERT INTO {table} SELECT {values} FROM fairalloc_part")
        finally:
            self.con.unregister("fairalloc_part")

    @_database_errors
    def replay_rows(self, study: str, table: str = "replay_jobs") -> dict[str, np.ndarray]:
        """Column -> array of a replay study's ``replay_jobs`` or ``replay_utilization``
        rows with their run's grid values (nulls as NaN), in run and job (or time) order;
        empty for a store without replays."""
        if table not in REPLAY_PARTS:
            raise ValueError(f"no replay table {table!r}")
        grid = self.study(study)["grid"]
        if not self.has_replays:
            return {}
        order = "position" if table == "replay_jobs" else '"from", resource'
        query = (f"SELECT p.*, {', '.join('r.' + quoted(k) for k in grid) or 'NULL AS _'} "
                 f"FROM {table} p JOIN runs r USING (study, instance, method, \"repeat\") "
                 f'WHERE p.study = ? ORDER BY p.instance, p.method, p."repeat", {order}')
        out = {}
        for name, column in self.con.execute(query, [study]).fetchnumpy().items():
            if np.ma.isMaskedArray(column):
                column = column.astype(float).filled(np.nan) if column.dtype.kind in "fiu" \
                    else np.ma.getdata(column)
            out[name] = np.asarray(column)
        out.pop("_", None)
        return out

    @_database_errors
    def columns(self, study: str) -> list[str]:
        """The ``results`` columns that hold a value for this study (but the whole results:
        ask for ``result`` by name)."""
        names = [d[0] for d in self.con.execute("SELECT * EXCLUDE (result) FROM results "
                                                "LIMIT 0").description]
        counts = self.con.execute(
            "SELECT " + ", ".join(f"count({quoted(n)})" for n in names) +
            " FROM results WHERE study = ?", [study]).fetchone()
        return [n for n, c in zip(names, counts) if c or n in ("ratio", "reference")]

    @_database_errors
    def rows(self, study: str, columns: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Column -> array of the study's ``results`` rows (numbers as floats with NaN for
        null, text as objects with None), ordered by instance, method and repeat."""
        wanted = list(columns or self.columns(study))
        query = (f"SELECT {', '.join(map(quoted, wanted))} FROM results WHERE study = ? "
                 'ORDER BY instance, method, "repeat"')
        out = {}
        for name, column in self.con.execute(query, [study]).fetchnumpy().items():
            if np.ma.isMaskedArray(column):
                missing = np.ma.getmaskarray(column)
                if column.dtype.kind in "fiub":
                    column = column.astype(float).filled(np.nan)
                else:
                    column = np.array(column.data, dtype=object)
                    column[missing] = None
            out[name] = np.asarray(column)
        return out

    @_database_errors
    def export(self, study: str, path: str) -> int:
        """Write the study's ``results`` to ``path`` (Parquet or CSV by extension); the number
        of rows written."""
        fmt = "parquet" if path.lower().endswith(".parquet") else "csv"
        count = self.con.execute("SELECT count(*) FROM results WHERE study = ?",
                                 [study]).fetchone()[0]
        import duckdb  # lazy: heavy, only commands with a store need it

        with replacing(path, failures=(OSError, duckdb.IOException)) as temporary, \
                self.con.cursor() as con:   # its own connection: the CSV function dies with it
            target = temporary.replace("'", "''")
            columns = csv_safe_columns(con) if fmt == "csv" else "*"
            con.execute(f"COPY (SELECT {columns} FROM results WHERE study = $1 "
                        f'ORDER BY instance, method, "repeat") TO \'{target}\' '
                        f"(FORMAT {fmt})", [study])
        return count


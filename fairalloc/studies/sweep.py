"""A sweep: one spec re-solved with keys of it varied, run as a study.

The spec is the study's base instance, the varied keys its grid (several: every combination)
and one or more methods its methods; every row keeps its whole result. ``fairalloc sweep``,
``fairalloc simulate`` (a sweep of the spec's ``simulation`` over one value), the report's
trade-off figure and the Python API's ``sweep`` all run this one implementation.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, overload

from fairalloc.allocation import _pandas
from fairalloc.errors import SpecError
from fairalloc.result import Result, check_column
from fairalloc.spec import Spec
from fairalloc.studies.plan import Study, load_study, study_name
from fairalloc.studies.run import Progress, run_study
from fairalloc.studies.store import Store


def spec_title(spec: Spec) -> str:
    """A spec's name, else its file's name, else its kind."""
    if spec.name:
        return spec.name
    return os.path.basename(spec.source) if spec.source not in (None, "<stdin>") else spec.kind


def stem(path: str) -> str:
    """A file's name without its extension (``study`` for standard input)."""
    return "study" if path == "-" else os.path.splitext(os.path.basename(path))[0]


def solver_edits(time_limit: float | None = None, mip_gap: float | None = None,
                 threads: int | None = None) -> dict:
    """The study keys the solver keywords set: ``time_limit``, ``solver.threads`` and
    ``solver.mip_gap`` (what the store then records)."""
    solver = {k: v for k, v in (("threads", threads), ("mip_gap", mip_gap)) if v is not None}
    return {**({"time_limit": time_limit} if time_limit is not None else {}),
            **({"solver": solver} if solver else {})}


def spec_study(spec: Spec, what: str, grid: dict, methods: Sequence[str],
               metrics: Sequence[str], checks: Sequence[str] | None = None,
               keep_results: bool = True, edits: dict | None = None) -> dict:
    """The study data of a sweep: the spec as its base instance, ``grid`` (key -> values, or
    ``{start, stop, step}``) over its keys, its methods, every row keeping its whole result
    unless ``keep_results`` is false; ``edits``: more study keys (``solver_edits``)."""
    return {"study": study_name(spec.name or stem(spec.source or "-"), what),
            "kind": spec.kind, "instances": {"base": spec.source or "-"}, "grid": grid,
            "methods": list(methods), "metrics": list(metrics), "results": keep_results,
            **({"checks": list(checks)} if checks is not None else {}), **(edits or {})}


@dataclass
class Sweep(Sequence):
    """The rows of a sweep and each row's result, in the store's order (grid point, then
    method). As a sequence it is the (value, Result) pairs of its rows: the swept value (with
    several keys, the point as key -> value), and the Result (None for a row whose task
    failed: ``rows["error"]`` says why)."""

    study: Study
    progress: Progress
    rows: dict                                  # column -> array, as ``Store.rows`` gives
    results: list[dict | None] = field(repr=False)   # each row's result contract object

    @property
    def keys(self) -> list[str]:
        return [k for k, _ in self.study.grid]

    @property
    def points(self) -> list[tuple]:
        """Each row's grid point: its values in the order of ``keys``."""
        points = self.study.points
        return [tuple(v for _, v in points[int(i) // self.study.per_point])
                for i in self.rows["instance"]]

    @property
    def metric_names(self) -> list[str]:
        """The metrics kept as columns (``metric.<name>``), by name."""
        return [c.removeprefix("metric.") for c in self.rows if c.startswith("metric.")]

    @property
    def check_columns(self) -> list[str]:
        """A column per check as results show them (``bound:*`` checks share one)."""
        return list(dict.fromkeys(check_column(c.removeprefix("check.")) for c in self.rows
                                  if c.startswith("check.")))

    def records(self) -> list[dict]:
        """A JSON object per row, as ``fairalloc sweep --format json`` prints them: the swept
        ``value`` (one key only), the ``point``, then the whole result, or the method, status
        and error of a task that failed."""
        keys, rows = self.keys, self.rows
        return [{**({"value": point[0]} if len(keys) == 1 else {}),
                 "point": dict(zip(keys, point)),
                 **(r if r is not None else {"method": rows["method"][i],
                                             "status": rows["status"][i],
                                             "error": rows["error"][i]})}
                for i, (point, r) in enumerate(zip(self.points, self.results))]

    def to_pandas(self):
        """The rows as a pandas DataFrame: a column per swept key (its value at the row's
        point), then the store's columns (method, status, objective, ``check.<name>``,
        ``metric.<name>`` ...), one row per grid point and method."""
        pd = _pandas("Sweep.to_pandas")
        keys = self.keys
        points = self.points
        frame = pd.DataFrame({k: [p[i] for p in points] for i, k in enumerate(keys)})
        rest = pd.DataFrame({c: v for c, v in self.rows.items() if c not in keys})
        return pd.concat([frame, rest], axis=1)

    @cached_property
    def _pairs(self) -> list[tuple[Any, Result | None]]:
        one = len(self.keys) == 1
        return [(point[0] if one else dict(zip(self.keys, point)),
                 Result.from_dict(r) if r is not None else None)
                for point, r in zip(self.points, self.results)]

    @overload
    def __getitem__(self, i: int) -> tuple[Any, Result | None]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[Any, Result | None]]: ...

    def __getitem__(self, i):
        return self._pairs[i]

    def __len__(self) -> int:
        return len(self.results)


def logged(study: Study, log: Any) -> Study:
    """The study whose solves stream HiGHS's log: ``True`` to each worker's standard error,
    a text stream (its tasks run in this process) to it; None or False: no log."""
    if log is True:
        return dataclasses.replace(study, log=True)
    if log:
        return dataclasses.replace(study, solver=(*study.solver, ("log", log)))
    return study


def run_sweep(spec: Spec, data: dict, store: Store, *, resume: bool = False,
              workers: int | None = None, cluster: tuple[str, int | str] | None = None,
              log: Any = None, on_start: Callable[[Progress], None] | None = None,
              on_row: Callable[[dict], None] | None = None) -> Sweep:
    """Run the sweep study ``data`` (``spec_study``) into ``store``; ``log``: True streams
    each solve's HiGHS log to its worker's standard error, a text stream (tasks run in this
    process then) receives it. A grid value the spec refuses is the spec's error
    (``SpecError`` named after the sweep), not a study's."""
    try:
        study = logged(load_study(data, ".", known={spec.source or "-": spec.raw}), log)
    except SpecError as exc:
        raise SpecError(exc.violations, data["study"]) from None
    progress = run_study(study, store, resume=resume, workers=workers, cluster=cluster,
                         on_start=on_start, on_row=on_row)
    kept = "result" if study.keep_results else None
    rows = store.rows(study.name, [*store.columns(study.name), *filter(None, [kept])])
    texts = rows.pop("result", [None] * len(rows["instance"]))
    return Sweep(study, progress, rows, [json.loads(t) if t is not None else None
                                        for t in texts])



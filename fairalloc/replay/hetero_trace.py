"""Hetero traces: jobs with a measured model, a scale factor, steps to run and a priority.

A hetero replay's job is a configuration of Gavel's measured table
(``fairalloc.models.hetero.measured``: a model at a scale factor of 1, 2, 4 or 8 GPUs), the
steps it must run and its priority, in the column ``weight`` (the hetero spec's job weight,
Gavel's ``priority_weight``): every way of getting jobs below, the generator
(``fairalloc.replay.hetero.generate``) and the replay use that one column. Three ways to get
such jobs:

- a table with those columns (``read_hetero_trace``; CSV, TSV or Parquet, mapped as
  ``fairalloc import`` maps columns);
- Gavel's own trace files (``read_gavel_trace``), read as is;
- a trace of durations and GPU counts, such as the shipped ElasticFlow trace, given types by
  a seeded draw (``assign_types``).

``runs_nowhere`` names the jobs a cluster cannot run (every usable throughput 0), which a
replay refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from fairalloc.errors import ArgumentError
from fairalloc.models.hetero import (
    LARGEST_THROUGHPUT,
    LARGEST_WEIGHT,
    SMALLEST_WEIGHT,
    measured,
    models,
    usable_throughput,
)
from fairalloc.replay.tables import Column, read_trace
from fairalloc.replay.trace import Trace
from fairalloc.traces import Layout

# Gavel's trace file (scheduler/utils.py, parse_trace): no header, one job a line, ten fields
# split at tabs (no quoting), the job's number its line's.
GAVEL_FIELDS = ("job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
                "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time")
GAVEL_LAYOUT = Layout(delimiter="\t", names=GAVEL_FIELDS, quoted=False)
GAVEL_MAPPING = {"model": "job_type", "steps": "total_steps", "weight": "priority_weight",
                 "arrival": "arrival_time"}
LARGER = ("drop", "cap")      # what assign_types does with jobs of more GPUs than measured
REFERENCE = "v100"            # the type whose throughput turns a duration into steps (Gavel's)


def hetero_columns() -> dict[str, Column]:
    """The columns of a hetero trace and their rules (a job's priority, ``weight``, is 1 when
    not given)."""
    return {"model": Column(str, choices=models()),
            "scale_factor": Column(int, at_least=1),
            "steps": Column(float),
            "weight": Column(float, at_least=SMALLEST_WEIGHT, default=1.0,
                             at_most=LARGEST_WEIGHT)}


def listed_columns() -> dict[str, Column]:
    """The columns a hetero trace may list: a table's, and instead of a model a throughput
    per worker type (steps/s, 0: cannot run there), and a duration (s alone on a V100) with
    a model instead of steps."""
    return {**hetero_columns(), "duration": Column(float),
            "throughput.": Column(float, at_least=0.0, at_most=LARGEST_THROUGHPUT)}


def untyped_columns() -> dict[str, Column]:
    """The columns of a log of durations and GPU counts, which ``assign_types`` types: a
    job's ``duration`` (s alone on a V100) and ``num_gpu``."""
    return {"duration": Column(float), "num_gpu": Column(int, at_least=1)}


def _hetero_rows(values: Mapping[str, np.ndarray]) -> list[tuple[int, str, str]]:
    """Rows a hetero job cannot be: no steps to run, or a model not measured at its scale
    factor (1 when not given)."""
    steps = values.get("steps", np.ones(0))
    bad = [(int(i), "steps", f"{steps[i]:g} is not above 0 (a job runs some steps)")
           for i in np.flatnonzero(steps <= 0)]
    if "model" not in values:
        return bad
    table = measured()
    scales = values.get("scale_factor", np.ones(len(values["model"]), dtype=np.int64))
    for i, (model, scale) in enumerate(zip(values["model"].tolist(), scales.tolist())):
        if (model, scale) not in table:
            at = sorted(s for m, s in table if m == model)
            bad.append((i, "scale_factor" if "scale_factor" in values else "model",
                        f"{model} is measured at scale factors "
                        f"{', '.join(map(str, at))} only, not {scale}"))
    return bad


def _untyped_rows(values: Mapping[str, np.ndarray]) -> list[tuple[int, str, str]]:
    """Rows ``assign_types`` cannot type: a duration not above 0, or a GPU count below 8
    that no model is measured at (more than 8 is ``larger``'s)."""
    bad = [(int(i), "duration", f"{values['duration'][i]:g} is not above 0 (a job runs "
            "some time)") for i in np.flatnonzero(~(values["duration"] > 0))]
    gpus = values["num_gpu"]
    scales = _scales()
    bad += [(int(i), "num_gpu", f"no model is measured on {gpus[i]} GPUs (scale factors "
             f"{', '.join(map(str, scales))}; more than {scales[-1]}: as larger says)")
            for i in np.flatnonzero(_unmeasured(gpus))]
    return bad


def _scales() -> list[int]:
    """The scale factors (GPU counts) at which some model is measured, ascending."""
    return sorted({s for _, s in measured()})


def _unmeasured(gpus: np.ndarray) -> np.ndarray:
    """Which GPU counts no model is measured at, below the largest measured (more than that
    is ``larger``'s to decide)."""
    scales = _scales()
    return ~np.isin(gpus, scales) & (gpus < scales[-1])


def read_hetero_trace(path: str, *, mapping: Mapping[str, str] | None = None,
                      layout: Layout | None = None) -> Trace:
    """A hetero trace from a table with the columns a listed trace has (``listed_columns``:
    ``model``, ``scale_factor``, ``steps``, or ``duration`` and ``throughput.<type>`` ...),
    ``arrival``, and optionally ``id``, ``tenant`` and ``weight`` (priority); ``mapping``:
    trace column -> table column for others. The replay says which columns its jobs need (a
    model or throughputs; steps, or a duration and a model), as of a listed trace. Bad cells
    are a ``SpecError`` naming each one's line and column."""
    return read_trace(path, mapping=mapping, columns=listed_columns(), rules=[_hetero_rows],
                      layout=layout, needed=())


def read_untyped_trace(path: str, *, mapping: Mapping[str, str] | None = None) -> Trace:
    """A log of durations and GPU counts (``untyped_columns``, ``arrival``, optionally ``id``
    and ``tenant``) from a table, for ``assign_types``: an operator's scheduler log. Bad cells
    are a ``SpecError`` naming each one's line and column."""
    return read_trace(path, mapping=mapping, columns=untyped_columns(),
                      rules=[_untyped_rows])


def read_gavel_trace(path: str) -> Trace:
    """A trace file of Gavel's (``scheduler/traces/``, or written by its
    ``generate_trace.py``) as it is: job ``i`` of the file (0-based, as Gavel numbers them)
    with its ``job_type`` as model, ``scale_factor``, ``total_steps`` as steps,
    ``priority_weight`` as weight and ``arrival_time`` (s). The command, working directory,
    steps argument, data directory flag and SLO are not used (nor named as ignored: every
    such file has them)."""
    trace = read_hetero_trace(path, mapping=GAVEL_MAPPING, layout=GAVEL_LAYOUT)
    return replace(trace, ignored=())


def assign_types(trace: Trace, seed: int, *, larger: str, reference: str = REFERENCE
                 ) -> tuple[Trace, tuple[str, ...]]:
    """Measured types for jobs known by ``duration`` (s) and ``num_gpu``: each job's model
    drawn uniformly among the models measured at its GPU count (26 at 1 GPU, 19 at 2, 4 and
    8), with steps = duration x the model's throughput on ``reference`` at that scale
    factor, so the job runs ``duration`` seconds alone there (as Gavel's generator makes
    steps); weight (priority) 1. The same seed gives the same types: job i takes draw i of
    ``numpy.random.default_rng(seed)``, in arrival order.

    No model is measured on more than 8 GPUs. Such jobs (806 of the ElasticFlow trace's
    69,351, 30% of its GPU-hours) are, as ``larger`` says: ``"drop"``ped, their ids
    returned; or ``"cap"``ped at 8 GPUs with their GPU-time kept, steps = duration x
    (num_gpu / 8) x the 8-GPU throughput (as if they scaled perfectly from 8 GPUs to theirs,
    which nothing measured says). Returns the typed trace (its columns and the new ones)
    and the ids dropped."""
    if larger not in LARGER:
        raise ArgumentError("larger", f"{larger!r} is not one of {', '.join(LARGER)}")
    missing = [name for name in ("duration", "num_gpu") if name not in trace.columns]
    if missing:
        raise ArgumentError("trace", f"no column {', '.join(missing)}: types are drawn for "
                            f"jobs known by duration and num_gpu")
    table = measured()
    scales = _scales()
    gpus = np.asarray(trace.columns["num_gpu"], dtype=np.int64)
    duration = np.asarray(trace.columns["duration"], dtype=float)
    draw = np.random.default_rng(seed).random(trace.n)     # one draw a job, whatever its size
    over = gpus > scales[-1]
    unmeasured = _unmeasured(gpus)
    if unmeasured.any():
        i = int(np.flatnonzero(unmeasured)[0])
        raise ArgumentError("trace", f"job {trace.ids[i]!r} uses {gpus[i]} GPUs; measured "
                            f"scale factors are {', '.join(map(str, scales))}")
    scale = np.minimum(gpus, scales[-1])
    work = duration * np.where(over, gpus / scales[-1], 1.0)     # s on `scale` GPUs
    model = np.empty(trace.n, dtype=object)
    steps = np.empty(trace.n)
    for s in scales:
        jobs = np.flatnonzero(scale == s)
        choices = sorted(m for m, at in table if at == s)
        picked = np.floor(draw[jobs] * len(choices)).astype(int)
        model[jobs] = [choices[c] for c in picked]
        rate = np.array([table[(m, s)][reference] for m in choices])
        steps[jobs] = work[jobs] * rate[picked]
    kept = ~over if larger == "drop" else np.ones(trace.n, dtype=bool)
    typed = replace(trace, columns={
        **trace.columns, "model": model, "scale_factor": scale, "steps": steps,
        "weight": np.ones(trace.n)})
    return typed.take(kept), tuple(np.asarray(trace.ids, dtype=object)[~kept])


def runs_nowhere(trace: Trace, workers: Mapping[str, float]) -> list[str]:
    """The ids of the jobs of a hetero trace that no worker type of ``workers`` (type ->
    GPUs) can run: on every type its measured throughput is 0 (or not measured) or its scale
    factor exceeds the type's GPUs. A replay refuses these jobs, by id."""
    table = measured()
    usable: dict[tuple[str, int], bool] = {}
    out = []
    for job, model, scale in zip(trace.ids, trace.columns["model"].tolist(),
                                 trace.columns["scale_factor"].tolist()):
        key = (model, int(scale))
        if key not in usable:
            row = table.get(key, {})
            rates = np.array([[row.get(t, 0.0) for t in workers]])
            fits = np.array([scale <= gpus for gpus in workers.values()])
            usable[key] = bool((usable_throughput(rates)[0] & fits).any())
        if not usable[key]:
            out.append(job)
    return out

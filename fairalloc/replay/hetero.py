"""The hetero kind's replay parts: Gavel's job generator, its ``rounds`` mechanism, the jobs'
throughputs, and the policies beyond the kind's methods (FIFO, minimum total duration).

Gavel (Narayanan et al., OSDI 2020) simulates its policies in rounds of 360 s: each round, per
worker type, the jobs in order of priority (allocation / share of the type's time received so
far) take whole workers of their scale factor, and a job progresses at its measured throughput
on the type it ran on (``scheduler/scheduler.py``: ``_schedule_jobs_on_workers``,
``_update_priorities``). Its generator (``scheduler/utils.py``: ``generate_job``) draws
Poisson arrivals, Philly-like durations and scale factors and a job type uniformly from the
measured table; :func:`generate` does the same with numpy's Generator.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.errors import Violations
from fairalloc.models.hetero import (
    FINISH_TOLERANCE,
    LARGEST_WORKERS,
    MEASURED_TYPES,
    HeteroProblem,
    colocated,
    eligible,
    isolated_program,
    isolated_share,
    isolated_throughput,
    measured,
    measured_pairs,
    shared_of,
    throughput_of,
    time_of,
    usable_throughput,
)
from fairalloc.replay.clock import FINISH_SLACK_S
from fairalloc.replay.engine import Plan, Policy, State
from fairalloc.replay.measures import Slack
from fairalloc.replay.trace import Trace
from fairalloc.result import Solution
from fairalloc.solvers import hetero as solvers
from fairalloc.solvers.hetero import max_min_value, smallest_level

ROUND_S = 360.0                # Gavel's time_per_iteration
RESET_S = 1920.0               # Gavel's minimum_time_between_allocation_resets
REFERENCE_TYPE = "v100"        # steps = duration x throughput alone on this type (Gavel)
SHORT, LONG = (1.5, 3.0), (3.0, 4.0)       # duration = 60 * 10^U(a, b) s
LONG_SHARE = 0.2
PHILLY_SCALES = ((1, 0.7), (2, 0.1), (4, 0.15), (8, 0.05))
HIGH_PRIORITY, HIGH_PRIORITY_SHARE = 5.0, 0.2


# --- the cluster and the jobs -----------------------------------------------------------------

@dataclass(frozen=True)
class Cluster:
    """Worker types and their GPU counts."""

    types: tuple[str, ...]
    workers: np.ndarray


@dataclass(frozen=True, eq=False)
class Jobs:
    """Per job of a trace (trace order): its throughput row alone on each type (steps/s),
    scale factor, weight (priority) and steps."""

    ids: np.ndarray              # (n,) object: the trace's ids
    throughput: np.ndarray       # (n, k)
    scale: np.ndarray            # (n,)
    weights: np.ndarray          # (n,)
    steps: np.ndarray            # (n,)
    # Gavel's co-located throughputs (``measured_pairs``) for jobs of its table: each job's
    # (model, scale factor) class and (classes, classes, types) steps/s beside another's
    pair_class: np.ndarray | None = None
    pair_table: np.ndarray | None = None


def cluster(data: dict, found: Violations) -> Cluster | None:
    """The document's ``cluster``: ``{"workers": {type: GPUs}}``."""
    workers = data.get("workers") if isinstance(data, dict) else None
    if not isinstance(workers, dict) or not workers:
        found.add("cluster.workers", "give the GPUs of each worker type, e.g. "
                  '{"v100": 36, "p100": 36, "k80": 36}')
        return None
    bad = [t for t, w in workers.items() if not isinstance(w, int) or isinstance(w, bool)
           or not 0 <= w <= LARGEST_WORKERS]
    for t in bad:
        found.add(["cluster", "workers", t], "a number of GPUs is a whole number from 0 to "
                  f"{LARGEST_WORKERS:,}")
    if bad:
        return None
    return Cluster(tuple(workers), np.array(list(workers.values()), dtype=float))


def resources(c: Cluster) -> tuple[str, ...]:
    """Utilisation is measured per worker type."""
    return c.types


def jobs(c: Cluster, trace: Trace, found: Violations) -> Jobs | None:
    """The jobs' arrays from the trace's columns: ``model`` and ``scale_factor`` (rows from
    Gavel's measured table) or ``throughput.<type>`` columns; ``steps``, or ``duration`` (s
    alone on a V100, Gavel's definition of steps); ``weight`` (default 1). A job that can run
    on no type of the cluster is refused, naming its id."""
    cols = trace.columns
    n = trace.n
    scale = np.asarray(cols.get("scale_factor", np.ones(n)), dtype=float)
    rows = _rows(c, trace, scale, found)
    if rows is None:
        return None
    steps = _steps(trace, scale, found)
    weights = np.asarray(cols.get("weight", np.ones(n)), dtype=float)
    if np.any(weights <= 0):
        found.add(["trace", "weight"], f"job {trace.ids[int(np.argmax(weights <= 0))]}: "
                  "a weight is > 0")
    usable = usable_throughput(rows) & (scale[:, None] <= c.workers[None, :])
    for i in np.flatnonzero(~usable.any(axis=1))[:20]:
        found.add(["trace", "jobs", trace.ids[i]],
                  f"job {trace.ids[i]} can run nowhere: it needs {int(scale[i])} GPU(s) of a "
                  f"type where its throughput is above 0 (cluster: "
                  f"{', '.join(f'{t} {int(w)}' for t, w in zip(c.types, c.workers))})")
    if found or steps is None:
        return None
    pair_class, pair_table = _pairs(c, trace, scale)
    return Jobs(np.asarray(trace.ids, dtype=object), np.where(usable, rows, 0.0), scale,
                weights, steps, pair_class, pair_table)


def _pairs(c: Cluster, trace: Trace, scale: np.ndarray
           ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Each job's class (model, scale factor) and the classes' co-located throughputs on the
    cluster's types from Gavel's table (``measured_pairs``; 0 for two scale factors, as
    Gavel never packs those); (None, None) for jobs not of the table."""
    if "model" not in trace.columns or any(t not in MEASURED_TYPES for t in c.types):
        return None, None
    keys = list(zip((str(m) for m in trace.columns["model"]), scale.astype(int).tolist()))
    classes = sorted(set(keys))
    index = {key: i for i, key in enumerate(classes)}
    pairs = measured_pairs()
    table = np.zeros((len(classes), len(classes), len(c.types)))
    for a, first in enumerate(classes):
        for b, second in enumerate(classes):
            row = pairs.get((first, second), {}) if first[1] == second[1] else {}
            table[a, b] = [row.get(t, (0.0, 0.0))[0] for t in c.types]
    return np.array([index[key] for key in keys]), table


def _rows(c: Cluster, trace: Trace, scale: np.ndarray, found: Violations
          ) -> np.ndarray | None:
    cols = trace.columns
    given = [f"throughput.{t}" for t in c.types]
    if all(g in cols for g in given):
        return np.column_stack([np.asarray(cols[g], dtype=float) for g in given])
    if "model" not in cols:
        found.add("trace", "each job needs a model (Gavel's measured table) or a "
                  f"throughput per worker type ({', '.join(given)}); a table of durations "
                  "and GPU counts (duration, num_gpu) is typed with types_seed and larger")
        return None
    table = measured()
    unknown_types = [t for t in c.types if t not in {"k80", "p100", "v100"}]
    if unknown_types:
        found.add(["cluster", "workers", unknown_types[0]], "the measured table has only "
                  "k80, p100 and v100 (give throughput.<type> columns for other types)")
        return None
    rows = np.zeros((trace.n, len(c.types)))
    cache: dict[tuple[str, int], np.ndarray] = {}
    for i, (model, s) in enumerate(zip(cols["model"], scale.astype(int))):
        key = (str(model), int(s))
        if key not in cache:
            if key not in table:
                found.add(["trace", "jobs", trace.ids[i], "model"],
                          f"{key[0]!r} at scale factor {key[1]} is not in the measured table")
                return None
            cache[key] = np.array([table[key][t] for t in c.types])
        rows[i] = cache[key]
    return rows


def _steps(trace: Trace, scale: np.ndarray, found: Violations) -> np.ndarray | None:
    cols = trace.columns
    if "steps" in cols:
        steps = np.asarray(cols["steps"], dtype=float)
    elif "duration" in cols and "model" in cols:
        table = measured()
        steps = np.array([d * table[(str(m), int(s))][REFERENCE_TYPE]
                          if (str(m), int(s)) in table else np.nan
                          for d, m, s in zip(cols["duration"], cols["model"], scale)])
    else:
        found.add("trace", "each job needs its steps, or a duration and a model")
        return None
    bad = np.flatnonzero(~(steps > 0))
    if bad.size:
        found.add(["trace", "jobs", trace.ids[bad[0]], "steps"], "a job's steps are > 0")
        return None
    return steps


def work(j: Jobs) -> np.ndarray:
    """A job's total work: its steps."""
    return j.steps


def problem(c: Cluster, j: Jobs, active: np.ndarray, remaining: np.ndarray,
            elapsed: np.ndarray) -> HeteroProblem:
    """The hetero problem over the active jobs, with their steps remaining and time elapsed
    (what ``finish-time`` needs) and, for Gavel's jobs, their co-located throughputs (what
    ``max-min-packed`` needs), built from the arrays."""
    return HeteroProblem(ids=tuple(j.ids[active]), types=c.types, workers=c.workers,
                         throughput=j.throughput[active], scale=j.scale[active],
                         weights=j.weights[active], steps=np.asarray(remaining, dtype=float),
                         elapsed=np.asarray(elapsed, dtype=float),
                         pair_class=None if j.pair_class is None else j.pair_class[active],
                         pair_table=j.pair_table)


def rates(p: HeteroProblem, allocation: Allocation) -> np.ndarray:
    """Steps/s of each job under the time fractions applied exactly: E_j = sum_k T_jk x_jk,
    and its co-located throughputs on the time it shares a GPU."""
    return throughput_of(p, allocation)


def usage(p: HeteroProblem, allocation: Allocation) -> np.ndarray:
    """(jobs, types): the share of each type's GPUs a job holds, s_j x_jk / W_k, and half of
    those it shares with another job."""
    x = time_of(p, allocation)
    shared = shared_of(p, allocation)
    if shared is not None:
        x = x + 0.5 * shared.sum(axis=1)
    return np.divide(p.scale[:, None] * x, p.workers[None, :],
                     out=np.zeros_like(x), where=p.workers[None, :] > 0)


# --- Gavel's generator --------------------------------------------------------------------------

# Gavel's job table in its order (``scheduler/job_table.py``), the first 19 distributed
GAVEL_TABLE = tuple(
    [f"ResNet-18 (batch size {b})" for b in (16, 32, 64, 128, 256)]
    + [f"ResNet-50 (batch size {b})" for b in (16, 32, 64, 128)]
    + [f"Transformer (batch size {b})" for b in (16, 32, 64, 128, 256)]
    + [f"LM (batch size {b})" for b in (5, 10, 20, 40, 80)]
    + [f"Recommendation (batch size {b})" for b in (512, 1024, 2048, 4096, 8192)]
    + ["A3C", "CycleGAN"])
DISTRIBUTED = 19
GAVEL_TYPES = ("v100", "p100", "k80")     # its worker types, fastest first
STREAMS = ("numpy", "gavel")


def generate(seed: int, jobs: int, rate: float | None = None, multi_gpu: bool = False,
             priorities: bool = False, stream: str = "numpy") -> Trace:
    """Gavel's synthetic jobs (``generate_job``): arrivals Poisson at ``rate`` jobs/hour (the
    first at 0; None: all at 0, a static trace); duration 60 * 10^U(1.5, 3) s with
    probability 0.8, else 60 * 10^U(3, 4) s; scale factor 1, or with ``multi_gpu`` Philly's
    1/2/4/8 at 0.7/0.1/0.15/0.05; a job type uniform over the measured table's configurations
    at that scale factor (26 at 1); steps = duration x its throughput alone on a V100; with
    ``priorities``, 20% of jobs at weight 5. The same seed gives the same trace.

    ``stream`` "numpy" draws with numpy's Generator; "gavel" draws what Gavel's simulator
    draws for the same seed (Python's ``random``, seeded seed + 2 for jobs and seed + 3 for
    arrivals, in its order of draws), so that a replay meets Gavel's own jobs: its published
    figures are one seed each, and at high load the average JCT of one 1000-job window moves
    by a third from trace to trace."""
    if stream not in STREAMS:
        raise ValueError(f"stream is one of {', '.join(STREAMS)}, not {stream!r}")
    if stream == "gavel":
        scale, duration, models, weight, gaps = _gavel_stream(seed, jobs, rate, multi_gpu,
                                                              priorities)
    else:
        scale, duration, models, weight, gaps = _numpy_stream(seed, jobs, rate, multi_gpu,
                                                              priorities)
    table = measured()
    steps = duration * np.array([table[(m, int(s))][REFERENCE_TYPE]
                                 for m, s in zip(models, scale)])
    arrival = np.concatenate([[0.0], np.cumsum(gaps[:-1])]) if jobs else np.zeros(0)
    width = len(str(max(jobs - 1, 0)))
    return Trace([f"j{i:0{width}d}" for i in range(jobs)], arrival,
                 {"model": np.array(models, dtype=object), "scale_factor": scale,
                  "duration": duration, "steps": steps, "weight": weight},
                 source=f"gavel(seed={seed}, jobs={jobs}, rate={rate}"
                        + (", stream=gavel)" if stream == "gavel" else ")"))


def _numpy_stream(seed: int, jobs: int, rate: float | None, multi_gpu: bool,
                  priorities: bool) -> tuple:
    rng = np.random.default_rng(seed)
    table = measured()
    by_scale = {s: sorted(m for m, t in table if t == s) for s in {t for _, t in table}}
    draws = rng.random((jobs, 5))           # scale, duration class, duration, type, priority
    if multi_gpu:
        edges = np.cumsum([share for _, share in PHILLY_SCALES])
        scale = np.array([s for s, _ in PHILLY_SCALES])[
            np.minimum(np.searchsorted(edges, draws[:, 0], side="right"), 3)]
    else:
        scale = np.ones(jobs, dtype=int)
    long = draws[:, 1] < LONG_SHARE
    low = np.where(long, LONG[0], SHORT[0])
    high = np.where(long, LONG[1], SHORT[1])
    duration = 60.0 * 10.0 ** (low + (high - low) * draws[:, 2])
    models = [by_scale[int(s)][int(u * len(by_scale[int(s)]))] for s, u in
              zip(scale, draws[:, 3])]
    weight = np.where(priorities & (draws[:, 4] < HIGH_PRIORITY_SHARE), HIGH_PRIORITY, 1.0)
    gaps = rng.exponential(3600.0 / rate, jobs) if rate is not None else np.zeros(jobs)
    return scale, duration, models, weight, gaps


def _gavel_stream(seed: int, jobs: int, rate: float | None, multi_gpu: bool,
                  priorities: bool) -> tuple:
    """Gavel's draws, in its order: per job a scale factor (always drawn), the duration's
    class and value, job types until one fits the scale factor, a priority; arrivals from
    their own generator, -log(1 - U) x 3600 / rate apart."""
    jobs_rng, arrivals_rng = random.Random(seed + 2), random.Random(seed + 3)
    scale = np.ones(jobs, dtype=int)
    duration = np.zeros(jobs)
    weight = np.ones(jobs)
    models = []
    edges = np.cumsum([share for _, share in PHILLY_SCALES])
    for i in range(jobs):
        r = jobs_rng.uniform(0, 1)
        s = PHILLY_SCALES[min(int(np.searchsorted(edges, r)), 3)][0] if multi_gpu else 1
        if jobs_rng.random() >= 1 - LONG_SHARE:
            duration[i] = 60 * 10 ** jobs_rng.uniform(*LONG)
        else:
            duration[i] = 60 * 10 ** jobs_rng.uniform(*SHORT)
        while True:
            index = jobs_rng.randrange(len(GAVEL_TABLE))    # what random.choice draws
            if s == 1 or index < DISTRIBUTED:
                break
        models.append(GAVEL_TABLE[index])
        scale[i] = s
        if priorities and jobs_rng.uniform(0, 1) <= HIGH_PRIORITY_SHARE:
            weight[i] = HIGH_PRIORITY
    gaps = np.array([-math.log(1.0 - arrivals_rng.random()) * 3600.0 / rate
                     for _ in range(jobs)]) if rate is not None else np.zeros(jobs)
    return scale, duration, models, weight, gaps


def gavel(seed: int, jobs: int, rate: float, multi_gpu: bool = False,
          priorities: bool = False, stream: str = "numpy") -> Trace:
    """Gavel's continuous trace: Poisson arrivals at ``rate`` jobs/hour."""
    return generate(seed, jobs, rate, multi_gpu, priorities, stream)


def static(seed: int, jobs: int, multi_gpu: bool = False, priorities: bool = False,
           stream: str = "numpy") -> Trace:
    """Gavel's jobs, all arriving at time 0."""
    return generate(seed, jobs, None, multi_gpu, priorities, stream)


# --- Gavel's rounds --------------------------------------------------------------------------

SCHEDULE_CELLS = 2 ** 18        # rounds x jobs of a schedule of rounds planned ahead
# a bound past a double's range is infinite, and says so (no warning on stderr)
OVERFLOW_IS_INF = np.errstate(over="ignore")
DBL_MAX = float(np.finfo(float).max)     # "at least" this many, when a bound is infinite

# The most rounds a replay may need, by the lower bounds below: rounds in which some job is
# active (about 120 µs a round in the figure-8 replays, 1.25e5 rounds in 15 s at 0.4 jobs/h;
# figure 8 at its lowest rate needs 3.5e5 over 14,000 jobs), and rounds that the jobs' work
# fills the whole cluster for, where jobs contend and each round is played alone (350-500 µs
# a round with a few jobs on the template's 6 GPUs: 47,410 rounds in 17.6 s at round_s 10;
# about 2 ms with thousands of jobs queued on figure 9's 108 GPUs: its agnostic LAS at 2.8
# jobs/h, 67,000 jobs that fill them for at least 1.8e5 rounds, played 2.6e5 in 562 s; the
# largest shipped replay, figure 8 in Gavel's stream, needs 1.9e4)
MOST_ROUNDS = 1_000_000
MOST_FULL_ROUNDS = 400_000


def fastest(j: Jobs) -> np.ndarray:
    """Each job's fastest progress (steps/s): alone on its fastest type."""
    return j.throughput.max(axis=1)


@OVERFLOW_IS_INF
def least(c: Cluster, j: Jobs) -> tuple[np.ndarray, np.ndarray]:
    """Each job's least time (s), its steps on its fastest type, holding its GPUs' share of
    all the cluster's."""
    return j.steps / fastest(j), j.scale / c.workers.sum()


@OVERFLOW_IS_INF
def least_active(j: Jobs, arrival: np.ndarray) -> float:
    """A lower bound of the simulated time (s) some job is active: each job is active from its
    arrival for at least its steps at its fastest rate (the union of those spans)."""
    ends = np.maximum.accumulate(arrival + j.steps / fastest(j))
    first = np.flatnonzero(np.r_[True, arrival[1:] > ends[:-1]])   # each merged span's start
    last = np.r_[first[1:] - 1, arrival.size - 1]
    return float((ends[last] - arrival[first]).sum())


@OVERFLOW_IS_INF
def least_full(c: Cluster, j: Jobs) -> float:
    """A lower bound of the simulated time (s) the jobs' work fills every GPU for: their
    GPU-seconds at their fastest rates over the cluster's GPUs."""
    return float((j.steps * j.scale / fastest(j)).sum() / c.workers.sum())


@OVERFLOW_IS_INF
def check_rounds(c: Cluster, j: Jobs, arrival: np.ndarray, settings: dict,
                 found: Violations) -> None:
    """Refuse a replay that needs more rounds than it can play for certain: naming the job
    that alone needs more than ``MOST_ROUNDS`` even in Gavel's rounds of 360 s (its steps are
    at fault), else the round's length when the jobs are active for more than
    ``MOST_ROUNDS`` rounds or fill the cluster for more than ``MOST_FULL_ROUNDS``."""
    round_s = settings.get("round_s", ROUND_S)
    alone = j.steps / fastest(j) / round_s
    if alone.size and alone.max() * round_s / max(round_s, ROUND_S) > MOST_ROUNDS:
        i = int(alone.argmax())
        found.add(["trace", "jobs", str(j.ids[i]), "steps"],
                  f"job {j.ids[i]} needs at least {min(alone[i], DBL_MAX):.3g} rounds of "
                  f"{round_s:g} s alone on its fastest type; a replay plays at most "
                  f"{MOST_ROUNDS:,} rounds")
        return
    for span, most, what in ((least_active(j, arrival), MOST_ROUNDS, "are active for"),
                             (least_full(c, j), MOST_FULL_ROUNDS, "fill every GPU for")):
        if span / round_s > most:
            found.add("mechanism.round_s", f"the jobs {what} at least "
                      f"{min(span / round_s, DBL_MAX):.3g} rounds of {round_s:g} s; a replay "
                      f"plays at most {most:,}: make rounds of at least {span / most:.3g} s, "
                      "or the trace shorter")
            return


@OVERFLOW_IS_INF
def most_plans(j: Jobs, round_s: float) -> float:
    """An upper bound of the plans ``rounds`` makes: a round that lasts all of ``round_s``
    has a job run all of it at its slowest usable rate or faster, so there are at most the
    jobs' steps at those rates over ``round_s`` of them; every other plan (a round cut short
    as its last jobs finish, a wait for an allocation) follows an arrival or a completion.
    A job's slowest rate counts its co-located ones (a pair sharing a GPU, ``PackedRounds``)."""
    slowest = np.where(j.throughput > 0, j.throughput, np.inf).min(axis=1)
    if j.pair_table is not None:
        beside = np.where(j.pair_table > 0, j.pair_table, np.inf).min(axis=(1, 2))
        slowest = np.minimum(slowest, beside[j.pair_class])
    return float((j.steps / slowest).sum() / round_s) + 3 * j.steps.size + 1


def fastest_first(types: tuple[str, ...], throughput: np.ndarray) -> np.ndarray:
    """The order in which a policy aware of heterogeneity visits the worker types each round:
    Gavel's types in Gavel's fixed order (v100, p100, k80); other types by how fast a job runs
    there as a share of its fastest type, averaged over the trace's jobs. Never by raw steps
    per second: a step is a different unit for each model, and on the ElasticFlow trace's
    typed jobs the P100's median throughput tops the V100's although most jobs run faster on
    the V100.

    >>> fastest_first(("k80", "v100"), np.array([[1.0, 3.0]])).tolist()
    [1, 0]
    >>> fastest_first(("slow", "fast"), np.array([[1.0, 2.0], [0.5, 9.0]])).tolist()
    [1, 0]
    """
    if all(t in GAVEL_TYPES for t in types):
        return np.array([types.index(t) for t in GAVEL_TYPES if t in types])
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.nan_to_num(throughput / throughput.max(axis=1, keepdims=True))
    return np.argsort(-share.mean(axis=0), kind="stable")


class Rounds:
    """Gavel's mechanism. Each round of ``round_s``: per worker type (fastest first for a
    policy aware of heterogeneity, in a seeded random order each round otherwise), the jobs in
    order of priority take whole workers of their scale factor; a job is placed once a round,
    on the first type that takes it. Priority on type k: x_jk / (time on k since the last
    reset) — each job starts a reset period at round_s / 2 — ties broken by the deficit
    (time it should have had minus time it had, summed over past periods), then x_jk, then
    arrival. A job not in the allocation (arrived since it was computed) has priority 0 but
    still takes a worker left free (FIFO policies excepted, as in Gavel). The allocation is
    re-computed at a round's start when the set of jobs changed and ``reset_s`` passed since
    the last time. A round ends when its last job stops (at ``round_s``, or earlier when every
    job placed in it finished). When no job can run, time moves to the next arrival (Gavel),
    or, once none is to come, to the next reset (where Gavel's loop would wait forever).
    Rounds in which no job is turned away for want of room are planned ahead as one held
    plan (their orders of types drawn as each round would draw them), so that their number
    costs nothing where nothing can change."""

    def __init__(self, c: Cluster, j: Jobs, policy: Policy, *, round_s: float = ROUND_S,
                 reset_s: float = RESET_S, aware: bool = True, queue: bool = False,
                 seed: int = 0, stream: str = "numpy"):
        self.c, self.j, self.policy = c, j, policy
        self.round_s, self.reset_s = round_s, reset_s
        self.aware, self.queue = aware, queue
        self.rng = np.random.default_rng(seed + 5)
        # Gavel shuffles its list ["v100", "p100", "k80"] with Python's random (seed + 5)
        self.gavel_order = random.Random(seed + 5) if stream == "gavel" else None
        self.listed = [self.c.types.index(t) for t in GAVEL_TYPES if t in self.c.types]
        n, k = j.throughput.shape
        self.time = np.full((n, k), round_s / 2)      # time on each type since the last reset
        self.deficit = np.zeros((n, k))
        self.x = np.zeros((n, k))                      # the allocation in force
        self.allocated = np.zeros(n, dtype=bool)       # in the allocation in force
        self.last_reset = 0.0
        self.pending = False
        self.placed = np.full(n, -1)                   # type of each job in the current round
        self.order = fastest_first(c.types, j.throughput)
        self.budget = most_plans(j, round_s)
        self.drawn: deque[list[int]] = deque()       # orders drawn for rounds not yet played
        self.scheduled = np.zeros((0, 0), dtype=int)  # the held schedule's types per round

    @property
    def slack(self) -> Slack:
        """How much later than under its isolated share a job may finish by the rounds'
        granularity alone: reset_s + 2 round_s (2,640 s with Gavel's 1,920 s and 360 s).

        Why: under ``ideal`` a policy that gives every job at least its isolated share at
        every allocation finishes every job no later than the isolated policy does (take the
        first job, in the isolated run's order of finishing, that the policy's run finishes
        later: until then every job the isolated run finished is finished in the policy's
        run too, so no more jobs are active there, each job's isolated share is no smaller,
        and that job progresses at least as fast — a contradiction). Rounds deliver the same
        allocations late in two steps, in either run: a job's first allocation waits for the
        next re-allocation, which comes at a round's start once reset_s has passed since the
        last (up to reset_s + round_s after it arrives); and its share comes in whole rounds
        of the workers free, so its last round may end a round after its work would have at
        the allocation's rate. That is the slack, and it is an account, not a proof: whole
        workers placed by priority can delay a job further (a job placed on a slower type
        than its allocation's), so a job late within it is ``unrefuted``, never ``holds``.
        Measured on specs/replay/quick.json at rates 1, 2 and 3 jobs/h, seeds 0-5:
        agnostic-max-min late by up to 706 s (allocations like the isolated share's, placed
        in another order), max-min by up to 1,673 s (a job that waited a reset interval in
        its run and none in the isolated one) but once by 5,467 s (a lone job placed on the
        V100 its allocation gives no time on); on specs/studies/replay-quick.json fifo by
        12,317 s to 1,336,394 s."""
        return Slack(self.reset_s + 2 * self.round_s,
                     f"rounds of {self.round_s:g} s re-allocated at most once per "
                     f"{self.reset_s:g} s, reset_s + 2 round_s (a job waits up to reset_s + "
                     "round_s for its first allocation, in either run, and gets its share in "
                     "whole rounds)")

    def plan(self, state: State) -> Plan:
        self.pending |= state.changed
        now, active = state.now, state.active
        if self.pending and (now - self.last_reset >= self.reset_s or self.last_reset == 0):
            self._reset(state)
        placed, contended = self._place(active)
        t = self.j.throughput[active]
        on = placed >= 0
        rate = np.where(on, t[np.arange(active.size), np.maximum(placed, 0)], 0.0)
        use = np.zeros((active.size, len(self.c.types)))
        use[np.flatnonzero(on), placed[on]] = self.j.scale[active[on]] / self.c.workers[
            placed[on]]
        with np.errstate(divide="ignore", invalid="ignore"):
            runs = np.where(on, np.minimum(self.round_s, state.remaining[active] / rate), 0.0)
        self.placed[active] = placed
        if not on.any():      # all wait for an allocation: the next reset it may make
            wake = self.last_reset + self.reset_s if self.pending else math.inf
            return Plan(rate, use, max(wake, now), held=True)
        # at its fastest, a job placed on another type in a later round (agnostic order)
        fastest_rate = rate[on] if self.aware else self.j.throughput[active[on]].max(axis=1)
        ahead = 1 if contended else self._unchanging(state, state.remaining[active[on]]
                                                       / fastest_rate)
        if ahead == 1:
            return Plan(rate, use, now + float(runs.max()), held=True)
        if self.aware:      # the same types every round: the same rates all along
            return Plan(rate, use, now + ahead * self.round_s, held=True)
        return self._schedule(state, placed, ahead)

    def _unchanging(self, state: State, needs: np.ndarray) -> int:
        """How many whole rounds from now on place the jobs as this one did, its placed jobs
        needing at least ``needs`` seconds each to finish: when every job placed ran with room
        to spare (none was turned away, so priorities do not matter), until an arrival takes
        effect (at the end of the round it falls in), a placed job's last round (which may end
        early) or a pending reset falls due. Played as one held plan, they cost one plan, not
        one per round: a lone job of 1e12 steps is one plan."""
        now, r = state.now, self.round_s
        # whole rounds before the first placed job's last one, clear of the engine's slack
        rounds = np.floor((float(needs.min()) - 2 * FINISH_SLACK_S) / r) - 1
        arrived = int(np.searchsorted(state.arrival, now, side="right"))
        if arrived < state.arrival.size:
            rounds = min(rounds, np.ceil((float(state.arrival[arrived]) - now) / r))
        if self.pending:
            rounds = min(rounds, np.ceil((self.last_reset + self.reset_s - now) / r))
        return int(max(1.0, min(rounds, 2.0 ** 53)))

    def _schedule(self, state: State, first: np.ndarray, ahead: int) -> Plan:
        """A policy agnostic of heterogeneity: up to ``ahead`` rounds from ``first`` (this
        round's placement), each in the order of types it draws, every job on the first type
        it may run on, as long as no round turns a job away (an order drawn for a round not
        played is kept for it); at most ``SCHEDULE_CELLS`` rounds x jobs a plan."""
        active = state.active
        k = len(self.c.types)
        ahead = min(ahead, max(2, SCHEDULE_CELLS // active.size))
        orders = np.array([self._shuffled(k) for _ in range(ahead - 1)])
        eligible = self._eligible(active)[None, :, :]
        where = np.argsort(orders, axis=1)[:, None, :]       # each type's place in an order
        rank = np.where(eligible, where, k)
        types = np.where(rank.min(axis=2) < k, rank.argmin(axis=2), -1)
        load = np.zeros((ahead - 1, k + 1))         # the last column: jobs placed nowhere
        np.add.at(load, (np.arange(ahead - 1)[:, None], types),
                  self.j.scale[active][None, :])
        turned = np.flatnonzero((load[:, :k] > self.c.workers).any(axis=1))
        played = int(turned[0]) if turned.size else ahead - 1
        self.drawn.extendleft(reversed([list(o) for o in orders[played:]]))
        placed = np.vstack([first, types[:played]])
        placed[:, ~self.allocated[active]] = -1
        on = placed >= 0
        rows, jobs = np.nonzero(on)
        rates = np.zeros(placed.shape)
        rates[rows, jobs] = self.j.throughput[active[jobs], placed[rows, jobs]]
        use = np.zeros((*placed.shape, k))
        use[rows, jobs, placed[rows, jobs]] = (self.j.scale[active[jobs]]
                                               / self.c.workers[placed[rows, jobs]])
        self.scheduled = placed
        return Plan(rates, use, state.now + placed.shape[0] * self.round_s, held=True)

    def ran(self, state: State, plan: Plan, seconds: np.ndarray) -> None:
        active = state.active
        if seconds.ndim == 2:           # a schedule: each round on its own types
            rows, jobs = np.nonzero(self.scheduled >= 0)
            np.add.at(self.time, (active[jobs], self.scheduled[rows, jobs]),
                      seconds[rows, jobs])
            return
        placed = self.placed[active]
        on = placed >= 0
        self.time[active[on], placed[on]] += seconds[on]

    def _reset(self, state: State) -> None:
        """Gavel's ``_reset_time_run_so_far`` then a new allocation."""
        now, active = state.now, state.active
        should = self.x[active] * (now - self.last_reset)
        self.deficit[active] += should - (self.time[active] - self.round_s / 2)
        self.time[active] = self.round_s / 2
        self.last_reset = now
        problem, solution = self.policy.allocate(state)
        x = time_of(problem, solution.allocation)
        # a queue allots each job its type whole (Gavel's allocation 1.0), also where its
        # allocation shares the type by time (fifo's over-committed types): priorities and
        # deficits are Gavel's
        self.x[active] = x > 0 if self.queue else x
        self.allocated[:] = False
        self.allocated[active] = True
        self.pending = False

    def _shuffled(self, k: int) -> list[int]:
        """This round's order of worker types for a policy agnostic of heterogeneity."""
        if self.drawn:
            return self.drawn.popleft()
        if self.gavel_order is None or len(self.listed) != k:
            return list(self.rng.permutation(k))
        order = list(self.listed)
        self.gavel_order.shuffle(order)
        return order

    def _eligible(self, active: np.ndarray) -> np.ndarray:
        """(active jobs, types): where each job may be placed: the types it runs on, for a
        queue (FIFO) only those its allocation gives it time on."""
        runs = self.j.throughput.take(active, axis=0) > 0
        if not self.queue:
            return runs
        return runs & self.allocated[active, None] & (self.x[active] > 0)

    def _place(self, active: np.ndarray) -> tuple[np.ndarray, bool]:
        """The type each active job runs on this round (-1: none), and whether a job was
        turned away from a type for want of room (then priorities decide who runs)."""
        k = len(self.c.types)
        # take: a quarter of the time of indexing by the active jobs' positions
        allocated = self.allocated.take(active)
        x = self.x.take(active, axis=0) * allocated[:, None]
        t = self.j.throughput.take(active, axis=0)
        priority = np.where((x > 0) & (t > 0), x / self.time.take(active, axis=0), 0.0)
        eligible = self._eligible(active)
        # ranked by priority, deficit and x, each highest first (negated for the ascending
        # sort), then arrival: the stable sort keeps the candidates' order for full ties
        keys = np.stack([-x, -self.deficit.take(active, axis=0), -priority])
        scale = self.j.scale.take(active)
        unit = bool(np.all(scale == 1))
        placed = np.full(active.size, -1)
        contended = False
        order = self.order if self.aware else self._shuffled(k)
        for k_ in order:
            left = self.c.workers[k_]
            candidates = np.flatnonzero((placed < 0) & eligible[:, k_])
            if not candidates.size:
                continue
            wanted = candidates.size if unit else scale[candidates].sum()
            contended |= bool(wanted > left)
            if left <= 0:
                continue
            if wanted <= left:      # every candidate fits: their order does not matter
                placed[candidates] = k_
                continue
            ranked = candidates[np.lexsort(keys[:, candidates, k_])]
            if unit:
                taken = ranked[:int(left)]
            else:
                taken = []
                for i in ranked:
                    if scale[i] <= left:
                        taken.append(i)
                        left -= scale[i]
                        if left <= 0:
                            break
            placed[taken] = k_
        # Gavel picks the jobs first, then gives workers only to those in the allocation: a
        # job picked before its first allocation holds its workers idle for the round
        placed[~allocated] = -1
        return placed, contended


class _Remembered:
    """A policy whose last allocation is kept (``PackedRounds`` reads its shared time)."""

    def __init__(self, policy: Policy):
        self.policy = policy
        self.last: tuple | None = None

    def allocate(self, state: State):
        self.last = self.policy.allocate(state)
        return self.last


class PackedRounds(Rounds):
    """Gavel's rounds for a policy with space sharing (``_packed`` policies: ``scheduler/
    scheduler.py``, ``_schedule_jobs_on_workers_helper``): an allocation gives time to jobs
    alone and to pairs sharing the same s GPUs. Each round, per type (v100, p100, k80: Gavel
    does not shuffle them for a packing policy), the entries — each job alone and each pair
    of the allocation with time on that type — in order of priority (time x / time received
    since the last reset, a pair's its own), then deficit, then x, take s GPUs when none of
    their jobs runs yet this round and s fit. A pair runs both jobs, each at its co-located
    throughput, until both finished their round (Gavel runs each job of a pair for its own
    steps, the pair holding its GPUs until the later one ends); the pair's time received
    grows by the longer of the two (``_done_callback``). Gavel's reset updates a pair's
    deficit as a job's (``_reset_time_run_so_far``). Without pairs in the allocation in force
    the rounds are ``Rounds``'."""

    def __init__(self, c: Cluster, j: Jobs, policy: Policy, **settings):
        super().__init__(c, j, policy, **settings)
        self.policy = _Remembered(policy)
        self.pairs = np.zeros((0, 2), dtype=int)       # the allocation's pairs (trace indices)
        self.pair_x = np.zeros((0, len(c.types)))      # their time on each type
        self.pair_time = np.zeros((0, len(c.types)))   # received since the last reset
        self.pair_deficit: dict[tuple[int, int], np.ndarray] = {}
        self.running: list[tuple[int, int]] = []       # (pair, type) placed this round

    def plan(self, state: State) -> Plan:
        self.pending |= state.changed
        now, active = state.now, state.active
        if self.pending and (now - self.last_reset >= self.reset_s or self.last_reset == 0):
            self._reset(state)
        live = np.isin(self.pairs, active).all(axis=1) & (self.pair_x > 0).any(axis=1)
        self.running = []
        if not live.any():
            return super().plan(state)
        return self._packed_round(state, np.flatnonzero(live))

    def _packed_round(self, state: State, live: np.ndarray) -> Plan:
        """One round with the allocation's ``live`` pairs among the entries, played alone."""
        active = state.active
        where = np.full(self.j.steps.size, -1)
        where[active] = np.arange(active.size)
        k = len(self.c.types)
        rate = np.zeros(active.size)
        use = np.zeros((active.size, k))
        placed = np.full(active.size, -1)
        for kind, entry, type_ in self._entries(active, live):
            if kind == "alone":
                i = where[entry]
                placed[i] = type_
                rate[i] = self.j.throughput[entry, type_]
                use[i, type_] = self.j.scale[entry] / self.c.workers[type_]
            else:
                a, b = self.pairs[entry]
                ca, cb = self.j.pair_class[a], self.j.pair_class[b]
                rate[where[a]] = self.j.pair_table[ca, cb, type_]
                rate[where[b]] = self.j.pair_table[cb, ca, type_]
                use[[where[a], where[b]], type_] = 0.5 * self.j.scale[a] / self.c.workers[type_]
                self.running.append((entry, type_))
        self.placed[active] = placed
        on = rate > 0
        if not on.any():       # all wait for an allocation: the next reset it may make
            wake = self.last_reset + self.reset_s if self.pending else math.inf
            return Plan(rate, use, max(wake, state.now), held=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            runs = np.where(on, np.minimum(self.round_s, state.remaining[active] / rate), 0.0)
        return Plan(rate, use, state.now + float(runs.max()), held=True)

    def _entries(self, active: np.ndarray, live: np.ndarray) -> list[tuple[str, int, int]]:
        """This round's placements, Gavel's ``_schedule_jobs_on_workers_helper``: ("alone",
        job, type) and ("pair", index into ``pairs``, type). A job picked before its first
        allocation holds its GPUs idle for the round (as ``Rounds._place``)."""
        k = len(self.c.types)
        allocated = self.allocated[active]
        x = self.x[active] * allocated[:, None]
        t = self.j.throughput[active]
        alone = np.where((x > 0) & (t > 0), x / self.time[active], 0.0)
        runs = self._eligible(active)
        shared = self.pair_x[live] / self.pair_time[live]
        deficit = np.array([self.pair_deficit.get(tuple(q), np.zeros(k))
                            for q in self.pairs[live].tolist()]).reshape(-1, k)
        # each entry's jobs: a lone job and -1, or a pair's two
        jobs = np.concatenate([np.column_stack([active, np.full(active.size, -1)]),
                               self.pairs[live]])
        scale = self.j.scale[jobs[:, 0]]
        busy = np.zeros(self.j.steps.size + 1, dtype=bool)   # the last: a lone job's partner
        out = []
        for k_ in self.order:
            can = np.concatenate([runs[:, k_], self.pair_x[live, k_] > 0])
            keys = np.stack([-np.concatenate([x[:, k_], self.pair_x[live, k_]]),
                             -np.concatenate([self.deficit[active, k_], deficit[:, k_]]),
                             -np.concatenate([alone[:, k_], shared[:, k_]])])
            left = self.c.workers[k_]
            for e in np.flatnonzero(can)[np.lexsort(keys[:, can])]:
                if left <= 0:
                    break
                a, b = jobs[e]
                if busy[a] or busy[b] or scale[e] > left:
                    continue
                left -= scale[e]
                busy[a] = True
                busy[b] = b >= 0
                if e >= active.size:
                    out.append(("pair", int(live[e - active.size]), int(k_)))
                elif allocated[e]:
                    out.append(("alone", int(a), int(k_)))
        return out

    def ran(self, state: State, plan: Plan, seconds: np.ndarray) -> None:
        super().ran(state, plan, seconds)
        if not self.running:
            return
        where = np.full(self.j.steps.size, -1)
        where[state.active] = np.arange(state.active.size)
        for entry, type_ in self.running:
            members = where[self.pairs[entry]]
            self.pair_time[entry, type_] += float(seconds[members].max())

    def _reset(self, state: State) -> None:
        """Gavel's ``_reset_time_run_so_far`` over pairs too, then ``Rounds._reset`` (the
        jobs' own, and a new allocation); the new allocation's pairs start at round_s / 2 of
        time received, each keeping its deficit if it was in the last one (Gavel keeps a
        pair's until one of its jobs ends; here a pair out of the allocation drops it)."""
        elapsed = state.now - self.last_reset
        for q, pair in enumerate(self.pairs.tolist()):
            received = self.pair_time[q] - self.round_s / 2
            self.pair_deficit[tuple(pair)] = (self.pair_deficit.get(tuple(pair), 0.0)
                                              + self.pair_x[q] * elapsed - received)
        super()._reset(state)
        problem, solution = self.policy.last
        shared = shared_of(problem, solution.allocation)
        active = state.active
        if shared is None:
            a = b = np.zeros(0, dtype=int)
        else:
            a, b = np.nonzero(np.triu(shared.any(axis=2), 1))
        self.pairs = np.column_stack([active[a], active[b]]).astype(int)
        self.pair_x = shared[a, b] if shared is not None else np.zeros((0, len(self.c.types)))
        self.pair_time = np.full(self.pair_x.shape, self.round_s / 2)
        live = {tuple(q) for q in self.pairs.tolist()}
        self.pair_deficit = {q: d for q, d in self.pair_deficit.items() if q in live}


def rounds(c: Cluster, j: Jobs, policy: Policy, settings: dict) -> Rounds:
    """Gavel's ``rounds`` mechanism for ``policy`` (``settings``: round_s, reset_s, seed and
    stream: "gavel" orders the worker types as Gavel's simulator does for that seed)."""
    # a wrapper (fair-share) is placed as the method it runs
    name = getattr(policy.run, "base_of", lambda _: policy.name)(policy.options)
    mechanism = PackedRounds if name in PACKED else Rounds
    # Gavel shuffles the types each round only for a policy neither aware (Perf) nor packing
    # (``scheduler/scheduler.py`` lines 879-881): Gandiva's rounds visit them fastest first
    return mechanism(c, j, policy, round_s=settings.get("round_s", ROUND_S),
                  reset_s=settings.get("reset_s", RESET_S), aware=name in AWARE | PACKED,
                  queue=name in QUEUES, seed=settings.get("seed", 0),
                  stream=settings.get("stream", "numpy"))


rounds.check = check_rounds


# --- policies beyond the kind's methods --------------------------------------------------------

def _fifo(p: HeteroProblem, memory: dict, aware: bool) -> Solution:
    """First come, first served: jobs in arrival order each take whole workers of one type
    until none has room for the next job; a job keeps its type until it finishes (agnostic: a
    seeded random type among those with room it can run on, the queue stopping at a job that
    can run on none of them; aware: the fastest type with room, re-chosen for the whole queue
    at each change, and as Gavel's ``FIFOPolicy`` in its perf mode, ``scheduler/policies/
    fifo.py`` lines 132-163, a job that can run on none of the types with room is passed
    over, not waited for: with V100s and P100s full, a job that cannot run on K80s kept every
    job behind it off them, and the backlog grew past the knee, 46% above Gavel's own run at
    2.6 jobs/hour of figure 9)."""
    rng = memory.setdefault("rng", np.random.default_rng(memory.get("seed", 0) + 7))
    kept = memory.setdefault("type", {}) if not aware else {}
    left = p.workers.copy()
    x = np.zeros((p.n, p.k))
    ok = eligible(p)
    queue = []
    for i, job in enumerate(p.ids):
        if job in kept:
            x[i, kept[job]] = 1.0
            left[kept[job]] -= p.scale[i]
        else:
            queue.append(i)
    for i in queue:
        room = np.flatnonzero(left >= p.scale[i])
        if not room.size:
            break
        usable = room[ok[i, room]]
        if not usable.size:
            if aware:
                continue
            break
        k = usable[np.argmax(p.throughput[i, usable])] if aware else rng.choice(usable)
        x[i, k] = 1.0
        left[k] -= p.scale[i]
        if not aware:
            kept[p.ids[i]] = int(k)
    live = set(p.ids)
    for job in [j for j in kept if j not in live]:
        del kept[job]
    return Solution(p.allocation(x), "heuristic", smallest_level(p, x),
                    solver={"name": "FIFO" + (" (fastest type)" if aware else
                                              " (random type)")})


def kept_state(memory: dict, key: str, who: str, make: Callable[[], Any]
               ) -> tuple[Any, list[int]]:
    """A stateful replay policy's state, kept in the run's ``memory`` under ``key`` (made by
    ``make`` at its first call), and the active jobs' trace positions in the problem's order;
    a ValueError naming ``who`` outside a replay (no ``memory["active"]``)."""
    if "active" not in memory:
        raise ValueError(f"{who} keeps state across a replay (memory has no 'active')")
    if key not in memory:
        memory[key] = make()
    return memory[key], [int(i) for i in memory["active"]]


GAVEL_FIFO = "gavel_fifo"      # fifo's state in the run's memory


@dataclass
class GavelFifo:
    """Gavel's ``FIFOPolicy`` (mode base) between two allocations: its random generator
    (``self._rng``, seeded with the run's seed as ``utils.get_policy`` seeds it) and the type
    it allotted each job not yet seen finished (``self._allocation``), by trace position."""

    rng: random.Random
    allotted: dict[int, str] = field(default_factory=dict)


def gavel_fifo_types(state: GavelFifo, positions: list[int], scale: dict[int, float],
                     runs: dict[int, set[str]], workers: dict[str, float]) -> None:
    """One call of Gavel's ``FIFOPolicy.get_allocation`` in mode base
    (``scheduler/policies/fifo.py`` lines 74-176), on ``state``: the active jobs'
    ``positions`` (arrival order, as Gavel's job ids), their scale factors, the types each can
    run on, and the GPUs of each type.

    * A job keeps its type until it is seen finished (no longer active; lines 96-122, in
      arrival order): then the queue's head takes that type if its scale factor fits the free
      GPUs counted so far — only the jobs before it in arrival order are subtracted then —
      and it can run there (lines 106-115).
    * The rest of the queue, in arrival order, while a type has free GPUs (lines 132-163):
      the job is placed on ``worker_type``, the variable the loop at line 137 leaves on the
      last type with any free GPU in sorted name order, which may hold fewer than its scale
      factor (free counts go below 0: a type is over-committed), once some type has room for
      it (else the loop ends, line 141). The random draw (line 144) picks an index among the
      types with room and is used only when the placed type's free GPUs reach exactly 0:
      then the type at that index is dropped from the list (lines 160-163), which may be
      another type, still free. A job that cannot run on the type is skipped (line 157),
      its draw made."""
    free = dict(workers)
    active = set(positions)
    queue = deque(job for job in positions if job not in state.allotted)
    for job in sorted(state.allotted):
        worker_type = state.allotted[job]
        if job in active:
            free[worker_type] -= scale[job]
            continue
        if queue and scale[queue[0]] <= free[worker_type] and worker_type in runs[queue[0]]:
            head = queue.popleft()
            state.allotted[head] = worker_type
            free[worker_type] -= scale[head]
        del state.allotted[job]
    listed = sorted(t for t in free if free[t] > 0)
    while queue and listed:
        job = queue.popleft()
        room = [i for i, t in enumerate(listed) if free[t] >= scale[job]]
        if not room:
            break
        drawn = state.rng.randrange(len(room))
        worker_type = listed[-1]
        if worker_type in runs[job]:
            state.allotted[job] = worker_type
            free[worker_type] -= scale[job]
            if free[worker_type] == 0:
                listed.pop(room[drawn])


def fifo(p: HeteroProblem, memory: dict) -> Solution:
    """FIFO as Gavel's simulator runs it (``fifo``: ``FIFOPolicy`` in mode base,
    ``scheduler/policies/fifo.py``), keeping its state across the run's allocations
    (:func:`gavel_fifo_types`): each job allotted one type, kept until it finishes. Gavel
    gives each time 1 there (line 174), so a type allotted to more jobs than it has GPUs for
    is over-committed and its rounds run them in turns by priority. The allocation here is
    what they share: time 1, or on an over-committed type W_k / sum of its jobs' scale
    factors each (the limit of the turns, what ``ideal`` applies); ``rounds`` takes each
    allotted type whole, as Gavel does. Where Gavel would place a job on a type with fewer
    GPUs than its scale factor (where it could never run), it is skipped as on a type it has
    no throughput on. ``fifo-random`` is the random type Gavel meant to draw."""
    state, positions = kept_state(memory, GAVEL_FIFO, "fifo",
                                  lambda: GavelFifo(random.Random(memory.get("seed", 0))))
    ok = eligible(p)
    scale = dict(zip(positions, p.scale.tolist()))
    runs = {job: {p.types[k] for k in np.flatnonzero(ok[i])}
            for i, job in enumerate(positions)}
    gavel_fifo_types(state, positions, scale, runs, dict(zip(p.types, p.workers.tolist())))
    x = np.zeros((p.n, p.k))
    for i, job in enumerate(positions):
        if job in state.allotted:
            x[i, p.types.index(state.allotted[job])] = 1.0
    demand = p.scale @ x
    x *= np.minimum(1.0, np.divide(p.workers, demand, out=np.ones(p.k), where=demand > 0))
    return Solution(p.allocation(x), "heuristic", smallest_level(p, x),
                    solver={"name": "FIFO as Gavel's simulator runs it (FIFOPolicy, mode base)"})


def fifo_random(p: HeteroProblem, memory: dict) -> Solution:
    """FIFO agnostic of heterogeneity with the random type Gavel's ``FIFOPolicy`` draws
    (``scheduler/policies/fifo.py`` line 144) and does not use: each job a seeded random type
    with room."""
    return _fifo(p, memory, aware=False)


def fifo_aware(p: HeteroProblem, memory: dict) -> Solution:
    """FIFO aware of heterogeneity (Gavel's ``fifo_perf``): each job the fastest type with
    room."""
    return _fifo(p, memory, aware=True)


PACKING_THRESHOLD = 1.5     # Gavel's FIFO packs a pair making more than 1.5x alone, summed


def fifo_packed(p: HeteroProblem, memory: dict) -> Solution:
    """FIFO aware of heterogeneity with space sharing (Gavel's ``fifo_packed``:
    ``FIFOPolicy`` in mode packing, ``scheduler/policies/fifo.py``): ``fifo-aware``'s
    allocation (re-made at each change, as Gavel's packing mode resets it, lines 82-84), then
    ``_pack`` (lines 23-71): the job at the head of the queue joins the job already placed
    alone, of its scale factor, with which the pair's normalised throughput on that job's
    type, the sum over the two of co-located over alone, is largest and above
    ``PACKING_THRESHOLD``; the pair takes that job's place. The first job that packs with none
    stops it (no job jumps the queue)."""
    x = time_of(p, fifo_aware(p, memory).allocation)
    c = colocated(p)
    shared = np.zeros((p.n, p.n, p.k))
    alone = [int(i) for i in np.flatnonzero(x.any(axis=1))]   # in the order they were placed
    for head in np.flatnonzero(~x.any(axis=1)):
        best, partner = PACKING_THRESHOLD, None
        for i in alone:
            k = int(np.argmax(x[i]))
            together = pair_gain(p, i, head)[k]
            if c[i, head, k] > 0 and together > best:
                best, partner = together, i
        if partner is None:
            break
        k = int(np.argmax(x[partner]))
        x[partner, k] = 0.0
        shared[partner, head, k] = shared[head, partner, k] = 1.0
        alone.remove(partner)
    shared = shared if shared.any() else None
    return Solution(p.allocation(x, shared), "heuristic", smallest_level(p, x, shared),
                    solver={"name": "FIFO (fastest type), then pairs "
                                                  "that gain 1.5x (Gavel's packing)"})


GANDIVA = "gandiva"        # gandiva's state in the run's memory


@dataclass
class GandivaPairs:
    """Gavel's ``GandivaPolicy`` between two allocations: its random generator (``self._rng``,
    seeded with the run's seed as ``utils.get_policy`` seeds it) and the pairs it assigned
    (``self._assigned_combinations``): each paired job's partner, by trace position."""

    rng: random.Random
    partner: dict[int, int] = field(default_factory=dict)


def gandiva_pairs(state: GandivaPairs, positions: list[int], scale: dict[int, float],
                  keeps: Callable[[int, int], bool], pack: bool) -> None:
    """One call of ``GandivaPolicy.get_allocation``'s pairing (``scheduler/policies/
    gandiva.py`` lines 70-131) on ``state``, for the active jobs' ``positions`` (arrival
    order, as Gavel's job ids) and their scale factors:

    * a pair is dropped when one of its jobs is no longer active or ``keeps(a, b)`` is false
      (lines 73-93; Gavel keeps a pair whose normalised throughput is at least 1);
    * with ``pack`` (the active jobs ask for more GPUs than the cluster has, lines 95-102),
      the jobs in no pair, in arrival order, are paired at random (lines 108-124): as many
      draws as there are such jobs, each of two of those still unpaired (``random.sample``),
      a draw of two scale factors spent without a pair. Without it the pairs are kept, unused.
    """
    active = set(positions)
    for job, other in list(state.partner.items()):
        if job in state.partner and (other not in active or job not in active
                                     or not keeps(job, other)):
            del state.partner[job], state.partner[other]
    if not pack:
        return
    pool = [job for job in positions if job not in state.partner]
    for _ in range(len(pool)):
        if len(pool) < 2:
            break
        a, b = state.rng.sample(pool, 2)
        if scale[a] != scale[b]:
            continue
        pool.remove(a)
        pool.remove(b)
        state.partner[a], state.partner[b] = b, a


def pair_normalised(p: HeteroProblem, i: int, j: int) -> float:
    """Gandiva's worth of jobs i and j sharing GPUs (``_get_normalized_throughput``,
    ``scheduler/policies/gandiva.py`` lines 47-60): the sum over the types both can run on of
    each one's co-located throughput over its throughput alone; 0 when they cannot share on
    one of those types."""
    c = colocated(p)
    both = eligible(p)[i] & eligible(p)[j]
    if not (c[i, j, both] > 0).all() or not (c[j, i, both] > 0).all():
        return 0.0
    return float(pair_gain(p, i, j)[both].sum())


def pair_gain(p: HeteroProblem, i: int, j: int) -> np.ndarray:
    """(k,): Gavel's normalised throughput of jobs i and j sharing GPUs of each type, the sum
    over the two of its co-located throughput over its throughput alone (``fifo.py``
    ``_pack`` and ``gandiva.py`` ``_get_normalized_throughput`` both weigh a pair so); inf or
    NaN on a type one of them cannot run on."""
    c = colocated(p)
    with np.errstate(divide="ignore", invalid="ignore"):
        return c[i, j] / p.throughput[i] + c[j, i] / p.throughput[j]


def gandiva(p: HeteroProblem, memory: dict) -> Solution:
    """Gavel's Gandiva ("LAS w/ Gandiva SS" in its figures; ``GandivaPolicy``,
    ``scheduler/policies/gandiva.py``), its pairs kept across the run's allocations
    (:func:`gandiva_pairs`, Gavel's random generator seeded with the run's seed). While the
    active jobs ask for no more GPUs than the cluster has, each job holds its share alone;
    past that, random pairs of jobs of one scale factor share GPUs (a pair is kept until one
    of its jobs ends or its normalised throughput, :func:`pair_normalised`, is below 1, so a
    pair that cannot share on some type lasts one allocation) and the rest hold theirs alone.
    Each of those m holders gets an equal share of every type, x_ck = W_k / (m s_c), scaled
    down to a total of 1 (``_get_allocation``, lines 19-45; ``isolated_share`` among m):
    agnostic of heterogeneity and of how fast a pair runs. A pair's time on a type where it
    cannot share and a job's where it cannot run are left out: Gavel's rounds never place
    them there (``scheduler/scheduler.py`` line 821), so the jobs of such a pair (every pair
    of multi-GPU jobs in Gavel's table) run only on GPUs left over, at priority 0, until the
    next allocation. A replay policy: its pairs are drawn and kept over time."""
    state, active = kept_state(memory, GANDIVA, "gandiva",
                               lambda: GandivaPairs(random.Random(memory.get("seed", 0))))
    positions = sorted(active)
    index = {job: i for i, job in enumerate(active)}
    scale = {job: float(p.scale[index[job]]) for job in positions}
    gandiva_pairs(state, positions, scale,
                  lambda a, b: pair_normalised(p, index[a], index[b]) >= 1.0,
                  pack=float(p.scale.sum()) > float(p.workers.sum()))
    pairs = [(index[a], index[b]) for a, b in state.partner.items() if a < b]
    alone = np.ones(p.n, dtype=bool)
    for i, j in pairs:
        alone[[i, j]] = False
    share = isolated_share(p, among=int(alone.sum()) + len(pairs))
    x = np.where(alone[:, None], share, 0.0)
    shared = np.zeros((p.n, p.n, p.k))
    c = colocated(p)
    for i, j in pairs:
        shared[i, j] = shared[j, i] = np.where((c[i, j] > 0) & (c[j, i] > 0), share[i], 0.0)
    shared = shared if shared.any() else None
    return Solution(p.allocation(x, shared), "heuristic", smallest_level(p, x, shared),
                    solver={"name": "Gandiva (Gavel's): equal shares, random pairs kept"})


def min_total_duration(p: HeteroProblem) -> Solution:
    """Minimise the makespan of the active jobs (Gavel's ``min_total_duration_perf``): the
    smallest T such that every job can finish its remaining steps by T, E_j(x) >= S_j / T.
    With z = 1/T it is one LP, max z s.t. E_j >= z S_j (``max_min_lp`` with reference S_j),
    where Gavel bisects on T. Each job's row is counted in units of its isolated throughput
    and the references (its steps at that rate, in seconds) in units of the longest, so the LP
    sees the same O(1) numbers whatever the unit of steps."""
    program = isolated_program(p)
    needs = p.steps / isolated_throughput(p)       # s: each job alone at its isolated share
    longest = float(needs.max())
    z, v, _ = max_min_value(p, program, needs / longest)
    x = program.to_time(v, p.k)
    makespan = longest / z if z > 0 else math.inf
    return Solution(p.allocation(x), "optimal", smallest_level(p, x),
                    metrics={"makespan_s": makespan},
                    solver={"name": "HiGHS LP (max z: E_j >= z S_j)", "makespan_s": makespan})


ISOLATED_PROGRESS = "isolated_progress"     # the finish-time policies' state in the memory


@dataclass
class IsolatedProgress:
    """Gavel's finish-time fairness policies between two calls (``FinishTimeFairnessPolicy
    WithPerf``, ``scheduler/policies/finish_time_fairness.py`` lines 49-51): each job's
    cumulative isolated time (s), and the previous call's steps remaining and isolated
    throughputs, by trace position."""

    cumulative: dict[int, float] = field(default_factory=dict)
    steps: dict[int, float] = field(default_factory=dict)
    throughput: dict[int, float] = field(default_factory=dict)

    def advance(self, positions: list[int], steps: np.ndarray, throughput: np.ndarray
                ) -> np.ndarray:
        """One call (lines 81-88, 111-115): each active job's cumulative isolated time, to
        which the steps it did since the previous call add their time at that call's isolated
        throughput (0 for a job new since then); then this call's steps and isolated
        throughputs kept for the next. Returns the active jobs' cumulative times. A job no
        longer active is forgotten (Gavel keeps it, and never reads it again)."""
        cumulative = {}
        for job, left in zip(positions, steps.tolist()):
            cumulative[job] = self.cumulative.get(job, 0.0)
            if self.throughput.get(job, 0.0) > 0:      # 0: the job could run nowhere
                cumulative[job] += (self.steps[job] - left) / self.throughput[job]
        self.cumulative = cumulative
        self.steps = dict(zip(positions, steps.tolist()))
        self.throughput = dict(zip(positions, throughput.tolist()))
        return np.array([cumulative[job] for job in positions], dtype=float)


def with_isolated_time(p: HeteroProblem, memory: dict, throughput: np.ndarray
                       ) -> HeteroProblem:
    """The problem with Gavel's cumulative isolated time (``IsolatedProgress``, kept in the
    run's ``memory``) as each job's ``isolated_time``, counted at ``throughput`` (the policy's
    own E_j^iso)."""
    state, positions = kept_state(memory, ISOLATED_PROGRESS, "a finish-time policy",
                                  IsolatedProgress)
    return replace(p, isolated_time=state.advance(positions, p.steps, throughput))


def finish_time(p: HeteroProblem, memory: dict, tolerance: float = FINISH_TOLERANCE,
                point: str = "efficient") -> Solution:
    """``finish-time`` in a replay, as Gavel's ``finish_time_fairness_perf``: the method on
    ratios whose denominator is Gavel's, I_j + S_j / E_j^iso with I_j the job's cumulative
    isolated time (``with_isolated_time``; ``scheduler/policies/finish_time_fairness.py``
    lines 81-95), not its time elapsed; ``point`` as the method's."""
    return solvers.finish_time(with_isolated_time(p, memory, isolated_throughput(p)),
                               tolerance, point)


def agnostic_finish_time(p: HeteroProblem, memory: dict, reference_type: str | None = None,
                         point: str = "efficient") -> Solution:
    """``agnostic-finish-time`` in a replay, as Gavel's ``finish_time_fairness``: its
    denominator Gavel's (as ``finish_time``), the cumulative isolated time counted at the
    isolated throughput with every type as fast (``agnostic_isolated_throughput``, what
    Gavel's policy hands its inner one, lines 27-40); ``point`` as the method's."""
    iso = solvers.agnostic_isolated_throughput(p, reference_type)
    return solvers.agnostic_finish_time(with_isolated_time(p, memory, iso), reference_type,
                                        point)


POLICIES = {"fifo": fifo, "fifo-random": fifo_random, "fifo-aware": fifo_aware,
            "fifo-packed": fifo_packed, "gandiva": gandiva,
            "min-total-duration": min_total_duration,
            # the kind's methods with the state Gavel's keep between calls
            "finish-time": finish_time, "agnostic-finish-time": agnostic_finish_time}
# the policies that use the jobs' speed per type (Gavel's *_perf): placed fastest type first
AWARE = frozenset({"max-min", "max-min-isolated", "leximin", "max-throughput", "finish-time",
                   "fifo-aware", "min-total-duration", "max-min-packed", "fifo-packed"})
# the policies whose allocations give two jobs one GPU (Gavel's *_packed): ``PackedRounds``
PACKED = frozenset({"max-min-packed", "fifo-packed", "gandiva"})
QUEUES = frozenset({"fifo", "fifo-random", "fifo-aware", "fifo-packed"})
# the options under which a method is Gavel's policy of its name: Gavel's agnostic
# finish_time_fairness takes every type at the job's V100 throughput
GAVEL_OPTIONS = {"agnostic-finish-time": {"reference_type": REFERENCE_TYPE}}


# Gavel's figure 8 (continuous single-GPU jobs): its cluster and the window of jobs averaged;
# the values it printed are in tests/paper/gavel_figure8.py
FIGURE_8_CLUSTER = {"v100": 36, "p100": 36, "k80": 36}
FIGURE_8_WINDOW = (4000, 5000)


def figure_8_document(policy: str, rate: float, seed: int = 0, jobs: int = 14_000,
                      stream: str = "gavel") -> dict:
    """The replay of one point of Gavel's figure 8: Gavel's jobs for ``seed`` (its own
    stream by default), its cluster and rounds, the average JCT of jobs 4000-5000. ``jobs``
    outlasting the window (LAS at 5.6 jobs/hour finishes job 4999 after ~11,900 arrivals)
    saves the replay made longer when the window ends after the last arrival; the replay
    stops when the window is done."""
    return {"replay": f"gavel-figure-8-{policy}-{rate:g}", "kind": "hetero",
            "cluster": {"workers": dict(FIGURE_8_CLUSTER)},
            "trace": {"generator": "gavel", "seed": seed, "jobs": jobs, "rate": rate,
                      "stream": stream},
            "policy": {"method": policy, **GAVEL_OPTIONS.get(policy, {})},
            "mechanism": {"name": "rounds", "round_s": ROUND_S, "reset_s": RESET_S,
                          "seed": seed, "stream": stream},
            "measure": {"window": list(FIGURE_8_WINDOW), "finish_time_fairness": False}}

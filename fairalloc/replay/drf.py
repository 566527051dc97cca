"""The drf kind's replay parts: DRF online.

Jobs arrive, each with a demand vector per task (``demand.<resource>`` columns), a number of
tasks it wants (``max_tasks``), a duration (``duration``: seconds at full parallelism, all its
tasks running), a tenant (``tenant``, optional) and a weight (``weight``, default 1). The cluster
is drf's capacity (``{"capacity": {...}, "divisible": true, "saturation": "continue"}``, as a
drf spec has them); at each re-allocation the policy is a drf method over the jobs present
(``progressive-filling``, ``lp``), each job a DRF user capped at its ``max_tasks``, with whole
tasks or divisible ones as the cluster's ``divisible`` says.

Progress rate: a job holding ``x`` of its ``max_tasks`` tasks progresses at ``x / max_tasks``
seconds of its duration per second, so it ends after ``duration`` seconds when it holds every
task throughout. This simplifies: speed-up is linear in the tasks held (no stragglers, no
per-task durations, no start-up cost), tasks move freely between jobs at every change (no
preemption cost, no placement on machines: the cluster is one pool per resource), and a job
never runs more tasks than it wants.

Finish-time fairness: the ``isolated`` policy gives each job 1/n of every resource (n the jobs
present, Themis's isolated share); the replay measures rho against a replay of it
(``fairalloc.replay.measures``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.errors import Violations
from fairalloc.models.drf import SMALLEST_DEMAND, DrfProblem
from fairalloc.models.leontief import (
    LARGEST_CAPACITY,
    LARGEST_WEIGHT,
    SMALLEST_CAPACITY,
    SMALLEST_WEIGHT,
    Leontief,
)
from fairalloc.replay import fairshare
from fairalloc.replay.tables import Column, read_trace
from fairalloc.replay.trace import Trace
from fairalloc.result import Solution

SATURATION = ("continue", "stop")
CLUSTER_KEYS = ("capacity", "divisible", "saturation")
DEMAND = "demand."               # the trace's columns of per-task demand: demand.<resource>
FIT = 1 + 1e-12                  # relative slack: a task that fits exactly fits
LARGEST_TASKS = round(1 / SMALLEST_DEMAND)    # no more tasks fit a resource (the spec floor)

# the generator's jobs (documented in ``generate``)
GENERATED = ("cpu", "mem", "gpu")
CORES = (1, 2, 4, 8)
GB_PER_CORE = (0.0, 3.0)         # mem = cores x 2^U(0, 3) GB
GPU_SHARE = 0.5
TASKS = (1, 2, 4, 8, 16)
DURATION = (2.0, 4.0)            # 10^U(2, 4) s
TENANTS = 4


@dataclass(frozen=True)
class Cluster:
    """Resources and their capacities, whole tasks or divisible, and DRF's stopping rule."""

    resources: tuple[str, ...]
    capacity: np.ndarray
    divisible: bool = True
    saturation: str = "continue"


@dataclass(frozen=True, eq=False)
class Jobs:
    """Per job of a trace (trace order): its demand per task, tasks wanted, duration (s at
    full parallelism) and weight."""

    ids: np.ndarray              # (n,) object: the trace's ids
    demand: np.ndarray           # (n, r)
    tasks: np.ndarray            # (n,)
    duration: np.ndarray         # (n,)
    weights: np.ndarray          # (n,)


def cluster(data: dict, found: Violations) -> Cluster | None:
    """The document's ``cluster``: ``{"capacity": {resource: amount}, "divisible": bool,
    "saturation": "continue" | "stop"}`` (drf's keys and defaults)."""
    if not isinstance(data, dict):
        found.add("cluster", "give the capacity of each resource, e.g. "
                  '{"capacity": {"cpu": 64, "mem": 512, "gpu": 8}}')
        return None
    for key in data:
        if key not in CLUSTER_KEYS:
            found.add(["cluster", key], f"a drf cluster has only {', '.join(CLUSTER_KEYS)}")
    capacity = data.get("capacity")
    if not isinstance(capacity, dict) or not capacity:
        found.add("cluster.capacity", "give the capacity of each resource, e.g. "
                  '{"cpu": 64, "mem": 512, "gpu": 8}')
        return None
    for name, amount in capacity.items():
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or \
                not SMALLEST_CAPACITY <= amount <= LARGEST_CAPACITY:
            found.add(["cluster", "capacity", name], f"a capacity is a number from "
                      f"{SMALLEST_CAPACITY:g} to {LARGEST_CAPACITY:g}")
    divisible = data.get("divisible", True)
    if not isinstance(divisible, bool):
        found.add("cluster.divisible", "true (tasks divisible) or false (whole tasks)")
    saturation = data.get("saturation", "continue")
    if saturation not in SATURATION:
        found.add("cluster.saturation", f"one of {', '.join(SATURATION)}")
    if found:
        return None
    return Cluster(tuple(capacity), np.array(list(capacity.values()), dtype=float),
                   divisible, saturation)


def resources(c: Cluster) -> tuple[str, ...]:
    """Utilisation is measured per resource."""
    return c.resources


def columns() -> dict[str, Column]:
    """The columns a drf trace may list and their rules: a demand per task of each resource
    (``demand.<resource>``, within a capacity's range), the tasks wanted, the duration (s)
    and the weight (the drf spec's range)."""
    return {DEMAND: Column(float, at_least=0.0, at_most=LARGEST_CAPACITY),
            "max_tasks": Column(float, at_least=1.0, at_most=LARGEST_TASKS),
            "duration": Column(float),
            "weight": Column(float, at_least=SMALLEST_WEIGHT, at_most=LARGEST_WEIGHT)}


def read_drf_trace(path: str, *, mapping: Mapping[str, str] | None = None) -> Trace:
    """A drf trace from a table (CSV, TSV or Parquet) with the columns a listed trace has
    (``columns``: ``demand.<resource>``, ``max_tasks``, ``duration``, ``weight``), ``arrival``,
    and optionally ``id`` and ``tenant``; ``mapping``: trace column -> table column for
    others (``{"demand.cpu": "cores"}``). Bad cells are a ``SpecError`` naming each one's
    line and column; ``jobs`` says which columns the jobs need, as of a listed trace."""
    return read_trace(path, mapping=mapping, columns=columns(), needed=())


def jobs(c: Cluster, trace: Trace, found: Violations) -> Jobs | None:
    """The jobs' arrays from the trace's columns: ``demand.<resource>`` (0 where a resource is
    not given), ``max_tasks`` (default 1), ``duration`` and ``weight`` (default 1). A job
    whose one task does not fit the cluster runs nowhere and is refused, naming its id."""
    cols, n, ids = trace.columns, trace.n, trace.ids
    given = [k[len(DEMAND):] for k in cols if k.startswith(DEMAND)]
    if not given:
        found.add("trace", "each job needs its demand per task (demand.<resource> columns, "
                  f"resources: {', '.join(c.resources)})")
    if "duration" not in cols:
        found.add("trace", "each job needs its duration (s at full parallelism)")
    if found:
        return None
    demand = np.zeros((n, len(c.resources)))
    for name in given:
        column = _numbers(cols[DEMAND + name])
        if name in c.resources:
            demand[:, c.resources.index(name)] = column
        elif (column != 0).any():
            i = int(np.flatnonzero(column != 0)[0])
            found.add(["trace", "jobs", ids[i], "demand", name],
                      f"no resource {name!r} in the cluster (resources: "
                      f"{', '.join(c.resources)})")
    tasks = _numbers(cols.get("max_tasks", np.ones(n)))
    duration = _numbers(cols["duration"])
    weights = _numbers(cols.get("weight", np.ones(n)))
    _refuse(c, ids, demand, tasks, duration, weights, found)
    if found:
        return None
    return Jobs(np.asarray(ids, dtype=object), demand, tasks, duration, weights)


def _numbers(values) -> np.ndarray:
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return np.full(len(values), np.nan)


def _refuse(c: Cluster, ids, demand: np.ndarray, tasks: np.ndarray, duration: np.ndarray,
            weights: np.ndarray, found: Violations) -> None:
    """A violation for the first job breaking each rule, naming its id."""
    rules = [
        (~(np.isfinite(demand) & (demand >= 0)).all(axis=1), "demand",
         "a demand per task is a number >= 0"),
        (~(demand > 0).any(axis=1), "demand", "a job needs a positive amount of some resource"),
        ((demand > c.capacity * FIT).any(axis=1), "demand",
         "one task needs more than the cluster's capacity: the job can run nowhere"),
        (((demand > 0) & (demand < SMALLEST_DEMAND * c.capacity)).any(axis=1), "demand",
         f"a positive demand is at least {SMALLEST_DEMAND:g} of the capacity (more tasks "
         "than that are beyond the solvers' precision)"),
        (~(tasks >= 1) | ~np.isfinite(tasks), "max_tasks", "a number of tasks >= 1"),
        (np.logical_and(not c.divisible, tasks != np.floor(tasks)), "max_tasks",
         "a whole number of tasks when the cluster's tasks are not divisible"),
        (~(duration > 0) | ~np.isfinite(duration), "duration", "a duration in seconds > 0"),
        (~(weights > 0) | ~np.isfinite(weights), "weight", "a weight > 0"),
    ]
    for bad, key, rule in rules:
        if bad.any():
            found.add(["trace", "jobs", ids[int(np.flatnonzero(bad)[0])], key], rule)


def work(j: Jobs) -> np.ndarray:
    """A job's total work: its duration at full parallelism (s)."""
    return j.duration


@np.errstate(over="ignore")      # a share past a double's range is infinite
def least(c: Cluster, j: Jobs) -> tuple[np.ndarray, np.ndarray]:
    """Each job's least time, its duration with every task it wants, holding its dominant
    share of the capacity (fewer tasks take as much longer as they hold less)."""
    return j.duration, (j.tasks[:, None] * j.demand / c.capacity[None, :]).max(axis=1)


def problem(c: Cluster, j: Jobs, active: np.ndarray, remaining: np.ndarray,
            elapsed: np.ndarray) -> DrfProblem:
    """The DRF problem over the active jobs, each a user capped at the tasks it wants, built
    from the arrays (what remains and elapsed do not change a DRF allocation)."""
    market = Leontief(ids=tuple(j.ids[active]), resources=c.resources, capacity=c.capacity,
                      demand=j.demand[active], weights=j.weights[active],
                      caps=j.tasks[active], integral=not c.divisible, unit_key="tasks",
                      bundle_key="resources")
    return DrfProblem(market=market, saturation=c.saturation)


def rates(p: DrfProblem, allocation: Allocation) -> np.ndarray:
    """Seconds of duration per second: tasks held over tasks wanted."""
    m = p.market
    return m.units(allocation) / m.caps


def usage(p: DrfProblem, allocation: Allocation) -> np.ndarray:
    """(jobs, resources): the share of each resource a job holds."""
    m = p.market
    return m.bundles(allocation) / m.capacity[None, :]


# --- the generator ------------------------------------------------------------------------------

def generate(seed: int, jobs: int, rate: float | None = None, tenants: int = TENANTS) -> Trace:
    """Seeded jobs on resources ``cpu``, ``mem`` (GB) and ``gpu``: arrivals Poisson at
    ``rate`` jobs/hour (the first at 0; None: all at 0); per task 1, 2, 4 or 8 cores (uniform),
    cores x 2^U(0, 3) GB of memory (1 to 8 GB a core) and, for half the jobs (uniform), one GPU;
    1, 2, 4, 8 or 16 tasks (uniform); a duration log-uniform over 10^U(2, 4) s (100 s to 2.8 h);
    a tenant uniform over ``tenants`` (t0, t1, ...). The same seed gives the same trace."""
    rng = np.random.default_rng(seed)
    cores = rng.choice(CORES, jobs).astype(float)
    mem = cores * 2.0 ** rng.uniform(*GB_PER_CORE, jobs)
    gpu = (rng.random(jobs) < GPU_SHARE).astype(float)
    tasks = rng.choice(TASKS, jobs).astype(float)
    duration = 10.0 ** rng.uniform(*DURATION, jobs)
    tenant = np.array([f"t{k}" for k in rng.integers(0, max(tenants, 1), jobs)], dtype=object)
    if rate is None:
        arrival = np.zeros(jobs)
    else:
        gaps = rng.exponential(3600.0 / rate, jobs)
        arrival = np.concatenate([[0.0], np.cumsum(gaps[:-1])]) if jobs else np.zeros(0)
    width = len(str(max(jobs - 1, 0)))
    return Trace([f"j{i:0{width}d}" for i in range(jobs)], arrival,
                 {"demand.cpu": cores, "demand.mem": mem, "demand.gpu": gpu,
                  "max_tasks": tasks, "duration": duration, "tenant": tenant},
                 source=f"drf-poisson(seed={seed}, jobs={jobs}, rate={rate}, "
                        f"tenants={tenants})")


def poisson(seed: int, jobs: int, rate: float, tenants: int = TENANTS) -> Trace:
    """Jobs arriving as a Poisson process at ``rate`` jobs/hour (``generate``)."""
    return generate(seed, jobs, rate, tenants)


def static(seed: int, jobs: int, tenants: int = TENANTS) -> Trace:
    """The same jobs, all arriving at time 0."""
    return generate(seed, jobs, None, tenants)


# --- policies beyond the kind's methods --------------------------------------------------------

def _solution(p: DrfProblem, x: np.ndarray, name: str) -> Solution:
    return Solution(p.allocation(x), "heuristic", float(p.market.weighted_levels(x).min()),
                    solver={"name": name})


def fifo(p: DrfProblem) -> Solution:
    """First come, first served: jobs in arrival order take whole tasks (up to the tasks they
    want) until a task does not fit; the jobs after that one get nothing (none jumps the
    queue)."""
    m = p.market
    left = m.capacity * FIT
    x = np.zeros(m.n)
    for i in range(m.n):
        need = m.demand[i]
        with np.errstate(divide="ignore"):
            fit = float(np.floor(np.min(np.where(need > 0, left / need, np.inf))))
        x[i] = max(min(m.caps[i], fit), 0.0)
        left = left - x[i] * need
        if x[i] < m.caps[i]:
            break
    return _solution(p, x, "FIFO (whole tasks, arrival order)")


def isolated(p: DrfProblem) -> Solution:
    """The isolated share: 1/n of every resource for each of the n jobs present (Themis's
    reference for finish-time fairness), as many tasks as that bundle runs: whole tasks when
    the cluster's are not divisible, but a job whose bundle runs less than one whole task
    time-shares one, holding it that fraction of the time (its tasks are then fractional), so
    that every job has a reference even when jobs outnumber the tasks that fit."""
    m = p.market
    everyone = np.arange(m.n)
    bundles = np.tile(m.capacity / m.n, (m.n, 1))
    tasks = m.worth(everyone, bundles)
    if m.integral:
        part = replace(m, integral=False).worth(everyone, bundles)
        tasks = np.where(tasks < 1, part, tasks)
    return _solution(p, tasks, "isolated share (1/n of each)")


def reweighted(p: DrfProblem, weights: np.ndarray) -> DrfProblem:
    """The same jobs with other weights."""
    return replace(p, market=replace(p.market, weights=weights))


WEIGHTS = fairshare.Weights(lambda p: p.market.weights, reweighted)


def policies(methods: dict) -> dict:
    """The replay policies beyond the kind's methods: FIFO, the isolated share and the
    decayed-usage fair share over any of ``methods``."""
    return {"fifo": fifo, "isolated": isolated,
            "fair-share": fairshare.policy(WEIGHTS, usage, methods, "progressive-filling")}

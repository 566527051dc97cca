"""Heterogeneity-aware sharing of GPU types (Narayanan et al., Gavel, OSDI 2020).

Job j gets a fraction x_jk of time on worker type k: sum_k x_jk <= 1 (a job runs on one type at
a time) and sum_j s_j x_jk <= W_k (s_j: its scale factor, W_k: GPUs of type k). Its effective
throughput is E_j(x) = sum_k T_jk x_jk, with T_jk its steps/s alone on s_j GPUs of type k. The
reference is E_j under the *isolated share*: each job 1/n of every type it can run on,
x_jk = W_k / (n s_j), its row scaled down to sum to at most 1.

Two jobs on one V100 and one K80; R gains 8x from the V100, L only 1.2x:

>>> p = HeteroProblem.from_spec({"workers": {"k80": 1, "v100": 1}, "jobs": [
...     {"id": "R", "throughput": {"k80": 10, "v100": 80}},
...     {"id": "L", "throughput": {"k80": 10, "v100": 12}}]}, Violations())
>>> isolated_share(p).tolist()
[[0.5, 0.5], [0.5, 0.5]]
>>> isolated_throughput(p).tolist()
[45.0, 11.0]

Every LP here is built on the allocations' polytope (``Program``) with sparse rows whose size
grows with jobs x types, never with the number of GPUs.
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
from dataclasses import dataclass, replace
from importlib import resources

import numpy as np

from fairalloc import startup
from fairalloc.allocation import Allocation, Key, read_allocation
from fairalloc.errors import Violations
from fairalloc.models.program import SparseRows
from fairalloc.preconditions import check_at_least, check_unique_ids

SMALLEST_WEIGHT = 1e-6
# of the job's best throughput: a type below it is as good as unusable (it adds less than
# this to the job's throughput, and the LPs, which count each job's throughput in its own
# unit, would see a coefficient HiGHS drops). Relative, not in steps/s: a floor in steps/s
# would make a type usable or not with the unit of steps (Gavel's 0.35 steps/s is 3.5e-10
# in units of 1e9 steps), and every answer must be the same in any unit
SMALLEST_THROUGHPUT = 1e-9
# the largest weight, throughput (steps/s) and GPUs of a type the LPs represent (HiGHS scales
# them; a throughput of 1e308 makes its LP empty or unbounded): the schema's maxima
LARGEST_WEIGHT = 1e6
LARGEST_THROUGHPUT = 1e12
LARGEST_WORKERS = 1_000_000
INTERIOR_FROM = 2_000         # LP columns from which the interior point method wins (benchmarks)

# The kind's tolerances: its solvers and checks import them from here.
# relative to the quantity compared (a time fraction's whole, 1; a throughput; a level): what
# the checks accept as equal (the LPs meet their rows, in shares, to HiGHS's 1e-7)
RTOL = 1e-7
PARETO_GAIN = 1e-6             # of a job's throughput: a gain above it refutes efficiency
PARETO_LOSS = 1e-9             # of a job's throughput: a witness's job may lose this (floats)
# of the LP's max-min level: a smallest level below it by more than this (and TIE) refutes
# max-min, as a gain above PARETO_GAIN refutes efficiency
MAX_MIN_SHORTFALL = 1e-6
# relative (time fractions: of the whole time, 1; finish-time ratios: of the ratio): two values
# this close are one; a time fraction below it is none (LP noise)
TIE = 1e-12
DUAL_TOLERANCE = 1e-9    # absolute, on a level row's dual: above it, the job is a bottleneck
LEVEL_SLACK = 1e-9       # relative: the second stage holds each job to within this of the level
CENTRE_GAP = 1e-7        # relative: the centre's gap to the level (point "centre")
FINISH_TOLERANCE = 1e-9  # relative width of finish-time fairness's final bracket on rho
# the metric in which Gavel's max-min states the level it reached (``gavel_reference``)
GAVEL_LEVEL = "gavel_level"


MEASURED_TYPES = ("k80", "p100", "v100")     # the consolidated workers of Gavel's table


@functools.cache
def _gavel_table() -> dict:
    text = resources.files("fairalloc").joinpath("data", "gavel",
                                                 "simulation_throughputs.json").read_text()
    return json.loads(text)


@functools.cache
def measured() -> dict[tuple[str, int], dict[str, float]]:
    """Gavel's measured isolated throughputs (fairalloc/data/gavel): (model, scale factor) ->
    {worker type: steps/s alone} for the consolidated k80, p100 and v100 workers."""
    table = _gavel_table()
    out: dict[tuple[str, int], dict[str, float]] = {}
    for worker in MEASURED_TYPES:
        for key, row in table[worker].items():
            model, scale = ast.literal_eval(key)
            out.setdefault((model, int(scale)), {})[worker] = float(row["null"])
    return out


@functools.cache
def measured_pairs() -> dict[tuple[tuple[str, int], tuple[str, int]], dict[str, tuple]]:
    """Gavel's measured co-located throughputs (the same file; Gavel reads them in
    ``scheduler/scheduler.py``, ``_populate_job_combination_metadata``): ((model, scale),
    (other model, scale)) -> {worker type: (steps/s of the first, of the second)} when the two
    share one set of ``scale`` GPUs. Measured for every two configurations of one scale
    factor; 0 where the pair cannot share (out of memory)."""
    table = _gavel_table()
    out: dict[tuple, dict[str, tuple]] = {}
    for worker in MEASURED_TYPES:
        for key, row in table[worker].items():
            first = ast.literal_eval(key)
            for other, pair in row.items():
                if other == "null":
                    continue
                second = ast.literal_eval(other)
                out.setdefault(((first[0], int(first[1])), (second[0], int(second[1]))),
                               {})[worker] = (float(pair[0]), float(pair[1]))
    return out


def models() -> list[str]:
    """The model configurations of the measured table."""
    return sorted({m for m, _ in measured()})


@dataclass(frozen=True, eq=False)
class HeteroProblem:
    """Worker types and their GPU counts; per job its throughput row, scale factor, weight and
    (for finish-time fairness) steps remaining and time elapsed (NaN when not given), and in
    a replay the seconds its progress so far would have taken at its isolated throughput."""

    ids: tuple[str, ...]
    types: tuple[str, ...]
    workers: np.ndarray          # (k,) GPUs of each type
    throughput: np.ndarray       # (n, k) steps/s alone on s_j GPUs of each type
    scale: np.ndarray            # (n,) GPUs per job
    weights: np.ndarray          # (n,)
    steps: np.ndarray            # (n,) steps remaining, NaN: not given
    elapsed: np.ndarray          # (n,) seconds elapsed, NaN: not given
    # space sharing (``colocated``): job j's row of ``pair_table``; None: no two jobs share
    pair_class: np.ndarray | None = None
    # (c, c, k): steps/s of a job of class a sharing one set of its GPUs of type k with a job
    # of class b (0: they cannot share)
    pair_table: np.ndarray | None = None
    # (n,) seconds the steps each job has done would have taken at its isolated throughput,
    # summed allocation by allocation (Gavel's ``_cumulative_isolated_time``), which a replay
    # keeps; None: the time elapsed, as if the job had run at its isolated throughput so far
    isolated_time: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def k(self) -> int:
        return len(self.types)

    @classmethod
    def from_spec(cls, data: dict, found: Violations) -> HeteroProblem | None:
        """Build from a schema-valid spec, adding a violation for each broken precondition:
        duplicate ids, unknown worker types, models or scale factors the table lacks, and a
        job that can run on no type (no throughput where its scale factor fits)."""
        jobs = data["jobs"]
        types = tuple(data["workers"])
        workers = np.array([data["workers"][t] for t in types], dtype=float)
        check_unique_ids(jobs, "jobs", found)
        check_at_least(((["jobs", i, "weight"], j.get("weight", 1.0))
                        for i, j in enumerate(jobs)), SMALLEST_WEIGHT, found)
        rows = np.zeros((len(jobs), len(types)))
        scale = np.array([j.get("scale_factor", 1) for j in jobs], dtype=float)
        unread = set()          # jobs whose row is already reported: not "runs nowhere" too
        for i, job in enumerate(jobs):
            before = len(found.items)
            row = job.get("throughput") or _measured_row(job, i, types, found)
            for name, value in (row or {}).items():
                if name not in types:
                    found.add(["jobs", i, "throughput", name],
                              f"unknown worker type (workers: {', '.join(types)})")
                else:
                    rows[i, types.index(name)] = value
            if len(found.items) > before:
                unread.add(i)
        rows = np.where(usable_throughput(rows), rows, 0.0)
        usable = (rows > 0) & (scale[:, None] <= workers[None, :])
        for i in np.flatnonzero(~usable.any(axis=1)):
            if i in unread or (workers < 0).any():     # reported already, at its cause
                continue
            key = "throughput" if "throughput" in jobs[i] else "model"
            found.add(["jobs", int(i), key],
                      f"the job can run on no worker type (it needs {int(scale[i])} GPU(s) of a "
                      f"type where its throughput is above 0; workers: "
                      f"{', '.join(f'{t} {int(w)}' for t, w in zip(types, workers))})")
        table = spec_pairs(data, types, scale, found) if "colocated" in data else None
        if found:
            return None
        nan = float("nan")
        return cls(
            ids=tuple(j["id"] for j in jobs), types=types, workers=workers, throughput=rows,
            scale=scale, weights=np.array([j.get("weight", 1.0) for j in jobs], dtype=float),
            steps=np.array([j.get("steps_remaining", nan) for j in jobs], dtype=float),
            elapsed=np.array([j.get("time_elapsed", nan) for j in jobs], dtype=float),
            pair_class=None if table is None else np.arange(len(jobs)), pair_table=table)

    def allocation(self, x: np.ndarray, shared: np.ndarray | None = None) -> Allocation:
        """Time fractions per type (alone), with the effective and normalised throughputs;
        with ``shared`` (n, n, k), each job's time sharing a GPU with each other job, as
        ``shared.<other id>.<type>`` (the columns with any time)."""
        x = np.where(np.abs(x) < TIE, 0.0, x)
        columns = {("time", t): x[:, c] for c, t in enumerate(self.types)}
        if shared is not None:
            shared = np.where(np.abs(shared) < TIE, 0.0, shared)
            columns.update({("shared", self.ids[o], self.types[c]): shared[:, o, c]
                            for o, c in zip(*np.nonzero(shared.any(axis=0)))})
        return Allocation(self.ids, {**columns, **self.derived(x, shared)})

    def derived(self, x: np.ndarray, shared: np.ndarray | None = None
                ) -> dict[Key, np.ndarray]:
        """The columns that follow from the time fractions: effective and normalised
        throughput."""
        throughput = effective(self, x) + pair_throughput(self, shared)
        return {("throughput",): throughput,
                ("normalized",): throughput / isolated_throughput(self)}

    def read_allocation(self, data) -> Allocation:
        """An allocation made elsewhere: the time fractions (and, when the spec lets jobs
        share GPUs, the shared ones); throughputs given must be theirs."""
        shared = [] if self.pair_class is None else [
            ("shared", o, t) for o in self.ids for t in self.types]
        return read_allocation(data, self.ids, [("time", t) for t in self.types],
                               [("throughput",), ("normalized",), *shared],
                               derived=lambda read: self.derived(time_of(self, read),
                                                                 shared_of(self, read)))

    def with_throughput(self, j: int, row: np.ndarray) -> HeteroProblem:
        """The problem as job j reports throughput ``row`` (a strategy-proofness probe)."""
        rows = self.throughput.copy()
        rows[j] = row
        return replace(self, throughput=rows)


def _measured_row(job: dict, i: int, types: tuple[str, ...], found: Violations
                  ) -> dict[str, float] | None:
    """A ``model`` job's throughput row from the measured table."""
    table = measured()
    name, scale = job["model"], job.get("scale_factor", 1)
    if (name, scale) not in table:
        if name not in {m for m, _ in table}:
            near = difflib.get_close_matches(name, models(), n=3, cutoff=0.5)
            found.add(["jobs", i, "model"], "not in the measured table"
                      + (f" (did you mean {', '.join(map(repr, near))}?)" if near else
                         f" (models: {', '.join(models()[:6])}, ...)"))
        else:
            measured_at = sorted(s for m, s in table if m == name)
            found.add(["jobs", i, "scale_factor"], f"{name} is measured at scale factors "
                      f"{', '.join(map(str, measured_at))} only")
        return None
    row = table[(name, scale)]
    unknown = [t for t in types if t not in row]
    if unknown:
        found.add(["jobs", i, "model"], f"the measured table has no throughput on worker "
                  f"type {', '.join(map(repr, unknown))} (it has k80, p100, v100)")
        return None
    return {t: row[t] for t in types}


def usable_throughput(rows: np.ndarray) -> np.ndarray:
    """(n, k) for throughput rows (n, k): above 0 and at least ``SMALLEST_THROUGHPUT`` of the
    row's best (a job's type below that is as good as unusable, in any unit of steps)."""
    best = rows.max(axis=1, initial=0.0, keepdims=True)
    return (rows > 0) & (rows >= SMALLEST_THROUGHPUT * best)


def eligible(p: HeteroProblem) -> np.ndarray:
    """(n, k): job j can run on type k (throughput above 0 and its scale factor fits)."""
    return (p.throughput > 0) & (p.scale[:, None] <= p.workers[None, :])


def isolated_share(p: HeteroProblem, among: int | None = None) -> np.ndarray:
    """x^iso: 1/n of every type a job can run on, x_jk = W_k / (n s_j), each row scaled down
    to sum to at most 1 (a job runs on one type at a time); with ``among``, 1/among of it
    (a share among that many holders, Gandiva's jobs and pairs)."""
    x = np.where(eligible(p), p.workers[None, :] / ((among or p.n) * p.scale[:, None]), 0.0)
    total = x.sum(axis=1, keepdims=True)
    return x / np.maximum(total, 1.0)


def effective(p: HeteroProblem, x: np.ndarray) -> np.ndarray:
    """E_j(x) = sum_k T_jk x_jk."""
    return (p.throughput * x).sum(axis=1)


@functools.lru_cache(maxsize=16)      # every check and metric needs it; problems are frozen
def _isolated(p: HeteroProblem) -> np.ndarray:
    return effective(p, isolated_share(p))


def isolated_throughput(p: HeteroProblem) -> np.ndarray:
    """E_j^iso = E_j(x^iso), the reference of every normalised throughput."""
    return _isolated(p)


def proportional_throughput(p: HeteroProblem) -> np.ndarray:
    """P_j = sum_k T_jk W_k / sum_k W_k: job j's throughput under Gavel's proportional share,
    every job x_jk = W_k / sum W whatever their number (Gavel, ``scheduler/policies/
    proportional.py``, ``_get_allocation``: W_k / m, its rows divided by the largest row sum
    sum W / m). A type the job cannot run on (throughput 0, or fewer GPUs than its scale
    factor) adds nothing, as Gavel's throughput 0 there does."""
    rows = np.where(eligible(p), p.throughput, 0.0)
    return rows @ p.workers / p.workers.sum()


def gavel_reference(p: HeteroProblem) -> np.ndarray:
    """P_j / s_j: the reference of Gavel's max-min level. Gavel maximises min_j s_j E_j /
    (w_j P_j) (``scheduler/policies/max_min_fairness.py``, ``MaxMinFairnessPolicyWithPerf``,
    lines 59-72: the throughputs times the scale factors over the weights and
    ``proportional_throughput``), that is E_j / (w_j P_j / s_j): one common share of the
    cluster for every job, where the isolated share W_k / (n s_j) is capped at the whole
    time of one job. The two agree up to a constant factor only when n s_j >= sum W for every
    job (every isolated share uncapped); with multi-GPU jobs on a lightly loaded cluster, or
    jobs that cannot use every type, they rank jobs differently."""
    return proportional_throughput(p) / p.scale


def normalized(p: HeteroProblem, x: np.ndarray) -> np.ndarray:
    """E_j(x) / E_j^iso."""
    return effective(p, x) / isolated_throughput(p)


def time_isolated(p: HeteroProblem) -> np.ndarray:
    """I_j, the seconds job j's progress so far would have taken at its isolated throughput:
    the problem's ``isolated_time`` (a replay's, Gavel's cumulative isolated time), else the
    time elapsed t_j (a static spec has no history: the job is taken to have run at its
    isolated throughput so far)."""
    return p.elapsed if p.isolated_time is None else p.isolated_time


def finish_time_ratio(p: HeteroProblem, throughput: np.ndarray) -> np.ndarray:
    """rho_j = (t_j + S_j / E_j) / (I_j + S_j / E_j^iso) (Themis; I_j: ``time_isolated``, in
    a replay Gavel's cumulative isolated time, ``scheduler/policies/finish_time_fairness.py``
    lines 91-95): how much later than under the isolated share job j finishes; inf when E_j =
    0 and steps remain; NaN for a finished job (S_j = 0: its finish time no longer depends on
    the allocation, and at t_j = 0 the ratio is 0/0) and without steps_remaining and
    time_elapsed."""
    with np.errstate(divide="ignore", invalid="ignore"):
        own = p.elapsed + p.steps / throughput
        ref = time_isolated(p) + p.steps / isolated_throughput(p)
        return np.where(p.steps > 0, own / ref, np.nan)


def unfinished(p: HeteroProblem) -> np.ndarray:
    """(n,): the jobs with steps remaining (the ones with a finish-time ratio)."""
    return p.steps > 0


def largest_finish_time_ratio(p: HeteroProblem, throughput: np.ndarray) -> float:
    """max_j rho_j over the unfinished jobs (NaN when none is, or a job lacks its steps or
    time)."""
    live = unfinished(p)
    if not live.any() or np.isnan(p.steps).any() or np.isnan(p.elapsed).any():
        return float("nan")
    return float(finish_time_ratio(p, throughput)[live].max())


def utilization(p: HeteroProblem, x: np.ndarray) -> np.ndarray:
    """Share of each type's GPUs in use: sum_j s_j x_jk / W_k (0 for a type with none)."""
    used = (p.scale[:, None] * x).sum(axis=0)
    return np.divide(used, p.workers, out=np.zeros_like(used), where=p.workers > 0)


def time_of(p: HeteroProblem, allocation: Allocation) -> np.ndarray:
    """The allocation's (n, k) time fractions."""
    return np.column_stack([np.asarray(allocation.column("time", t), dtype=float)
                            for t in p.types])


def metrics(p: HeteroProblem, allocation: Allocation) -> dict:
    """Smallest and total normalised throughput, total steps/s, utilisation per type (shared
    time included), and the largest finish-time ratio of the unfinished jobs when every job
    has its steps and time."""
    x = time_of(p, allocation)
    shared = shared_of(p, allocation)
    e = effective(p, x) + pair_throughput(p, shared)
    share = e / isolated_throughput(p)
    used = utilization(p, x) + np.divide(pair_gpus(p, shared), p.workers,
                                         out=np.zeros(p.k), where=p.workers > 0)
    out = {"min_normalized_throughput": float((share / p.weights).min()),
           "total_normalized_throughput": float(share.sum()),
           "total_throughput": float(e.sum()),
           "utilization": dict(zip(p.types, used.tolist()))}
    largest = largest_finish_time_ratio(p, e)
    if not np.isnan(largest):
        out["max_finish_time_ratio"] = largest
    return out


# --- the LPs ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Program:
    """Allocations as an LP's variables v >= 0: ``rows @ v <= rhs``, ``v <= upper``; job j's
    utility is ``gains[j] @ v``; ``to_time(v)`` gives the (n, k) time fractions."""

    rows: SparseRows
    rhs: np.ndarray
    upper: np.ndarray
    gains: SparseRows
    spread: np.ndarray | None = None     # (n, k): x = t_j * spread_jk for a time program

    def per_unit(self, unit: np.ndarray) -> Program:
        """The same program with job j's utility counted in units of ``unit[j]`` (its rows
        relative, so that a solver's absolute tolerances mean the same for every job)."""
        g = self.gains
        return replace(self, gains=SparseRows(g.shape, g.row, g.col, g.value / unit[g.row]))

    def utility_bound(self, weights: np.ndarray, prices: np.ndarray) -> float:
        """An upper bound of sum_j weights_j gains_j . v over every v of the program, from any
        ``prices`` >= 0 of its rows (weak duality, Lagrangian relaxation of the rows): rhs .
        prices + sum_i upper_i max(0, c_i - (rows^T prices)_i), c = gains^T weights. Exact
        arithmetic on whatever prices are given, so a solver's inexact duals still prove
        it."""
        size = self.rows.shape[1]
        g, r = self.gains, self.rows
        gain = np.bincount(g.col, weights=g.value * weights[g.row], minlength=size)
        cost = np.bincount(r.col, weights=r.value * prices[r.row], minlength=size)
        return float(self.rhs @ prices + self.upper @ np.maximum(gain - cost, 0.0))

    def to_time(self, v: np.ndarray, k: int) -> np.ndarray:
        if self.spread is None:
            return v.reshape(-1, k)
        return v[:, None] * self.spread


def throughput_program(p: HeteroProblem) -> Program:
    """x (n*k, row-major) with one row per job (sum_k x_jk <= 1) and one per type
    (sum_j s_j x_jk <= W_k); utility E_j = sum_k T_jk x_jk; x_jk = 0 where j cannot run."""
    n, k = p.n, p.k
    j = np.repeat(np.arange(n), k)
    t = np.tile(np.arange(k), n)
    var = np.arange(n * k)
    rows = SparseRows((n + k, n * k), np.concatenate([j, n + t]), np.concatenate([var, var]),
                      np.concatenate([np.ones(n * k), p.scale[j]]))
    rhs = np.concatenate([np.ones(n), p.workers])
    upper = np.where(eligible(p), 1.0, 0.0).ravel()
    gains = SparseRows((n, n * k), j, var, p.throughput.ravel())
    return Program(rows, rhs, upper, gains)


def agnostic_program(p: HeteroProblem) -> Program:
    """As if every GPU were the same: variables t_j (total time of job j), spread over the
    types it can run on in proportion to their GPU counts (x_jk = t_j W_k / sum of those);
    utility t_j itself; one row per type (sum_j s_j x_jk <= W_k) and t_j <= 1."""
    n, k = p.n, p.k
    ok = eligible(p)
    spread = np.where(ok, p.workers[None, :], 0.0)
    total = spread.sum(axis=1, keepdims=True)
    spread = np.divide(spread, total, out=np.zeros_like(spread), where=total > 0)
    j, t = np.nonzero(ok)
    rows = SparseRows((k, n), t, j, p.scale[j] * spread[j, t])
    gains = SparseRows((n, n), np.arange(n), np.arange(n), np.ones(n))
    return Program(rows, p.workers.copy(), np.ones(n), gains, spread)


def with_job_rows(program: Program) -> Program:
    """A program of one variable a job (``agnostic_program``'s t_j) in
    ``throughput_program``'s shape with one type: job j's row t_j <= its upper first, the
    program's rows after, so that what reads that shape (``merged_jobs``, the centre) reads
    it."""
    n = program.upper.size
    r = program.rows
    rows = SparseRows((n + r.shape[0], n), np.concatenate([np.arange(n), n + r.row]),
                      np.concatenate([np.arange(n), r.col]),
                      np.concatenate([np.ones(n), r.value]))
    return replace(program, rows=rows, rhs=np.concatenate([program.upper, program.rhs]))


def isolated_program(p: HeteroProblem) -> Program:
    """``throughput_program`` with job j's utility counted in units of its isolated throughput
    E_j^iso (its normalised throughput): whatever the unit of steps (throughputs of 1e-9 or
    1e12 steps/s), the LPs see the same O(1) numbers and HiGHS's absolute tolerances mean the
    same for every job."""
    return throughput_program(p).per_unit(isolated_throughput(p))


def weight_unit(p: HeteroProblem) -> float:
    """The largest weight: the LPs take the weights in units of it (``relative_weights``), the
    same numbers whatever unit the spec's weights are in."""
    return float(p.weights.max())


def relative_weights(p: HeteroProblem) -> np.ndarray:
    """w_j / ``weight_unit``, in (0, 1]."""
    return p.weights / weight_unit(p)


def level_program(p: HeteroProblem, reference: np.ndarray | None = None) -> Program:
    """``throughput_program`` with job j's utility counted in units of (w_j / max w) R_j, R_j
    the ``reference`` (default E_j^iso; ``gavel_reference`` for Gavel's max-min): its level
    (weighted normalised throughput) times the largest weight. The max-min LPs on
    it have every reference 1: each job's level row is O(1) at the level, so HiGHS's absolute
    tolerances hold each job to the level relatively, a job of weight 1e-6 beside one of 1e6
    as well as the heaviest (with the weights in the level's column instead, such a job's
    row asked 6e-8 of its throughput, under HiGHS's 1e-7, and the job got 2e-9)."""
    if reference is None:
        reference = isolated_throughput(p)
    return throughput_program(p).per_unit(reference * relative_weights(p))


def equal_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The classes of equal rows of ``keys`` (n, c): (each row's class, the first row of each
    class, the rows in each class), classes numbered in the rows' sorted order (as
    ``np.unique(keys, axis=0)`` numbers them, at a third of its time on a replay's jobs)."""
    n = keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    order = np.lexsort(keys.T[::-1])        # stable: equal rows keep their order
    ranked = keys[order]
    starts = np.r_[True, np.any(ranked[1:] != ranked[:-1], axis=1)]
    group = np.empty(n, dtype=np.intp)
    group[order] = np.cumsum(starts) - 1
    return group, order[starts], np.bincount(group)


@dataclass(frozen=True)
class Merged:
    """A throughput program with identical jobs merged (``merged_jobs``): ``program`` has one
    job per class (``first``: its first job), ``group`` is each job's class, ``counts`` the
    jobs per class."""

    program: Program
    group: np.ndarray
    first: np.ndarray
    counts: np.ndarray

    def variables(self, v: np.ndarray, k: int) -> np.ndarray:
        """The original program's variables from the merged one's: each job its class's."""
        return v.reshape(-1, k)[self.group].ravel()


def merged_jobs(program: Program, alike: np.ndarray) -> Merged:
    """A ``throughput_program`` (or a ``per_unit`` of one: job j's variables j*k..j*k+k-1, its
    row first, the k type rows after the jobs') with the jobs that an LP on it cannot tell
    apart (the same gains, row coefficients and bounds, and the same ``alike``: what else the
    LP gives each job, a max-min's reference or a sum's weight) sharing one set of variables:
    a class of c jobs is one job whose type-row coefficients are c times each job's. Exact
    for such an LP's optimum: the LP is convex and symmetric in such jobs, so the mean of an
    optimum over their permutations is an optimum in which they are equal, and the merged LP
    is the full one restricted to such points (finer classes, keyed on more, are exact too).
    On Gavel's figure-8 replay (26 configurations of jobs) an LP of 100-300 jobs becomes one
    of at most 26."""
    g, r = program.gains, program.rows
    n, size = g.shape
    k = size // n
    gains, coefficient, job_row = np.zeros(size), np.zeros(size), np.zeros(size)
    gains[g.col] = g.value
    typed = r.row >= n
    coefficient[r.col[typed]] = r.value[typed]
    job_row[r.col[~typed]] = r.value[~typed]
    keys = np.column_stack([gains.reshape(n, k), coefficient.reshape(n, k),
                            job_row.reshape(n, k), program.upper.reshape(n, k), alike])
    group, first, counts = equal_rows(keys)
    classes = first.size
    var = (group[:, None] * k + np.arange(k)).ravel()      # each variable's merged one
    kept = np.zeros(n, dtype=bool)
    kept[first] = True
    mine = ~typed & kept[np.minimum(r.row, n - 1)]          # the job rows of each class's first
    # a class's type-row coefficients: the sum of its jobs'
    summed = np.bincount(var, weights=coefficient, minlength=classes * k)
    cells = np.flatnonzero(summed)
    rows = SparseRows((classes + k, classes * k),
                      np.concatenate([group[r.row[mine]], classes + cells % k]),
                      np.concatenate([var[r.col[mine]], cells]),
                      np.concatenate([r.value[mine], summed[cells]]))
    firsts = kept[g.row]
    gain_rows = SparseRows((classes, classes * k), group[g.row[firsts]], var[g.col[firsts]],
                           g.value[firsts])
    return Merged(Program(rows, np.concatenate([program.rhs[:n][first], program.rhs[n:]]),
                          program.upper.reshape(n, k)[first].ravel(), gain_rows),
                  group, first, counts)


def interior_pays(cost: np.ndarray) -> bool:
    """Whether one of the kind's LPs (``cost``: its objective, one entry a column) goes to
    HiGHS's interior point method rather than the dual simplex: from ``INTERIOR_FROM``
    columns, where it is far faster (the max-min at 1e4 jobs: 0.9 s against 24.7 s). The
    methods and the checks solve alike by asking this."""
    return cost.size > INTERIOR_FROM


def max_min_lp(program: Program, reference: np.ndarray, frozen: dict[int, float]
               ) -> tuple[np.ndarray, SparseRows, np.ndarray, np.ndarray, np.ndarray,
                          np.ndarray]:
    """max z s.t. the program's rows, gains_j . v >= z ref_j for the other jobs and
    gains_j . v >= level_j ref_j for the ``frozen`` ones (job -> level). Variables (v, z).
    Returns (cost, rows, row_lower, row_upper, col_lower, col_upper) for ``solve_matrix``;
    the utility rows come after the program's."""
    m, size = program.rows.shape
    n = program.gains.shape[0]
    live = np.ones(n, dtype=bool)
    level = np.zeros(n)
    for job, value in frozen.items():
        live[job] = False
        level[job] = value
    g = program.gains
    live_jobs = np.flatnonzero(live)
    rows = SparseRows(
        (m + n, size + 1),
        np.concatenate([program.rows.row, m + g.row, m + live_jobs]),
        np.concatenate([program.rows.col, g.col, np.full(live_jobs.size, size)]),
        np.concatenate([program.rows.value, g.value, -reference[live_jobs]]))
    row_lower = np.concatenate([np.full(m, -np.inf), np.where(live, 0.0, level * reference)])
    row_upper = np.concatenate([program.rhs, np.full(n, np.inf)])
    cost = np.zeros(size + 1)
    cost[size] = 1.0
    return (cost, rows, row_lower, row_upper, np.zeros(size + 1),
            np.concatenate([program.upper, [np.inf]]))


def sum_lp(program: Program, weights: np.ndarray, floor: np.ndarray | None = None
           ) -> tuple[np.ndarray, SparseRows, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """max sum_j weights_j gains_j . v over the program, with gains_j . v >= floor_j when a
    floor is given (Pareto: can anyone gain while no one loses?)."""
    m, size = program.rows.shape
    n = program.gains.shape[0]
    g = program.gains
    cost = np.bincount(g.col, weights=g.value * weights[g.row], minlength=size)
    if floor is None:
        rows, lower, upper = program.rows, np.full(m, -np.inf), program.rhs
    else:
        rows = SparseRows((m + n, size), np.concatenate([program.rows.row, m + g.row]),
                          np.concatenate([program.rows.col, g.col]),
                          np.concatenate([program.rows.value, g.value]))
        lower = np.concatenate([np.full(m, -np.inf), floor])
        upper = np.concatenate([program.rhs, np.full(n, np.inf)])
    return cost, rows, lower, upper, np.zeros(size), program.upper


def max_min_model(p: HeteroProblem, reference: np.ndarray | None = None):
    """The heterogeneity-aware max-min LP as written (Pyomo), one variable x_jk per job and
    type it can run on:

    maximise z s.t. sum_k T_jk x_jk >= z w_j R_j (every job), sum_k x_jk <= 1 (a job runs
    on one type at a time), sum_j s_j x_jk <= W_k (GPUs of each type); R_j the ``reference``
    (default E_j^iso; Gavel's is ``gavel_reference``).

    Each level row is divided by w_j R_j / max w, as in ``level_program`` (HiGHS's range
    at any unit of steps or weight): the model's optimum is z times ``weight_unit``.
    """
    pyo = startup.pyomo()

    ok = eligible(p)
    pairs = [(int(j), int(k)) for j, k in zip(*np.nonzero(ok))]
    if reference is None:
        reference = isolated_throughput(p)
    gains = p.throughput / (reference * relative_weights(p))[:, None]
    model = pyo.ConcreteModel(name="hetero-max-min")
    model.X = pyo.Var(pairs, domain=pyo.NonNegativeReals, bounds=(0, 1))
    model.z = pyo.Var(domain=pyo.Reals)
    by_job: dict[int, list[int]] = {}
    by_type: dict[int, list[int]] = {}
    for j, k in pairs:
        by_job.setdefault(j, []).append(k)
        by_type.setdefault(k, []).append(j)
    model.objective = pyo.Objective(expr=model.z, sense=pyo.maximize,
                                    doc="maximise z, the smallest E_j / (w_j R_j) "
                                        "times max_i w_i")
    model.level = pyo.Constraint(
        range(p.n), doc="sum_k T_jk x_jk / (R_j w_j / max_i w_i) >= z (effective "
                        "throughput in units of the job's weighted reference)",
        rule=lambda mdl, j: sum(float(gains[j, k]) * mdl.X[j, k] for k in by_job[j])
        >= mdl.z)
    model.one_type = pyo.Constraint(
        range(p.n), doc="sum_k x_jk <= 1 (one type at a time)",
        rule=lambda mdl, j: sum(mdl.X[j, k] for k in by_job[j]) <= 1)
    model.gpus = pyo.Constraint(
        list(by_type), doc="sum_j s_j x_jk <= W_k (GPUs of type k)",
        rule=lambda mdl, k: sum(float(p.scale[j]) * mdl.X[j, k] for j in by_type[k])
        <= float(p.workers[k]))
    return model


# --- space sharing: two jobs on one GPU ------------------------------------------------------
#
# Gavel's packing policies (``scheduler/policies/policy.py``, ``PolicyWithPacking``) give time
# to job combinations: a job alone, or two jobs sharing the same s GPUs of a type, each at its
# measured co-located throughput. Job j's time in all its combinations sums to at most 1, and
# a type's GPUs hold each combination once: sum_j s_j x_jk + sum_{i<j} s y_ijk <= W_k, y_ijk
# the time the pair (i, j) shares s GPUs of type k. Only jobs of one scale factor share (Gavel
# forces a mixed pair's variables to 0, ``get_allocation`` lines 336-344, and its rounds never
# place one).


def spec_pairs(data: dict, types: tuple[str, ...], scale: np.ndarray, found: Violations
               ) -> np.ndarray | None:
    """The spec's ``colocated``: (n, n, k) steps/s of job i sharing its GPUs with job j, from
    Gavel's measured pairs (``"measured": true``: every two ``model`` jobs of one scale
    factor) and the ``pairs`` given, which take precedence. Adds a violation for an unknown
    or repeated job or pair, a job paired with itself, unknown worker types and jobs of
    different scale factors."""
    given = data["colocated"]
    jobs = data["jobs"]
    ids = [j.get("id") for j in jobs]
    n, k = len(jobs), len(types)
    table = np.zeros((n, n, k))
    if given.get("measured"):
        pairs = measured_pairs()
        for i, a in enumerate(jobs):
            for j in range(i + 1, n):
                b = jobs[j]
                if "model" not in a or "model" not in b or scale[i] != scale[j]:
                    continue
                row = pairs.get(((a["model"], int(scale[i])), (b["model"], int(scale[j]))), {})
                for c, t in enumerate(types):
                    table[i, j, c], table[j, i, c] = row.get(t, (0.0, 0.0))
    seen: set[frozenset] = set()
    for e, pair in enumerate(given.get("pairs", [])):
        where = ["colocated", "pairs", e]
        members = [ids.index(m) if m in ids else None for m in pair["jobs"]]
        for slot, m in enumerate(members):
            if m is None:
                found.add([*where, "jobs", slot], f"no job {pair['jobs'][slot]!r} in jobs")
        if None in members:
            continue
        i, j = members
        if i == j:
            found.add([*where, "jobs"], "a pair is two different jobs")
        elif scale[i] != scale[j]:
            found.add([*where, "jobs"], f"only jobs of one scale factor share GPUs (Gavel): "
                      f"{ids[i]} runs on {int(scale[i])}, {ids[j]} on {int(scale[j])}")
        elif frozenset((i, j)) in seen:
            found.add([*where, "jobs"], "this pair is given twice")
        seen.add(frozenset((i, j)))
        for t, both in pair["throughput"].items():
            if t not in types:
                found.add([*where, "throughput", t],
                          f"unknown worker type (workers: {', '.join(types)})")
            elif i != j:
                c = types.index(t)
                table[i, j, c], table[j, i, c] = both
    return table


def colocated(p: HeteroProblem) -> np.ndarray:
    """(n, n, k): steps/s of job i sharing its s GPUs of type k with job j; 0 where they
    cannot: no co-located throughputs, either job's at 0 (Gavel's rounds never place such a
    pair, ``_schedule_jobs_on_workers_helper``) or below ``SMALLEST_THROUGHPUT`` of its best
    alone, different scale factors, a type with fewer GPUs, the same job."""
    return _colocated(p)


@functools.lru_cache(maxsize=16)
def _colocated(p: HeteroProblem) -> np.ndarray:
    n, k = p.n, p.k
    if p.pair_class is None or n < 2:
        return np.zeros((n, n, k))
    c = p.pair_table[np.ix_(p.pair_class, p.pair_class)]
    best = p.throughput.max(axis=1)
    usable = (c > 0) & (c >= SMALLEST_THROUGHPUT * best[:, None, None])
    usable &= usable.transpose(1, 0, 2)
    usable &= (p.scale[:, None] == p.scale[None, :])[:, :, None]
    usable &= (p.scale[:, None] <= p.workers[None, :])[:, None, :]
    usable[np.arange(n), np.arange(n)] = False
    return np.where(usable, c, 0.0)


def pair_throughput(p: HeteroProblem, shared: np.ndarray | None) -> np.ndarray:
    """(n,): each job's steps/s from its shared time, sum_{i,k} C_jik y_jik (0 without)."""
    if shared is None:
        return np.zeros(p.n)
    return (colocated(p) * shared).sum(axis=(1, 2))


def shared_of(p: HeteroProblem, allocation: Allocation) -> np.ndarray | None:
    """The allocation's (n, n, k) shared time fractions (``shared.<id>.<type>`` columns);
    None when it has none."""
    keys = [key for key in allocation.columns if key[0] == "shared"]
    if not keys:
        return None
    shared = np.zeros((p.n, p.n, p.k))
    index = {uid: o for o, uid in enumerate(p.ids)}
    for key in keys:
        shared[:, index[key[1]], p.types.index(key[2])] = allocation.columns[key]
    return shared


def throughput_of(p: HeteroProblem, allocation: Allocation) -> np.ndarray:
    """(n,): each job's effective throughput under the allocation, shared time included."""
    return effective(p, time_of(p, allocation)) + pair_throughput(p, shared_of(p, allocation))


def pair_gpus(p: HeteroProblem, shared: np.ndarray | None) -> np.ndarray:
    """(k,): GPUs of each type the shared time holds, each pair once: sum_{i<j} s y_ijk."""
    if shared is None:
        return np.zeros(p.k)
    return 0.5 * (p.scale[:, None, None] * shared).sum(axis=(0, 1))


def candidate_pairs(p: HeteroProblem) -> np.ndarray:
    """(P, 2): the pairs i < j that can share a GPU of some type (``colocated``)."""
    can = colocated(p).any(axis=2)
    return np.argwhere(np.triu(can, 1))


def packed_program(p: HeteroProblem) -> tuple[Program, np.ndarray]:
    """Gavel's packing polytope as a ``Program`` (``PolicyWithPacking.get_base_constraints``
    and ``MaxMinFairnessPolicyWithPacking.get_allocation``, ``scheduler/policies/policy.py``
    lines 163-182 and ``max_min_fairness.py`` lines 274-344): variables x_jk (n*k, as
    ``throughput_program``) then y_pk for each candidate pair p (``candidate_pairs``, P*k);
    one row per job, its time alone and in every pair it is in, <= 1; one per type, sum_j
    s_j x_jk + sum_p s_p y_pk <= W_k; job j's utility sum_k T_jk x_jk + sum_{p ∋ j} C_j y_pk.
    Returns the program and the pairs."""
    base = throughput_program(p)
    pairs = candidate_pairs(p)
    n, k = p.n, p.k
    c = colocated(p)
    m = pairs.shape[0]
    var = n * k + np.arange(m * k)              # pair-major: pair q, type t at n*k + q*k + t
    q = np.repeat(np.arange(m), k)
    t = np.tile(np.arange(k), m)
    i, j = pairs[q, 0], pairs[q, 1]
    rows = SparseRows((n + k, n * k + m * k),
                      np.concatenate([base.rows.row, i, j, n + t]),
                      np.concatenate([base.rows.col, var, var, var]),
                      np.concatenate([base.rows.value, np.ones(2 * m * k), p.scale[i]]))
    upper = np.concatenate([base.upper, (c[i, j, t] > 0).astype(float)])
    gains = SparseRows((n, n * k + m * k), np.concatenate([base.gains.row, i, j]),
                       np.concatenate([base.gains.col, var, var]),
                       np.concatenate([base.gains.value, c[i, j, t], c[j, i, t]]))
    return Program(rows, base.rhs, upper, gains), pairs


def unpack(p: HeteroProblem, v: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A ``packed_program``'s variables as (x: (n, k) alone, y: (n, n, k) shared, symmetric)."""
    n, k = p.n, p.k
    x = v[:n * k].reshape(n, k)
    shared = np.zeros((n, n, k))
    y = v[n * k:].reshape(-1, k)
    shared[pairs[:, 0], pairs[:, 1]] = y
    shared[pairs[:, 1], pairs[:, 0]] = y
    return x, shared


@dataclass(frozen=True)
class MergedPacked:
    """A packing program over classes of jobs that an LP on it cannot tell apart
    (``merged_packed``): variables each class's x (its k types) then each pair of classes'
    y (k each), y_q the time of every one of the ``together[q]`` pairs of jobs it stands for
    (a class with itself: two of its jobs). ``group``, ``first``, ``counts`` as ``Merged``'s."""

    program: Program
    group: np.ndarray
    first: np.ndarray
    counts: np.ndarray
    pairs: np.ndarray        # (Q, 2): classes c <= d
    together: np.ndarray     # (Q,): pairs of jobs each pair of classes stands for

    def unpack(self, p: HeteroProblem, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The jobs' (x: (n, k) alone, y: (n, n, k) shared) from the classes' variables:
        each job its class's x, each two jobs their classes' y."""
        classes, k = self.counts.size, p.k
        x = v[:classes * k].reshape(classes, k)[self.group]
        by_class = np.zeros((classes, classes, k))
        y = v[classes * k:].reshape(-1, k)
        by_class[self.pairs[:, 0], self.pairs[:, 1]] = y
        by_class[self.pairs[:, 1], self.pairs[:, 0]] = y
        shared = by_class[np.ix_(self.group, self.group)]
        shared[np.arange(p.n), np.arange(p.n)] = 0.0
        return x, shared


def merged_packed(p: HeteroProblem, alike: np.ndarray) -> MergedPacked:
    """``packed_program`` with the jobs merged into classes of the same throughputs alone,
    scale factor, co-located throughputs (``pair_class``) and ``alike`` (what else the LP
    gives each job: a max-min's reference, a sum's weight), and each pair of jobs into its
    pair of classes. Exact at every point the LP is symmetric in, as ``merged_jobs``: the
    LP is convex and unchanged by permuting a class's jobs, so the mean of an optimum over
    those permutations is an optimum with every job of a class alike and every pair of jobs
    of two classes alike, and the merged LP is the full one on such points. Class c's row:
    its time alone plus, for each pair of classes (c, d), y times the jobs it shares with
    (n_d, or n_c - 1 with itself); a type's row counts every pair of jobs once
    (n_c n_d, or n_c (n_c - 1) / 2); class c's utility: its throughput alone plus each such
    y times the jobs it shares with times its co-located throughput. Gavel's figure 9:
    some 60 jobs of 30 classes, 1,800 pairs of jobs in some 200 pairs of classes."""
    same = np.zeros(p.n) if p.pair_class is None else p.pair_class
    keys = np.column_stack([p.throughput, p.scale, eligible(p), alike, same])
    group, first, counts = equal_rows(keys)
    classes, k = first.size, p.k
    by_class = np.argsort(group, kind="stable")
    starts = np.cumsum(counts) - counts
    second = by_class[np.minimum(starts + 1, p.n - 1)]     # a class's other job, if any
    c = colocated(p)
    table = c[np.ix_(first, first)]
    table[np.arange(classes), np.arange(classes)] = np.where(
        (counts >= 2)[:, None], c[first, second], 0.0)
    pairs = np.argwhere(np.triu(table.any(axis=2)))
    a, b = pairs[:, 0], pairs[:, 1]
    own = a == b
    together = np.where(own, counts[a] * (counts[a] - 1) / 2, counts[a] * counts[b])
    # the jobs of the other class each job of a (of b) shares a pair of classes' y with
    with_a = np.where(own, counts[a] - 1, counts[b])
    with_b = counts[a]
    q = np.repeat(np.arange(pairs.shape[0]), k)
    t = np.tile(np.arange(k), pairs.shape[0])
    cls = np.repeat(np.arange(classes), k)
    kinds = np.tile(np.arange(k), classes)
    x_var = np.arange(classes * k)
    y_var = classes * k + np.arange(pairs.shape[0] * k)
    other = ~own[q]                     # a pair of two classes: a row entry for b too
    scale = p.scale[first]
    size = (classes + pairs.shape[0]) * k
    rows = SparseRows(
        (classes + k, size),
        np.concatenate([cls, a[q], b[q][other], classes + kinds, classes + t]),
        np.concatenate([x_var, y_var, y_var[other], x_var, y_var]),
        np.concatenate([np.ones(classes * k), with_a[q], with_b[q][other],
                        counts[cls] * scale[cls], together[q] * scale[a[q]]]))
    upper = np.concatenate([eligible(p)[first].ravel(), (table[a[q], b[q], t] > 0) * 1.0])
    gains = SparseRows(
        (classes, size), np.concatenate([cls, a[q], b[q][other]]),
        np.concatenate([x_var, y_var, y_var[other]]),
        np.concatenate([p.throughput[first].ravel(), with_a[q] * table[a[q], b[q], t],
                        (with_b[q] * table[b[q], a[q], t])[other]]))
    return MergedPacked(Program(rows, np.concatenate([np.ones(classes), p.workers]), upper,
                                gains), group, first, counts, pairs, together)

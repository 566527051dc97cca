"""hetero checks, each from its definition on the time fractions at hand.

E_j = sum_k T_jk x_jk (effective throughput), E_j^iso under the isolated share
(``models.hetero.isolated_share``). Tolerances are the kind's (``models.hetero``), relative
(RTOL) to the quantities compared.
"""

from __future__ import annotations

import functools

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.checks import best_of_others, no_mechanism, nothing_found, probe, probe_budget
from fairalloc.errors import SolverError
from fairalloc.models.hetero import (
    MAX_MIN_SHORTFALL,
    PARETO_GAIN,
    PARETO_LOSS,
    RTOL,
    HeteroProblem,
    colocated,
    effective,
    eligible,
    gavel_reference,
    interior_pays,
    isolated_throughput,
    level_program,
    max_min_lp,
    packed_program,
    pair_gpus,
    pair_throughput,
    relative_weights,
    shared_of,
    sum_lp,
    throughput_of,
    throughput_program,
    time_of,
    unpack,
    weight_unit,
)
from fairalloc.result import Finding
from fairalloc.solvers.highs import solve_matrix

PARETO_PROBES = 8              # LPs maximising one job's gain alone, when the sum is spread
PROBE_WORK = 100               # job-solves (an LP each): from 100 jobs the probe re-runs once
LIES = (0.0, 0.25, 0.5, 2.0, 4.0)   # a type's reported throughput, times the truth
ENVY_PAIRS = 1 << 18           # (envier class, job) values computed at once


def any_numbers(check):
    """An allocation from elsewhere may hold any finite numbers: products and quotients that
    overflow are inf, which the comparisons handle, not a warning."""
    @functools.wraps(check)
    def checked(*args, **kwargs):
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return check(*args, **kwargs)
    return checked


def infeasibilities(p: HeteroProblem, x: np.ndarray, shared: np.ndarray | None = None
                    ) -> list[str]:
    """What makes time fractions infeasible (empty when they are feasible); ``shared`` (n, n,
    k): the time each two jobs share a GPU (``shared_problems``)."""
    problems = []
    if np.any(x < -RTOL):
        j, k = np.argwhere(x < -RTOL)[0]
        problems.append(f"{p.ids[j]} has negative time {x[j, k]:g} on {p.types[k]}")
    rows = x.sum(axis=1) + (0.0 if shared is None else shared.sum(axis=(1, 2)))
    over = np.flatnonzero(rows > 1 + RTOL)
    if over.size:
        problems.append(f"{p.ids[over[0]]}'s time sums to {rows[over[0]]:.6g} > 1")
    if shared is not None:
        problems += shared_problems(p, shared)
    used = (p.scale[:, None] * x).sum(axis=0) + pair_gpus(p, shared)
    full = np.flatnonzero(used > p.workers * (1 + RTOL) + RTOL)
    if full.size:
        k = full[0]
        problems.append(f"{p.types[k]}: {used[k]:.6g} GPUs in use of {p.workers[k]:g}")
    misplaced = (x > RTOL) & (p.scale[:, None] > p.workers[None, :])
    if misplaced.any():
        j, k = np.argwhere(misplaced)[0]
        problems.append(f"{p.ids[j]} needs {p.scale[j]:g} GPUs, {p.types[k]} has "
                        f"{p.workers[k]:g}")
    return problems


def shared_problems(p: HeteroProblem, shared: np.ndarray) -> list[str]:
    """What makes shared time infeasible: negative, not the same for both jobs of a pair, or
    given to two jobs that cannot share that type (``colocated``: no co-located throughput,
    different scale factors, too few GPUs, a job with itself)."""
    problems = []
    if np.any(shared < -RTOL):
        i, j, k = np.argwhere(shared < -RTOL)[0]
        problems.append(f"{p.ids[i]} shares negative time {shared[i, j, k]:g} with "
                        f"{p.ids[j]} on {p.types[k]}")
    apart = np.abs(shared - shared.transpose(1, 0, 2)) > RTOL
    if apart.any():
        i, j, k = np.argwhere(apart)[0]
        problems.append(f"{p.ids[i]} shares {shared[i, j, k]:g} of {p.types[k]} with "
                        f"{p.ids[j]}, which shares {shared[j, i, k]:g} with it")
    cannot = (shared > RTOL) & (colocated(p) <= 0)
    if cannot.any():
        i, j, k = np.argwhere(cannot)[0]
        problems.append(f"{p.ids[i]} and {p.ids[j]} cannot share {p.types[k]} (no co-located "
                        "throughput of both, or different scale factors)")
    return problems


@any_numbers
def feasibility(p: HeteroProblem, allocation: Allocation, **_) -> Finding:
    """x >= 0; each job's time (alone and shared) sums to at most 1; each type's GPUs in use
    (sum_j s_j x_jk, and each pair sharing s GPUs once) at most W_k; no time on a type whose
    GPUs are fewer than the job's scale factor; shared time only where two jobs can share."""
    problems = infeasibilities(p, time_of(p, allocation), shared_of(p, allocation))
    if problems:
        return Finding("feasibility", False, "; ".join(problems), {"problems": problems})
    return Finding("feasibility", True, "time fractions within every job's 1 and every "
                   "type's GPUs")


@any_numbers
def sharing_incentive(p: HeteroProblem, allocation: Allocation, **_) -> Finding:
    """Every job gets at least its isolated throughput: E_j >= E_j^iso (E_j with its shared
    time)."""
    e = throughput_of(p, allocation)
    iso = isolated_throughput(p)
    ratio = e / iso
    j = int(np.argmin(ratio))
    if ratio[j] < 1 - RTOL:
        short = int((ratio < 1 - RTOL).sum())
        return Finding("sharing_incentive", False, f"{short} jobs below their isolated "
                       f"throughput; worst {p.ids[j]} at {ratio[j]:.4g} of it",
                       {"job": p.ids[j], "throughput": e[j], "isolated": iso[j]})
    return Finding("sharing_incentive", True, f"every job at least its isolated throughput "
                   f"(smallest ratio {ratio[j]:.4g})")


def _bundle_values(p: HeteroProblem, x: np.ndarray, i: np.ndarray, j: np.ndarray
                   ) -> np.ndarray:
    """What each job i[a] makes of job j[a]'s GPU time scaled by w_i / w_j: its time
    s_j x_jk / s_i on each type, at most 1 in all (its best types first), at i's throughputs.
    Vectorised over the pairs, one type rank at a time, with the arithmetic of the greedy fill
    of one pair, so that alike jobs get the same values bit for bit."""
    fits = p.scale[:, None] <= p.workers[None, :]
    order = np.argsort(-np.where(fits, p.throughput, -1.0), axis=1, kind="stable")
    left, value = np.ones(i.size), np.zeros(i.size)
    for rank in range(p.k):
        k = order[i, rank]
        time = x[j, k] * p.scale[j] / p.scale[i] * p.weights[i] / p.weights[j]
        fill = fits[i, k] & (left > 0)
        take = np.minimum(time, left)
        value = np.where(fill, value + take * p.throughput[i, k], value)
        left = np.where(fill, left - take, left)
    return value


def _excess(value, e):
    """How much a bundle's value exceeds E_i, relatively (the witness's measure)."""
    return value / np.maximum(e, 1e-300)


def _envies(value, e, unit):
    """Whether a bundle's value beats E_i by more than ``RTOL`` of the envier's ``unit``
    (``own_unit``): relative, so the verdict is the same in any unit of steps."""
    return value > e + RTOL * unit


def own_unit(p: HeteroProblem, e: np.ndarray) -> np.ndarray:
    """Each job's unit of throughput for the checks' tolerances: the larger of E_j and
    E_j^iso (a job with nothing still has a scale: the throughput it would have alone)."""
    return np.maximum(e, isolated_throughput(p))


@any_numbers
def envy_freeness(p: HeteroProblem, allocation: Allocation, **_) -> Finding:
    """No job i would make more steps/s of job j's GPU time (scaled by w_i / w_j and by the
    scale factors, at most 1 of time in all) than of its own: every pair, exactly. Jobs alike
    as enviers value every bundle alike, so each class of them values the n bundles once
    (``best_of_others``: classes x n values, not n^2): a job envies when the best bundle other
    than its own beats E_i. The witness is the pair whose value most exceeds E_i (relatively),
    the first by envier then envied among equals. An allocation in which jobs share GPUs is
    ``unchecked``: a pair's time serves two jobs at once, so no job's time is a bundle
    another could take in its place."""
    if shared_of(p, allocation) is not None:
        return Finding("envy_freeness", "unchecked", "jobs share GPUs: a pair's time serves "
                       "both of its jobs, and is no bundle another job could take alone")
    x = time_of(p, allocation)
    e = effective(p, x)
    unit = own_unit(p, e)
    jobs = np.arange(p.n)

    def values(reps: np.ndarray) -> np.ndarray:
        pairs = _bundle_values(p, x, np.repeat(reps, p.n), np.tile(jobs, reps.size))
        return pairs.reshape(reps.size, p.n)

    # an envier enters a bundle's value through its throughputs, scale factor and weight
    others_best = best_of_others(values, np.column_stack([p.throughput, p.scale, p.weights]),
                                 ENVY_PAIRS)
    envious = _envies(others_best, e, unit)
    if not envious.any():
        return Finding("envy_freeness", True, f"no job prefers another's time (all "
                       f"{p.n * (p.n - 1)} ordered pairs)")
    excess = np.where(envious, _excess(others_best, e), -np.inf)
    i = int(np.argmax(excess))
    value = values(np.array([i]))[0]
    worst = _envies(value, e[i], unit[i]) & (_excess(value, e[i]) == excess[i]) & (jobs != i)
    j = int(np.argmax(worst))
    return Finding("envy_freeness", False, f"{p.ids[i]} envies {p.ids[j]}: {value[j]:.6g} "
                   f"steps/s from its time against {e[i]:.6g} from its own",
                   {"envious": p.ids[i], "envied": p.ids[j], "own": e[i],
                    "from_bundle": float(value[j])})


def within_polytope(p: HeteroProblem, x: np.ndarray, shared: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray | None]:
    """Time fractions (and shared ones) feasible up to ``RTOL`` made exactly feasible:
    negatives and time where the job (the pair) cannot run dropped, a pair's time the smaller
    of its two jobs', then scaled down until every job's time and every type's GPUs fit (by
    at most 1 + RTOL, so no job loses more than that share of its throughput)."""
    x = np.where(eligible(p), np.clip(x, 0.0, None), 0.0)
    rows = x.sum(axis=1)
    if shared is not None:
        shared = np.where(colocated(p) > 0, np.clip(shared, 0.0, None), 0.0)
        shared = np.minimum(shared, shared.transpose(1, 0, 2))
        rows = rows + shared.sum(axis=(1, 2))
    used = (p.scale[:, None] * x).sum(axis=0) + pair_gpus(p, shared)
    over = max(1.0, float(rows.max(initial=0.0)),
               float(np.max(np.divide(used, p.workers, out=np.zeros_like(used),
                                      where=p.workers > 0), initial=0.0)))
    return x / over, None if shared is None else shared / over


def pareto_space(p: HeteroProblem, shared: np.ndarray | None, unit: np.ndarray):
    """The allocations Pareto efficiency is judged among, as an LP ``Program`` with each job's
    utility in units of ``unit``, and how its variables read back as (x, shared): time alone
    (``throughput_program``) for an allocation without shared time, Gavel's packing polytope
    (``packed_program``) for one with it."""
    if shared is None:
        program = throughput_program(p).per_unit(unit)
        return program, lambda v: (program.to_time(v, p.k), None)
    packed, pairs = packed_program(p)
    return packed.per_unit(unit), lambda v: unpack(p, v, pairs)


def gains_lp(p: HeteroProblem, program, floor: np.ndarray, job: int | None = None):
    """The LP maximising the jobs' utilities (all of them summed, or ``job``'s alone) while
    every job keeps at least its ``floor``: HiGHS's report."""
    weights = np.ones(p.n) if job is None else (np.arange(p.n) == job).astype(float)
    parts = sum_lp(program, weights, floor)
    return solve_matrix(*parts, interior=interior_pays(parts[0]))


@any_numbers
def pareto_efficiency(p: HeteroProblem, allocation: Allocation, **_) -> Finding:
    """No allocation gives every job at least its E_j and some job more than a relative
    ``PARETO_GAIN``. Each job counts in its own unit u_j (E_j, or E_j^iso for a job that gets
    nothing), so the solver's absolute tolerances are relative ones. The LP max sum_j E'_j /
    u_j s.t. E'_j >= E_j (the allocation made exactly feasible first, ``within_polytope``):
    when it gains at most ``PARETO_GAIN`` in all, no job alone gains more (holds). Else its
    allocation, or one of ``PARETO_PROBES`` LPs that maximise one job's gain alone, is the
    witness, checked from the time fractions themselves: feasible, one job above the
    allocation by more than ``PARETO_GAIN``, none below it by more than ``PARETO_LOSS``.
    Without such a witness: unrefuted. An allocation in which jobs share GPUs is judged among
    the allocations of Gavel's packing polytope (``pareto_space``), one without among those
    without shared time, as every check judges an allocation in its own polytope."""
    x, shared = time_of(p, allocation), shared_of(p, allocation)
    if infeasibilities(p, x, shared):
        return Finding("pareto_efficiency", "unchecked", "the allocation is not feasible (see "
                       "feasibility): no feasible allocation to compare it with")
    e = throughput_of(p, allocation)
    unit = np.where(e > 0, e, isolated_throughput(p))
    program, decode = pareto_space(p, shared, unit)
    floor = throughput(p, *within_polytope(p, x, shared)) / unit
    try:
        report = gains_lp(p, program, floor)
        if report.status != "optimal" or report.objective is None:
            # HiGHS can call an LP optimal without a primal point (a job with 1e-9 of a
            # type's time beside weights 1e9 apart)
            ended = report.status if report.objective is not None else "without a solution"
            return Finding("pareto_efficiency", "unchecked", f"the Pareto LP ended {ended}")
        total = report.objective - float(floor.sum())
        if total <= PARETO_GAIN:
            return Finding("pareto_efficiency", True, f"no job can gain more than "
                           f"{PARETO_GAIN:g} of its throughput without another losing (LP: "
                           f"all together {max(total, 0.0):.2g})")
        witness = pareto_witness(p, e, unit, report, decode)
        change = (throughput(p, *decode(report.x)) - e) / unit
        alone = np.argsort(-change, kind="stable")[:PARETO_PROBES].tolist()
        for j in alone:
            if witness is not None:
                return witness
            witness = pareto_witness(p, e, unit, gains_lp(p, program, floor, job=j), decode)
    except SolverError as exc:
        return Finding("pareto_efficiency", "unchecked", f"the Pareto LP failed: {exc}")
    if witness is not None:
        return witness
    return Finding("pareto_efficiency", "unrefuted", f"together the jobs can gain {total:.2g} "
                   f"of their throughputs (LP), but no allocation found gives one job more "
                   f"than {PARETO_GAIN:g} with none losing more than {PARETO_LOSS:g} (the "
                   f"sum and {len(alone)} of {p.n} jobs alone tried)")


def throughput(p: HeteroProblem, x: np.ndarray, shared: np.ndarray | None) -> np.ndarray:
    """(n,): E_j of time fractions x and shared ones."""
    return effective(p, x) + pair_throughput(p, shared)


def pareto_witness(p: HeteroProblem, e: np.ndarray, unit: np.ndarray, report, decode
                   ) -> Finding | None:
    """The refutation an LP's allocation gives (its variables read by ``decode``), checked on
    its time fractions: feasible, some job above ``PARETO_GAIN`` of its unit, none below
    ``PARETO_LOSS``; None otherwise."""
    if report.status != "optimal" or report.x is None:
        return None
    better_x, better_shared = decode(report.x)
    better = throughput(p, better_x, better_shared)
    change = (better - e) / unit
    j = int(np.argmax(change))
    loss = float(max(-change.min(), 0.0))
    if change[j] <= PARETO_GAIN or loss > PARETO_LOSS or infeasibilities(p, better_x,
                                                                          better_shared):
        return None
    return Finding("pareto_efficiency", False, f"another allocation gives {p.ids[j]} "
                   f"{better[j]:.6g} steps/s instead of {e[j]:.6g} (+{change[j]:.3g} of it) and "
                   f"no job below its own by more than {PARETO_LOSS:g} of it (largest loss "
                   f"{loss:.1g})",
                   {"job": p.ids[j], "throughput": e[j], "could_have": better[j],
                    "largest_loss": loss})


def _max_min_shortfall(p: HeteroProblem, e: np.ndarray, reference: np.ndarray,
                       packed: bool = False) -> tuple[int, float, float]:
    """(the job at the smallest level E_j / (w_j R_j), that level, the max-min LP's optimum
    on the methods' ``level_program`` for reference R, or with ``packed`` on Gavel's packing
    polytope, ``packed_program``)."""
    level = e / (p.weights * reference)
    program = level_program(p, reference)
    if packed:
        program = packed_program(p)[0].per_unit(reference * relative_weights(p))
    parts = max_min_lp(program, np.ones(p.n), {})
    report = solve_matrix(*parts, interior=interior_pays(parts[0]))
    j = int(np.argmin(level))
    return j, float(level[j]), report.objective / weight_unit(p)


@any_numbers
def max_min(p: HeteroProblem, allocation: Allocation, **_) -> Finding:
    """The smallest weighted level equals the max-min LP's optimum, to a relative
    ``MAX_MIN_SHORTFALL``: the kind's level E_j / (w_j E_j^iso), or else Gavel's, s_j E_j /
    (w_j P_j) (``gavel_reference``; Gavel's max-min maximises that one). The detail says
    which holds; a failure is the kind's, with its job as witness. An allocation in which
    jobs share GPUs is judged on Gavel's packing polytope (both LPs span shared time, and E_j
    counts it)."""
    e = throughput_of(p, allocation)
    packed = shared_of(p, allocation) is not None
    j, level, best = _max_min_shortfall(p, e, isolated_throughput(p), packed)
    if level >= best * (1 - MAX_MIN_SHORTFALL):
        return Finding("max_min", True, f"smallest weighted normalised throughput "
                       f"{level:.6g} = the LP's max-min {best:.6g}")
    _, gavel, gavel_best = _max_min_shortfall(p, e, gavel_reference(p), packed)
    if gavel >= gavel_best * (1 - MAX_MIN_SHORTFALL):
        return Finding("max_min", True, f"Gavel's level (s_j E_j / (w_j P_j)) {gavel:.6g} = "
                       f"its LP's max-min {gavel_best:.6g} (the smallest weighted normalised "
                       f"throughput {level:.6g} is below its max-min {best:.6g})")
    return Finding("max_min", False, f"smallest weighted normalised throughput {level:.6g} "
                   f"({p.ids[j]}); the max-min is {best:.6g} (Gavel's level {gavel:.6g} "
                   f"against {gavel_best:.6g})",
                   {"job": p.ids[j], "level": level, "max_min": best})


@any_numbers
def strategy_proofness(p: HeteroProblem, allocation: Allocation, *, mechanism=None,
                       **_) -> Finding:
    """Probe: a job reports one type's throughput scaled (0, 1/4, 1/2, 2, 4 times the truth);
    does it make more steps/s, at its true throughputs, under the mechanism's outcome? Jobs
    in spec order, as many re-runs as ``probe_budget`` allows n jobs at ``PROBE_WORK`` (at
    least one: each re-run costs a solve); the detail says how much was probed."""
    if mechanism is None:
        return no_mechanism()
    truth = throughput_of(p, allocation)
    unit = own_unit(p, truth)

    def misreports(j: int) -> list[tuple[str, np.ndarray]]:
        out = []
        for k in np.flatnonzero(p.throughput[j] > 0):
            for factor in LIES:
                row = p.throughput[j].copy()
                row[k] *= factor
                if row.max() > 0:
                    out.append((f"{p.types[k]} x {factor:g}", row))
        return out

    def gain(j: int, label: str, liar: HeteroProblem, outcome) -> dict | None:
        got = float(throughput_of(p, outcome.allocation)[j])
        extra = got - truth[j]
        if extra > RTOL * unit[j]:
            return {"gain": extra / unit[j], "job": p.ids[j], "report": label,
                    "truthful": truth[j], "lying": got}
        return None

    budget = probe_budget(p.n, 1, PROBE_WORK)
    best, probed, runs = probe(mechanism, range(p.n), misreports,
                               lambda j, row: p.with_throughput(j, row), gain, budget)
    scope = (f"{runs} misreports of {probed} of {p.n} jobs, one type's throughput scaled; "
             f"at most {budget} re-runs at this size")
    if best["gain"] > 0:
        return Finding("strategy_proofness", False,
                       f"{best['job']} gains {best['gain']:.3g} of its throughput by reporting "
                       f"{best['report']} ({scope})", best)
    return nothing_found(scope)

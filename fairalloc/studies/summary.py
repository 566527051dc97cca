"""Summaries of a study's rows: per group (grid point × method by default) the count, the
status counts, statistics of each value (the ratio to the reference, or a metric) with a
bootstrap 95% confidence interval of the mean, the mean solve time, and per check the share of
each verdict.

Only rows that solved (status optimal, feasible or heuristic) and have a value enter a value's
statistics; the others are counted apart by why (``time_limit``, ``error``, ``exact
time_limit`` for a reference the exact method did not prove), never mixed in silently.

Times: a worker's first task pays one-off costs (imports, the first model in the process) that
the others do not; a row's ``warm`` column says which. Time statistics (``mean_time_s``, and
``time_s`` as a value) are over warm rows only, the cold ones counted apart; a group with only
cold rows (one task a worker) gets the cold mean, marked ``time_cold``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from fairalloc.errors import ArgumentError
from fairalloc.registry import KINDS
from fairalloc.render import check_heads, fmt
from fairalloc.replay.measures import HOURS, hours_text
from fairalloc.result import MARKS, VERDICTS, check_column
from fairalloc.studies.store import OK

BOOTSTRAP = 2000            # resamples of the mean
TIME_NOTE = ("time (s): the mean over warm tasks (a worker's first task, which pays the imports "
             "and first model, is left out; '(cold)': a group with first tasks only)")
CONFIDENCE = 0.95


def percentiles(values: np.ndarray, baseline: float | None = None) -> dict[str, float]:
    """Mean and 10th / 50th / 90th percentiles of ``values`` and, with a baseline, the
    fraction above it.

    >>> percentiles(np.array([1.0, 2.0, 3.0]), baseline=1.5)
    {'mean': 2.0, 'p10': 1.2, 'p50': 2.0, 'p90': 2.8, 'above_1.5': 0.6666666666666666}
    """
    out = {"mean": float(values.mean()), "p10": float(np.percentile(values, 10)),
           "p50": float(np.percentile(values, 50)), "p90": float(np.percentile(values, 90))}
    if baseline is not None:
        out[f"above_{baseline:g}"] = float((values > baseline).mean())
    return out


def mean_interval(values: np.ndarray, seed: int = 0,
                  resamples: int = BOOTSTRAP) -> tuple[float, float]:
    """The percentile-bootstrap ``CONFIDENCE`` interval of the mean of ``values`` (seeded:
    the same rows give the same interval); one value gives (value, value).

    >>> lo, hi = mean_interval(np.arange(100.0))
    >>> bool(lo < 49.5 < hi), bool(hi - lo < 15)
    (True, True)
    """
    n = len(values)
    if n == 1:
        return float(values[0]), float(values[0])
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    chunk = max(1, 4_000_000 // n)          # bounded memory at any n
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        means[start:stop] = values[rng.integers(0, n, (stop - start, n))].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    return float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))


def statistics(values: np.ndarray, baseline: float | None = None) -> dict[str, float]:
    """``percentiles`` with the bootstrap interval of the mean (``ci_low``, ``ci_high``)."""
    low, high = mean_interval(values)
    return {"n": len(values), **percentiles(values, baseline), "ci_low": low, "ci_high": high}


def _groups(rows: dict[str, np.ndarray], by: list[str],
            methods: list[str] | None = None) -> list[tuple[tuple, np.ndarray]]:
    """(key, row indices) for each distinct combination of the ``by`` columns, in first-seen
    order (grid points in the order the study lists them), methods in ``methods`` order."""
    keys = list(zip(*(rows[b].tolist() for b in by))) if by else [()] * len(rows["status"])
    order: dict[tuple, list[int]] = {}
    for i, key in enumerate(keys):
        order.setdefault(key, []).append(i)
    groups = [(key, np.array(idx)) for key, idx in order.items()]
    if methods and "method" in by:
        at = by.index("method")
        rank = {m: k for k, m in enumerate(methods)}
        points: dict[tuple, int] = {}
        for key, _ in groups:
            points.setdefault(key[:at] + key[at + 1:], len(points))
        groups.sort(key=lambda g: (points[g[0][:at] + g[0][at + 1:]],
                                   rank.get(g[0][at], len(rank))))
    return groups


def summarise(rows: dict[str, np.ndarray], by: list[str], values: list[str],
              baseline: float | None = None, methods: list[str] | None = None) -> list[dict]:
    """One record per group of rows (``methods``: the order of the method groups): ``by``
    values, ``count``, ``statuses`` {status: count},
    per value its ``statistics`` over the rows that solved (``None`` when none did) and
    ``apart`` {why: count} for the rows left out, ``mean_time_s``, and ``checks`` {check:
    {verdict: share}}."""
    checks = [c for c in rows if c.startswith("check.")]
    status = rows["status"]
    warm = warm_rows(rows)
    out = []
    for key, idx in _groups(rows, by, methods):
        record: dict = dict(zip(by, key))
        record["count"] = len(idx)
        record["statuses"] = dict(sorted(
            zip(*np.unique(status[idx].astype(str), return_counts=True))))
        record["statuses"] = {k: int(v) for k, v in record["statuses"].items()}
        solved = np.isin(status[idx].astype(str), OK)
        for value in values:
            column = rows[value][idx].astype(float)
            counted = solved & ~np.isnan(column)
            apart: dict[str, int] = {}
            for i in np.flatnonzero(~counted):
                why = str(status[idx][i])
                if why in OK:
                    why = str(rows["reference_status"][idx][i]) if value == "ratio" and \
                        "reference_status" in rows else "no value"
                apart[why] = apart.get(why, 0) + 1
            cold = counted & ~warm[idx] if value == "time_s" else np.zeros(len(idx), bool)
            if cold.any():
                apart["cold start"] = int(cold.sum())
                counted &= ~cold
            record[value] = statistics(column[counted], baseline) if counted.any() else None
            record[f"{value} apart"] = apart
        times = rows["time_s"][idx].astype(float)
        timed = ~np.isnan(times)
        record["time_cold"] = not (timed & warm[idx]).any() and bool((timed & ~warm[idx]).any())
        chosen = timed & (~warm[idx] if record["time_cold"] else warm[idx])
        record["mean_time_s"] = float(times[chosen].mean()) if chosen.any() else None
        record["cold"] = int((~warm[idx]).sum())
        record["checks"] = {}
        for c in checks:
            verdicts = np.array([v for v in rows[c][idx] if v is not None], dtype=object)
            if len(verdicts):       # every method's own bound shares one column
                record["checks"][check_column(c.removeprefix("check."))] = {
                    v: float((verdicts == v).mean()) for v in VERDICTS}
        out.append(record)
    return out


def warm_rows(rows: dict[str, np.ndarray]) -> np.ndarray:
    """Which rows ran warm (``warm`` true; every row of a store made before the column)."""
    count = len(rows["status"])
    if "warm" not in rows:
        return np.ones(count, dtype=bool)
    return np.array([bool(v) if v is not None and v == v else True for v in rows["warm"]],
                    dtype=bool)


@dataclass(frozen=True)
class Unit:
    """The unit a value's statistics are printed in (stored ones keep theirs): its name and
    the text of a stored number in it."""

    name: str
    text: Callable[[float], str]


def _general(value: float) -> str:
    return f"{value:.4g}"


def summary_cells(records: list[dict], by: list[str], values: list[str],
                  baseline: float | None, checks: bool = True,
                  units: Mapping[str, Unit] | None = None) -> tuple[list, list]:
    """The header and rows (text) of a study summary: the groups, counts, each value's mean
    with its 95% interval and percentiles (and the rows counted apart), time, and the checks'
    verdicts; with several values, a row per value and group. A value in ``units`` is printed
    in its unit, named in the header (or, with several values, beside the value's name)."""
    units = units or {}
    apart = any(r[f"{v} apart"] for r in records for v in values)
    checks = list(dict.fromkeys(c for r in records for c in r["checks"])) if checks else []
    one = units.get(values[0]) if len(values) == 1 else None
    stats = [f"{h} ({one.name})" if one else h for h in ("mean", "95% CI", "p10", "p50", "p90")]
    header = [*(["value"] if len(values) > 1 else []), *by, "n", "statuses", *stats,
              *([f"> {baseline:g}"] if baseline is not None else []),
              *(["apart"] if apart else []), "time (s)", *check_heads(checks)]
    body = []
    for v in values:
        unit = units.get(v)
        text = unit.text if unit else _general
        for r in records:
            row = [value_name(v, unit)] if len(values) > 1 else []
            row += [fmt(r[b]) for b in by]
            row += [str(r["count"]), ", ".join(f"{k} {n}" for k, n in r["statuses"].items())]
            st = r[v]
            if st is None:
                row += ["—", "", "", "", ""] + ([""] if baseline is not None else [])
            else:
                row += [text(st["mean"]), f"{text(st['ci_low'])}–{text(st['ci_high'])}",
                        *(text(st[k]) for k in ("p10", "p50", "p90"))]
                if baseline is not None:
                    row.append(f"{st[f'above_{baseline:g}']:.0%}")
            if apart:
                row.append(", ".join(f"{k} {n}" for k, n in r[f"{v} apart"].items()))
            row.append("—" if r["mean_time_s"] is None else f"{r['mean_time_s']:.3g}"
                       + (" (cold)" if r.get("time_cold") else ""))
            row += [verdict_shares(r["checks"].get(c, {})) for c in checks]
            body.append(row)
    return header, body


def verdict_shares(shares: Mapping[str, float]) -> str:
    """A check's cell: each verdict's mark and its share of the rows, a space between (``–
    100%`` for all unchecked: written together, the mark read as a minus sign).

    >>> verdict_shares({"holds": 0.75, "fails": 0.25, "unchecked": 0.0})
    '✓ 75%, ✗ 25%'
    """
    return ", ".join(f"{MARKS[k]} {share:.0%}" for k, share in shares.items() if share > 0)


def value_name(value: str, unit: Unit | None) -> str:
    """A value's name in a summary's rows: a metric's without ``metric.``, one printed in a
    unit of its own with it instead of the stored one's (``average_jct_s`` in hours:
    ``average_jct (h)``)."""
    name = value.removeprefix("metric.")
    return f"{name.removesuffix('_s')} ({unit.name})" if unit else name


def ratio_label(reference: str) -> str:
    return f"ratio to the {reference.replace('_', ' ')} (1 = as good, above 1 worse)"


# a replay study's values: the run's measures (``studies.replays``), durations stored in
# seconds and printed in hours, as ``fairalloc replay`` prints them
REPLAY_VALUES = ["metric.average_jct_s"]
REPLAY_DURATIONS = ("metric.average_jct_s", "metric.p50_jct_s", "metric.p90_jct_s",
                    "metric.p99_jct_s", "metric.average_queueing_s", "metric.makespan_s",
                    "metric.end_s")
# each names the jobs it is over: a run's window (every job when its document names none), all
# its jobs, or the whole run
REPLAY_LABELS = {
    "metric.average_jct_s": "average JCT, window", "metric.p50_jct_s": "median JCT, window",
    "metric.p90_jct_s": "90th percentile JCT, window",
    "metric.p99_jct_s": "99th percentile JCT, window",
    "metric.average_queueing_s": "average queueing delay, window",
    "metric.makespan_s": "makespan, all jobs", "metric.end_s": "simulated time reached",
    "metric.worst_rho": "worst rho (JCT / isolated JCT), window",
    "metric.share_rho_above_1": "share of jobs with rho > 1, window",
    "metric.jobs_per_s": "simulated jobs per second", "time_s": "wall time (s)"}


def value_units(replay: bool = False) -> dict[str, Unit]:
    """The values a study's printed summary shows in a unit of their own: a replay study's
    durations in hours."""
    return {v: Unit(HOURS, hours_text) for v in REPLAY_DURATIONS} if replay else {}


def value_labels(reference: str, replay: bool = False) -> dict[str, str]:
    """Axis and table labels of a study's values (with the unit each is printed in)."""
    if not replay:
        return {"ratio": ratio_label(reference)}
    units = value_units(replay)
    return {v: f"{label} ({units[v].name})" if v in units else label
            for v, label in REPLAY_LABELS.items()}


def default_values(replay: bool = False) -> list[str]:
    """What a study's summary shows unless told: the ratio to the reference, or a replay
    study's average JCT."""
    return list(REPLAY_VALUES) if replay else ["ratio"]


def default_by(grid: list[str], replay: bool = False) -> list[str]:
    """A study's groups unless told: its grid keys and method; a replay study's seeds
    (grid keys named ``...seed``) are left out, so each group's statistics are over them."""
    kept = [k for k in grid if not (replay and k.rsplit(".", 1)[-1].endswith("seed"))]
    return [*kept, "method"]


def study_title(name: str, kind: str, reference: str, replay: bool = False) -> str:
    if replay:
        return f"{name} ({kind} replays)"
    return f"{name} ({kind}): ratio to {reference.replace('_', ' ')}"


def values_by_label(rows: dict, by: list[str], values: list[str]) -> dict:
    """value -> "group method" label -> the values of the rows that solved."""
    out: dict[str, dict] = {v: {} for v in values}
    solved = [str(s) in OK for s in rows["status"]]
    for i, ok in enumerate(solved):
        label = " ".join(str(rows[b][i]) for b in by)
        for v in values:
            x = float(rows[v][i])
            if ok and x == x:
                out[v].setdefault(label, []).append(x)
    return {v: {label: np.array(xs) for label, xs in by_label.items()}
            for v, by_label in out.items()}


@dataclass
class StudySummary:
    """A stored study summarised: its ``record`` (name, kind, spec, grid, reference), its
    ``rows``, the summary ``records`` per group of ``by`` of each of ``values``, its title and
    value ``labels`` and the ``units`` its values are printed in (see ``value_units``)."""

    title: str
    record: dict
    rows: dict
    by: list[str]
    values: list[str]
    labels: dict[str, str]
    records: list[dict]
    units: dict[str, Unit] = field(default_factory=dict)


def study_summary(record: dict, rows: dict, by: Sequence[str] | None = None,
                  values: Sequence[str] | None = None) -> StudySummary:
    """The summary of a stored study (its store ``record`` and ``rows``): grouped by ``by``
    (default: the grid's keys and method, a replay study's seeds left out; methods in the
    study's order), of each of ``values`` (number columns; default ``ratio``, a replay study's
    average JCT). A column the rows do not have, or one that is not a
    number, raises :class:`ArgumentError`."""
    columns = list(rows)
    replay = record.get("replay", False)
    by = list(by) if by is not None else default_by(record["grid"], replay)
    values = list(values or default_values(replay))
    for argument, names in (("by", by), ("values", values)):
        unknown = [n for n in names if n not in columns]
        if unknown:
            raise ArgumentError(argument, f"no column {', '.join(map(repr, unknown))} in the "
                                          f"study's results (columns: {', '.join(columns)})")
    numeric = [n for n in columns if rows[n].dtype.kind in "fiub"]
    text = [n for n in values if n not in numeric]
    if text:
        verb = "is not a number column" if len(text) == 1 else "are not number columns"
        raise ArgumentError("values", f"{', '.join(map(repr, text))} {verb}; the numbers are: "
                                      f"{', '.join(numeric)}")
    methods = record["spec"].get("methods") or list(KINDS[record["kind"]].methods)
    if replay:          # a replay study's methods are its policies, as they ran
        methods = list(dict.fromkeys(rows["method"]))
    return StudySummary(study_title(record["study"], record["kind"], record["reference"],
                                    replay),
                        record, rows, by, values, value_labels(record["reference"], replay),
                        summarise(rows, by, values, methods=methods), value_units(replay))

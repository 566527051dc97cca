"""hetero ``agnostic-finish-time`` (Gavel's ``finish_time_fairness``): finish-time fairness as
if every type were as fast as the job's reference type. Its largest ratio is the optimum of
``finish-time`` on the spec with every type at that speed; beyond it the ratios are the
leximin (no time idle that a job short of its whole time could use); a reference type the
cluster or a job lacks is refused with its path."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest
from clitools import cli, write

import fairalloc
from fairalloc.models.hetero import eligible, time_of
from fairalloc.studies.hetero import random_spec

GUARD_S = 120          # a solve past this hangs


def alike(spec: dict, reference: str) -> dict:
    """The spec with each job's throughput on every type its ``reference`` type's."""
    p = fairalloc.load_spec(spec).problem
    k = p.types.index(reference)
    out = copy.deepcopy(spec)
    for job, row in zip(out["jobs"], p.throughput):
        job.pop("model", None)
        job["throughput"] = {t: float(row[k]) for t in p.types}
    return out


def agnostic_ratios(spec: dict, reference: str, x: np.ndarray) -> np.ndarray:
    """Each job's finish-time ratio with every type at its reference speed."""
    p = fairalloc.load_spec(spec).problem
    speed = p.throughput[:, p.types.index(reference)]
    iso = np.where(eligible(p), p.workers / (p.n * p.scale[:, None]), 0.0).sum(axis=1)
    iso = np.minimum(iso, 1.0)
    return (p.elapsed + p.steps / (speed * x.sum(axis=1))) / (p.elapsed
                                                               + p.steps / (speed * iso))


@pytest.mark.parametrize("jobs,workers", [(12, 4), (12, 12), (3, 12)])
@pytest.mark.parametrize("seed", range(3))
def test_its_largest_ratio_is_finish_times_optimum_at_one_speed(seed, jobs, workers):
    """Every job of these specs runs on every type, so spreading its time in proportion to
    the GPUs loses nothing: the largest ratio equals ``finish-time``'s (exact to 1e-9) on
    the same spec with every type at the V100's speed (Gavel's substitution)."""
    spec = random_spec(seed, jobs=jobs, workers=workers)
    spec["options"] = {"reference_type": "v100"}
    result = fairalloc.solve(spec, "agnostic-finish-time")
    p = fairalloc.load_spec(spec).problem
    rho = agnostic_ratios(spec, "v100", time_of(p, result.allocation))
    optimum = fairalloc.solve(alike(random_spec(seed, jobs=jobs, workers=workers), "v100"),
                              "finish-time").metrics["max_finish_time_ratio"]
    assert rho.max() == pytest.approx(optimum, rel=1e-6)
    assert result.metrics["agnostic_finish_time_ratio"] == pytest.approx(rho.max(), rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_no_time_idles_that_a_job_could_use(seed):
    """A job short of its whole time uses only types whose GPUs are all taken (the leximin
    step after the largest ratio: Gavel's minimax alone may stop anywhere on its face)."""
    spec = random_spec(seed, jobs=6, workers=8)
    p = fairalloc.load_spec(spec).problem
    x = time_of(p, fairalloc.solve(spec, "agnostic-finish-time").allocation)
    full = (p.scale[:, None] * x).sum(axis=0) >= p.workers * (1 - 1e-9)
    for j in np.flatnonzero(x.sum(axis=1) < 1 - 1e-9):
        assert full[x[j] > 0].any(), (seed, j)


def test_the_default_reference_is_each_jobs_fastest_type():
    """Without ``reference_type`` a job's fastest type stands for every type: j1's P100,
    faster than its V100, so the default is the V100 reference with j1's V100 at 6. (The
    ratios depend on the speeds only where the isolated share leaves GPUs idle, here the
    single-GPU job's share capped at its whole time; where it fills every type, every ratio
    is 1 there and no allocation lowers one without raising another above 1.)"""
    jobs = [{"id": "j0", "throughput": {"p100": 1, "v100": 1}, "steps_remaining": 3600,
             "time_elapsed": 0},
            {"id": "j1", "scale_factor": 4, "throughput": {"p100": 6, "v100": 3},
             "steps_remaining": 36000, "time_elapsed": 7200},
            {"id": "j2", "scale_factor": 4, "throughput": {"p100": 2, "v100": 4},
             "steps_remaining": 36000, "time_elapsed": 0}]
    spec = {"problem": "hetero", "workers": {"p100": 4, "v100": 4}, "jobs": jobs}
    default = fairalloc.solve(spec, "agnostic-finish-time")
    by_v100 = fairalloc.solve({**spec, "options": {"reference_type": "v100"}},
                              "agnostic-finish-time")
    faster = copy.deepcopy(spec)
    faster["jobs"][1]["throughput"]["v100"] = 6
    faster["options"] = {"reference_type": "v100"}
    as_fastest = fairalloc.solve(faster, "agnostic-finish-time")
    p = fairalloc.load_spec(spec).problem
    x = time_of(p, default.allocation)
    assert x == pytest.approx(time_of(p, as_fastest.allocation), rel=1e-9)
    assert not np.allclose(x, time_of(p, by_v100.allocation), rtol=1e-3)


def test_a_reference_type_the_cluster_lacks_is_refused(tmp_path, capsys):
    jobs = [{"id": "a", "throughput": {"k80": 1, "v100": 2}, "steps_remaining": 100,
             "time_elapsed": 0}]
    spec = {"problem": "hetero", "workers": {"k80": 1, "v100": 1}, "jobs": jobs,
            "options": {"method": "agnostic-finish-time", "reference_type": "a100"}}
    code, out, err = cli(capsys, "solve", write(tmp_path, spec))
    assert code == 2 and "options.reference_type" in err and "Traceback" not in err, err
    assert "(1 problem)" in err, err


def test_a_job_that_cannot_run_on_the_reference_type_takes_its_fastest():
    """b has no V100 throughput: its K80 stands for every type, as without a reference."""
    jobs = [{"id": "a", "throughput": {"k80": 1, "v100": 2}, "steps_remaining": 100,
             "time_elapsed": 0},
            {"id": "b", "throughput": {"k80": 1, "v100": 0}, "steps_remaining": 100,
             "time_elapsed": 0}]
    spec = {"problem": "hetero", "workers": {"k80": 1, "v100": 1}, "jobs": jobs}
    default = fairalloc.solve(spec, "agnostic-finish-time")
    by_v100 = fairalloc.solve({**spec, "options": {"reference_type": "v100"}},
                              "agnostic-finish-time")
    assert default.metrics == by_v100.metrics


def test_finished_jobs_have_no_ratio_and_all_finished_does_not_apply(tmp_path, capsys):
    jobs = [{"id": "a", "throughput": {"v100": 2}, "steps_remaining": 0, "time_elapsed": 50},
            {"id": "b", "throughput": {"v100": 1}, "steps_remaining": 900, "time_elapsed": 0}]
    spec = {"problem": "hetero", "workers": {"v100": 1}, "jobs": jobs}
    result = fairalloc.solve(spec, "agnostic-finish-time")
    x = time_of(fairalloc.load_spec(spec).problem, result.allocation)
    assert x[1, 0] == pytest.approx(1.0) and x[0, 0] == 0.0
    jobs[1]["steps_remaining"] = 0
    spec["options"] = {"method": "agnostic-finish-time"}
    code, _, err = cli(capsys, "solve", write(tmp_path, spec))
    assert code == 2 and "jobs" in err and "finished" in err, err


def test_a_job_long_elapsed_and_nearly_done_is_placed_in_bounded_time(tmp_path):
    """A job 818,763 s in with 38 s of work left, alone on 36 GPUs: its ratio at its whole
    time is 1, but t_j(1) = a_j / (D_j - e_j) came out 1 - 3e-12 (D_j - e_j loses the digits
    e_j has beyond a_j's), never "at its whole time", and the filling looped for ever (figure
    8's agnostic replay hung). A subprocess under a timeout guards against a hang and
    measures nothing."""
    spec = {"problem": "hetero", "workers": {"v100": 36},
            "options": {"method": "agnostic-finish-time"},
            "jobs": [{"id": "a", "throughput": {"v100": 1}, "steps_remaining": 37.63050026,
                      "time_elapsed": 818762.70201001}]}
    path = write(tmp_path, spec)
    done = subprocess.run([sys.executable, "-c", "import sys; from fairalloc.cli import main; "
                           f"sys.exit(main(['solve', {path!r}, '--format', 'json']))"],
                          capture_output=True, text=True, timeout=GUARD_S)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["allocation"]["a"]["time"]["v100"] == pytest.approx(1.0)


def test_a_replay_naming_a_reference_type_the_cluster_lacks_is_refused_up_front(tmp_path,
                                                                                  capsys):
    """Before, the replay ran and ended in "status error" at its first allocation (exit 1);
    a bad option is bad input: exit 2 naming the policy's key, nothing run."""
    doc = {"replay": "bad", "kind": "hetero", "cluster": {"workers": {"v100": 1, "k80": 1}},
           "trace": {"jobs": [{"id": "a", "arrival": 0, "throughput": {"v100": 2, "k80": 1},
                               "steps": 1000}]},
           "policy": {"method": "agnostic-finish-time", "reference_type": "a100"},
           "mechanism": {"name": "rounds"}}
    code, out, err = cli(capsys, "replay", write(tmp_path, doc))
    assert code == 2 and out == "", (code, out)
    assert "policy.reference_type: no worker type 'a100'" in err and "(1 problem)" in err, err


@pytest.mark.parametrize("probed", [False, True])
def test_ratios_indistinguishable_from_one_still_fill_within_the_gpus(probed):
    """Jobs 1e9 s in with 1e-6 s to go have ratio 1 in doubles at any time share: counted
    as L D_j - e_j, every job was "at its whole time" and the K80s were filled 2.2 of 2
    (the method failed its own feasibility check); and a strategy-proofness probe that
    makes a job run nowhere (its only type's throughput scaled by 0) hung the filling on
    inf / inf. Now each allocation fits and the probes end."""
    jobs = [{"id": "j0", "throughput": {"k80": 5.25e-06, "p100": 0.041},
             "steps_remaining": 1e-06, "time_elapsed": 1e9},
            {"id": "j1", "throughput": {"k80": 2056636.8, "p100": 229.9}, "scale_factor": 2,
             "steps_remaining": 1.0, "time_elapsed": 1e9},
            {"id": "j2", "throughput": {"k80": 0.0049, "p100": 0.0},
             "steps_remaining": 1e-06, "time_elapsed": 1e9 if not probed else 0.0},
            {"id": "j3", "throughput": {"k80": 0.006, "p100": 43660.2}, "scale_factor": 2,
             "steps_remaining": 0.0, "time_elapsed": 1e6}]
    spec = {"problem": "hetero", "workers": {"k80": 2, "p100": 3}, "jobs": jobs}
    result = fairalloc.solve(spec, "agnostic-finish-time")
    verdicts = {f.check: f.verdict for f in result.validation}
    assert verdicts["feasibility"] == "holds"
    assert verdicts["strategy_proofness"] in ("unrefuted", "fails")

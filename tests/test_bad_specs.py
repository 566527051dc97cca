"""Every file in tests/bad_specs/ is a spec that breaks one rule (or, for the three-* files, three).

Each is run through the command line, ``fairalloc solve FILE`` from its folder: it must exit
with code 2, print nothing on stdout, show no traceback, and name on stderr the JSON path of the
problem together with the rule broken. The table below is the single place that says, per file,
which path and which rule keyword are expected.

Every file runs through ``main`` in this process, once, in one module fixture (a subprocess per
file paid Python's and fairalloc's start-up 100 times: 171 s of a loaded run, and again in each
parallel test process); one file of each sort also runs as a real ``fairalloc`` process, which
shares everything after the start-up with ``main``.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from fairalloc.cli import main

BAD = Path(__file__).parent / "bad_specs"

# file -> (JSON path named on stderr, keyword of the rule), one rule per file.
EXPECTED: dict[str, tuple[str, str]] = {
    # model preconditions (stage 3)
    "emrf-split-sum.json": ("users[1].split", "must sum to 1"),
    "emrf-unknown-device.json": ("users[0].split.fpga", "unknown device"),
    "emrf-quoted-device-name.json": ('users[1].split["gpu 1"]', "unknown device"),
    "drf-unknown-resource.json": ("users[1].demand.disk", "unknown resource"),
    "drf-duplicate-id.json": ("users[1].id", "duplicate id 'A'"),
    "drf-zero-demand.json": ("users[0].demand", "positive amount"),
    "drf-fractional-max-tasks.json": ("users[1].max_tasks", "whole number"),
    # parsing (stage 1)
    "emrf-nan.json": ("knob", "NaN is not a finite number"),
    "drf-infinity.json": ("capacity.cpu", "Infinity is not a finite number"),
    "drf-overflow.json": ("capacity.mem", "1e999 is not a finite number"),
    "syntax-error.json": ("$", "invalid JSON at line 6"),
    "drf-duplicate-key.json": ("capacity.cpu", "more than once"),
    "not-an-object.json": ("$", "must be a JSON object"),
    # kind and schema (stage 2)
    "missing-problem.json": ("problem", "required key is missing"),
    "unknown-problem-kind.json": ("problem", "unknown problem kind"),
    "drf-missing-users.json": ("users", "required key is missing"),
    "drf-negative-capacity.json": ("capacity.cpu", "must be > 0"),
    "emrf-zero-capacity.json": ("capacity.gpu", "must be > 0"),
    "emrf-typo-knobb.json": ("knobb", "unknown key"),
    "drf-unknown-user-key.json": ("users[0].weigth", "unknown key"),
    "drf-string-weight.json": ("users[1].weight", "must be of type number"),
    "drf-divisible-not-boolean.json": ("divisible", "must be of type boolean"),
    "emrf-knob-and-max-unfairness.json": ("$", "exactly one of knob, max_unfairness"),
    "emrf-neither-knob-nor-max-unfairness.json": ("$", "exactly one of knob, max_unfairness"),
    "emrf-knob-above-1.json": ("knob", "must be <= 1"),
    "emrf-negative-max-unfairness.json": ("max_unfairness", "must be >= 0"),
    "drf-empty-users.json": ("users", "at least 1 item"),
    "emrf-missing-split.json": ("users[1].split", "required key is missing"),
    "emrf-negative-weight.json": ("users[0].weight", "must be > 0"),
    "drf-empty-id.json": ("users[0].id", "must not be empty"),
    "drf-unknown-method.json": ("options.method", "must be one of"),
    "emrf-unknown-method.json": ("options.method", "must be one of"),
    "drf-unknown-saturation.json": ("saturation", "must be one of"),
    "problem-not-a-string.json": ("problem", "unknown problem kind"),
    "drf-huge-integer.json": ("capacity.mem", "is not a finite number"),
    # hetero
    "hetero-unknown-model.json": ("jobs[0].model", "did you mean 'ResNet-50 (batch size 64)'"),
    "hetero-runs-nowhere.json": ("jobs[0].throughput", "can run on no worker type"),
    "hetero-unknown-worker-type.json": ("jobs[0].throughput.tpu", "unknown worker type"),
    "hetero-duplicate-id.json": ("jobs[1].id", "duplicate id 'a'"),
    "hetero-throughput-and-model.json": ("jobs[0]", "exactly one of throughput, model"),
    "hetero-negative-workers.json": ("workers.k80", "must be >= 0"),
    "hetero-colocated-mixed-scale.json": ("colocated.pairs[0].jobs",
                                          "only jobs of one scale factor share GPUs"),
    # etf
    "etf-duplicate-id.json": ("apps[2].id", "duplicate id 'A'"),
    "etf-zero-quantum.json": ("quantum", "must be >= 1"),
    "etf-fractional-quantum.json": ("quantum", "must be of type integer"),
    "etf-phi-above-1.json": ("phi", "must be <= 1"),
    "etf-negative-power.json": ("apps[1].power", "must be > 0"),
    "etf-zero-power.json": ("apps[2].power", "must be > 0"),
    "etf-missing-power.json": ("apps[1].power", "required key is missing"),
    "etf-fractional-demand.json": ("apps[1].demand", "must be of type integer"),
    "etf-negative-demand.json": ("apps[2].demand", "must be >= 0"),
    "etf-unknown-app-key.json": ("apps[1].wieght", "unknown key"),
    "etf-empty-apps.json": ("apps", "at least 1 item"),
    "etf-unknown-method.json": ("options.method", "must be one of"),
    "etf-extreme-power.json": ("apps[0].power", "must be <= 1000000"),
    "etf-quantum-beyond-2-53.json": ("quantum", "must be <= 9007199254740992"),
    # moldable (zero processors, which reports more than one problem, is in
    # tests/moldable/test_moldable_cli.py)
    "moldable-chi-above-m.json": ("jobs[1].max_parallelism",
                                  "must be at most the number of processors (4)"),
    "moldable-work-list-length.json": ("jobs[1].work", "must list w(1)..w(chi): 3 values, not 2"),
    "moldable-work-decreasing.json": ("jobs[0].work", "w(k) must be non-decreasing"),
    "moldable-work-per-processor-increasing.json": ("jobs[0].work",
                                                    "w(k)/k must be non-increasing"),
    "moldable-negative-offload.json": ("jobs[1].offload", "must be >= 0"),
    "moldable-unknown-job-key.json": ("jobs[0].deadline", "unknown key"),
    "moldable-duplicate-id.json": ("jobs[2].id", "duplicate id 'tau1'"),
    "moldable-zero-parallelism.json": ("jobs[0].max_parallelism", "must be >= 1"),
    "moldable-missing-offload.json": ("jobs[0].offload", "required key is missing"),
    "moldable-rho-above-1.json": ("options.rho", "must be < 1"),
    "moldable-lookahead-not-boolean.json": ("options.lookahead", "must be of type boolean"),
    "moldable-unknown-method.json": ("options.method", "must be one of"),
    # token
    "token-boosts-above-half.json": ("boosts", "must be at most agents / 2"),
    "token-zero-boosts.json": ("boosts", "must be >= 1"),
    "token-fractions-sum.json": ("types", "fractions must sum to 1"),
    "token-probabilities-sum.json": ("types[1].utility.probabilities", "must sum to 1"),
    "token-negative-probability.json": ("types[1].utility.probabilities[1]", "must be >= 0"),
    "token-probabilities-length.json": ("types[1].utility.probabilities",
                                        "one entry per value (3, not 2)"),
    "token-values-without-probabilities.json": ("types[1].utility.probabilities",
                                                "required key is missing"),
    "token-two-utility-forms.json": ("types[0].utility", "exactly one of values"),
    "token-max-below-initial.json": ("max_tokens", "must be >= initial_tokens (6)"),
    "token-uniform-reversed.json": ("types[0].utility.uniform", "needs a <= b"),
    "token-duplicate-id.json": ("types[1].id", "duplicate id 'kmeans'"),
    "token-discount-1.json": ("discount", "must be < 1"),
    "token-negative-discount.json": ("discount", "must be >= 0"),
    "token-unknown-mechanism.json": ("simulation.mechanisms[1]", "must be one of"),
    "token-unknown-method.json": ("options.method", "must be one of"),
    "token-simulation-too-many-agents.json": ("simulation", "at most 10,000 agents"),
    # accelos
    "accelos-duplicate-id.json": ("kernels[1].id", "duplicate id 'A'"),
    "accelos-group-exceeds-threads.json": ("kernels[1].work_group_size",
                                           "needs 2048 threads, the device has 1024: "
                                           "kernel 'B' cannot fit a single group"),
    "accelos-group-exceeds-local-memory.json": ("kernels[0].local_memory_per_group",
                                                "needs 65536 bytes of local memory, the device "
                                                "has 49152: kernel 'A' cannot fit"),
    "accelos-group-exceeds-registers.json": ("kernels[1].registers_per_thread",
                                             "needs 76800 registers, the device has 65536: "
                                             "kernel 'B' cannot fit"),
    "accelos-one-group-each-does-not-fit.json": ("kernels", "one work group of every kernel "
                                                 "needs 1280 threads together"),
    "accelos-zero-work-groups.json": ("kernels[0].work_groups", "must be >= 1"),
    "accelos-fractional-work-group-size.json": ("kernels[1].work_group_size",
                                                "must be of type integer"),
    "accelos-unknown-kernel-key.json": ("kernels[0].local_memory", "unknown key"),
    "accelos-missing-device-registers.json": ("device.registers", "required key is missing"),
    "accelos-zero-share.json": ("kernels[1].share", "must be >= 1e-09"),
    "accelos-negative-time-per-group.json": ("kernels[0].time_per_group",
                                             "must be >= 1e-09"),
    "accelos-empty-kernels.json": ("kernels", "at least 1 item"),
    "accelos-unknown-greedy.json": ("options.greedy", "must be one of"),
    "accelos-unknown-method.json": ("options.method", "must be one of"),
}

# Specs with three problems at once: all three must be reported in one run.
MULTI: dict[str, list[tuple[str, str]]] = {
    "three-schema-problems.json": [
        ("capacity.cpu", "must be > 0"),
        ("knob", "must be <= 1"),
        ("users[1].wieght", "unknown key"),
    ],
    "three-model-problems.json": [
        ("users[0].split", "must sum to 1"),
        ("users[1].split.npu", "unknown device"),
        ("users[2].id", "duplicate id 'user1'"),
    ],
}


def _solve(name: str) -> subprocess.CompletedProcess:
    """``fairalloc solve NAME`` in this process (run from ``BAD``): its code and output."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["solve", name])
    return subprocess.CompletedProcess(["fairalloc", "solve", name], code, out.getvalue(),
                                       err.getvalue())


@pytest.fixture(scope="module")
def runs() -> dict[str, subprocess.CompletedProcess]:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(BAD)
        return {f.name: _solve(f.name) for f in sorted(BAD.glob("*.json"))}


def _problem_lines(stderr: str) -> list[str]:
    """The `  path: rule` lines of a SpecError report."""
    return [line.strip() for line in stderr.splitlines() if line.startswith("  ")]


def _assert_clean_exit_2(name: str, run: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert run.stdout == ""
    assert f"fairalloc: {name}: invalid spec" in run.stderr, run.stderr


def _assert_names(stderr: str, path: str, keyword: str) -> None:
    lines = _problem_lines(stderr)
    hits = [line for line in lines if line.startswith(f"{path}: ") and keyword in line]
    assert hits, f"no line '{path}: ...{keyword}...' in:\n{stderr}"


def test_every_bad_spec_file_has_an_expectation():
    on_disk = {f.name for f in BAD.glob("*.json")}
    in_table = set(EXPECTED) | set(MULTI)
    assert on_disk == in_table
    assert len(EXPECTED) >= 20


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_spec_exits_2_naming_path_and_rule(runs, name):
    path, keyword = EXPECTED[name]
    run = runs[name]
    _assert_clean_exit_2(name, run)
    assert "invalid spec (1 problem)" in run.stderr, run.stderr
    assert len(_problem_lines(run.stderr)) == 1, run.stderr
    _assert_names(run.stderr, path, keyword)




@pytest.mark.parametrize("name", sorted(MULTI))
def test_three_problems_reported_in_one_run(runs, name):
    run = runs[name]
    _assert_clean_exit_2(name, run)
    assert "invalid spec (3 problems)" in run.stderr, run.stderr
    assert len(_problem_lines(run.stderr)) == 3, run.stderr
    for path, keyword in MULTI[name]:
        _assert_names(run.stderr, path, keyword)


@pytest.mark.parametrize("name", ["drf-duplicate-id.json", "three-model-problems.json"])
def test_a_real_process_answers_as_main_does(runs, name):
    """The same file through a real ``fairalloc`` process: the same code, stdout and stderr."""
    done = subprocess.run([sys.executable, "-m", "fairalloc.cli", "solve", name], cwd=BAD,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (
        runs[name].returncode, runs[name].stdout, runs[name].stderr)

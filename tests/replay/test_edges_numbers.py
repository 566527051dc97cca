"""Issue 32, the numbers of a replay document and its trace: every value of the wrong type or
beyond what the models can represent is exit 2 naming its JSON path (or the table's file,
line and column) and the rule; never a traceback, a solver's failure (exit 1), a warning on
stderr or a silently wrong replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitools import cli

from fairalloc.registry import KINDS, kind_schema

ROOT = Path(__file__).resolve().parents[2]
QUICK = json.loads((ROOT / "specs" / "replay" / "quick.json").read_text())
HUGE = "1" + "0" * 5000          # past Python's 4,300-digit limit on int()


def refused(capsys, tmp_path, text: str, *argv: str) -> str:
    """The stderr of ``fairalloc ARGV`` (``DOC`` in it: a file of ``text``, ``OUT`` a file to
    write), checked to be exit 2 without a traceback."""
    path = tmp_path / "doc.json"
    path.write_text(text)
    named = {"DOC": str(path), "OUT": str(tmp_path / "out.html")}
    code, _, err = cli(capsys, *(named.get(a, a) for a in argv))
    assert code == 2, err
    assert "Traceback" not in err
    return err


# --- an integer too long to convert -------------------------------------------------------------

@pytest.mark.parametrize("argv", [("replay", "DOC"), ("validate", "DOC"),
                                  ("report", "DOC", "-o", "OUT")])
def test_a_5001_digit_integer_in_a_replay_document_is_refused(capsys, tmp_path, argv):
    text = json.dumps(QUICK).replace('"jobs": 16', f'"jobs": {HUGE}')
    err = refused(capsys, tmp_path, text, *argv)
    assert "trace.jobs: " in err and "not a finite number" in err


@pytest.mark.parametrize("argv", [("solve", "DOC"), ("validate", "DOC"),
                                  ("report", "DOC", "-o", "OUT")])
def test_a_5001_digit_integer_in_a_spec_is_refused(capsys, tmp_path, argv):
    spec = (ROOT / "specs" / "drf" / "classic.json").read_text()
    text = spec.replace('"cpu": 9', f'"cpu": -{HUGE}', 1)
    err = refused(capsys, tmp_path, text, *argv)
    assert "capacity.cpu: " in err and "not a finite number" in err


def test_a_5001_digit_integer_in_a_study_is_refused(capsys, tmp_path):
    study = {"study": "huge", "kind": "hetero",
             "instances": {"base": str(ROOT / "specs" / "replay" / "quick.json")},
             "grid": {"trace.seed": [0, 1]}}
    text = json.dumps(study).replace("[0, 1]", f"[0, {HUGE}]")
    err = refused(capsys, tmp_path, text, "study", "run", "DOC", "--store",
                  str(tmp_path / "s.duckdb"))
    assert 'grid["trace.seed"][1]: ' in err and "not a finite number" in err


# --- a listed trace's values: the kind's column types and rules ----------------------------------

def hetero_job(i: int, **more) -> dict:
    return {"id": f"j{i}", "steps": 1000, "throughput": {"v100": 2, "p100": 1, "k80": 0.5},
            **more}


def hetero_doc(jobs: list[dict], **parts) -> dict:
    return {**QUICK, "trace": {"jobs": jobs}, **parts}


def drf_doc(jobs: list[dict], capacity: dict | None = None) -> dict:
    return {"replay": "drf", "kind": "drf", "cluster": {"capacity": capacity or {"cpu": 9}},
            "trace": {"jobs": jobs}, "policy": {"method": "progressive-filling"}}


def drf_job(name: str, **more) -> dict:
    return {"id": name, "demand": {"cpu": 1}, "max_tasks": 2, "duration": 100, **more}


def test_a_listed_traces_values_are_checked_by_type_and_rule_all_at_once(capsys, tmp_path):
    """-1 and null throughputs were "cannot run there", true was 1, and a string or a list a
    traceback."""
    jobs = [hetero_job(0, weight=1),
            hetero_job(1, weight=True, throughput={"v100": -1, "p100": None, "k80": True}),
            hetero_job(2, weight=[1], steps="abc"), hetero_job(3, weight=2, steps=True)]
    err = refused(capsys, tmp_path, json.dumps(hetero_doc(jobs)), "replay", "DOC")
    for line in ["trace.jobs[1].throughput.v100: -1 is below 0",
                 "trace.jobs[1].throughput.p100: null is not a number",
                 "trace.jobs[1].throughput.k80: true is not a number",
                 "trace.jobs[1].weight: true is not a number",
                 "trace.jobs[2].weight: [1] is not a number",
                 'trace.jobs[2].steps: "abc" is not a number',
                 "trace.jobs[3].steps: true is not a number"]:
        assert line in err
    assert "invalid replay (7 problems)" in err


def test_a_listed_drf_traces_values_are_checked_too(capsys, tmp_path):
    jobs = [drf_job("a", demand={"cpu": True}, duration="600", tenant="x"), drf_job("b", tenant=3)]
    err = refused(capsys, tmp_path, json.dumps(drf_doc(jobs)), "replay", "DOC")
    assert "trace.jobs[0].demand.cpu: true is not a number" in err
    assert 'trace.jobs[0].duration: "600" is not a number' in err
    assert "trace.jobs[1].tenant: 3 is not a string" in err


def test_a_listed_jobs_unknown_key_is_refused_not_ignored(capsys, tmp_path):
    jobs = [hetero_job(0, weigth=5), hetero_job(1, weigth=1)]
    err = refused(capsys, tmp_path, json.dumps(hetero_doc(jobs)), "replay", "DOC")
    assert "trace.jobs[0].weigth: no such key (a job has: id, arrival" in err


# --- numbers the models cannot represent: exit 2 with the range, from every source -------------

@pytest.mark.parametrize("job, line", [
    (hetero_job(1, throughput={"v100": 1e308}),
     "trace.jobs[1].throughput.v100: 1e+308 is above 1e+12 (throughput.v100 is at most 1e+12)"),
    (hetero_job(1, weight=1e308), "trace.jobs[1].weight: 1e+308 is above 1e+06"),
    (hetero_job(1, arrival=1e305), "trace.jobs[1].arrival: 1e+305 is above 1e+09"),
])
def test_a_listed_hetero_number_beyond_the_models_range(capsys, tmp_path, job, line):
    """Each was exit 1 (HiGHS: Empty / Unbounded) or a replay in which the job started and
    finished at once (JCT 0)."""
    first = hetero_job(0, **({"weight": 1} if "weight" in job else {}))
    err = refused(capsys, tmp_path, json.dumps(hetero_doc([first, job])), "replay", "DOC")
    assert line in err


def test_a_table_traces_weight_and_arrival_beyond_the_range_name_the_cell(capsys, tmp_path):
    (tmp_path / "jobs.csv").write_text("model,scale_factor,steps,arrival,weight\n"
                                       "ResNet-18 (batch size 16),1,1000,0,1\n"
                                       "ResNet-18 (batch size 16),1,1000,1e305,1e308\n")
    doc = {**QUICK, "trace": {"table": str(tmp_path / "jobs.csv")}}
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert "line 3, column 'arrival': 1e+305 is above 1e+09" in err
    assert "line 3, column 'weight': 1e+308 is above 1e+06" in err


def test_a_hetero_cluster_of_a_billion_gpus_is_refused(capsys, tmp_path):
    """It was HiGHS's "infeasible" after 39,240 simulated seconds (exit 1)."""
    doc = {**QUICK, "cluster": {"workers": {"v100": 10**9, "p100": 2, "k80": 2}}}
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert "cluster.workers.v100: a number of GPUs is a whole number from 0 to 1,000,000" in err


@pytest.mark.parametrize("doc, line", [
    (drf_doc([drf_job("a", max_tasks=1e308)]), "trace.jobs[0].max_tasks: 1e+308 is above 1e+09"),
    (drf_doc([drf_job("a", weight=1e308)]), "trace.jobs[0].weight: 1e+308 is above 1e+06"),
    (drf_doc([drf_job("a", demand={"cpu": 1e-300})]),
     "trace.jobs.a.demand: a positive demand is at least 1e-09 of the capacity"),
    (drf_doc([drf_job("a")], capacity={"cpu": 1e308}),
     "cluster.capacity.cpu: a capacity is a number from 1e-06 to 1e+12"),
])
def test_a_drf_number_beyond_the_models_range(capsys, tmp_path, doc, line):
    """max_tasks 1e308 was "the policy leaves all jobs idle" (exit 1) with an overflow
    warning on stderr."""
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert line in err and "Warning" not in err


def test_the_ranges_own_ends_are_in_range():
    from fairalloc.replay.document import load

    doc = drf_doc([drf_job("a", max_tasks=1e9, weight=1e6), drf_job("b", weight=1e-6)],
                  capacity={"cpu": 1e12, "mem": 9})
    for job in doc["trace"]["jobs"]:
        job["demand"] = {"cpu": 1e4, "mem": 1}
    assert load(doc).jobs.tasks.tolist() == [1e9, 2]
    jobs = [hetero_job(0, arrival=1e9, weight=1e6), hetero_job(1, weight=1e-6)]
    assert load(hetero_doc(jobs)).trace.arrival.tolist() == [0, 1e9]


def test_the_replays_ranges_are_the_spec_schemas():
    """One bound per quantity: the replay's ranges are the constants the kinds' schemas
    state for a spec."""
    from fairalloc.models import hetero, leontief
    from fairalloc.models.drf import SMALLEST_DEMAND
    from fairalloc.replay.drf import LARGEST_TASKS

    job = kind_schema(KINDS["hetero"])["properties"]["jobs"]["items"]["properties"]
    assert job["throughput"]["additionalProperties"]["maximum"] == hetero.LARGEST_THROUGHPUT
    assert job["weight"]["maximum"] == hetero.LARGEST_WEIGHT
    workers = kind_schema(KINDS["hetero"])["properties"]["workers"]["additionalProperties"]
    assert workers["maximum"] == hetero.LARGEST_WORKERS
    drf = kind_schema(KINDS["drf"])["properties"]
    assert drf["capacity"]["additionalProperties"]["maximum"] == leontief.LARGEST_CAPACITY
    user = drf["users"]["items"]["properties"]
    assert user["demand"]["additionalProperties"]["maximum"] == leontief.LARGEST_CAPACITY
    assert user["weight"]["maximum"] == leontief.LARGEST_WEIGHT
    assert LARGEST_TASKS * SMALLEST_DEMAND == pytest.approx(1.0)


# --- policy options of the wrong JSON type ------------------------------------------------------

@pytest.mark.parametrize("kind", ["hetero", "drf"])
@pytest.mark.parametrize("base", [[], {}, 3, None])
def test_a_fair_share_base_that_is_no_name_is_refused(capsys, tmp_path, kind, base):
    """[] and {} were a traceback (unhashable, looked up among the methods)."""
    doc = QUICK if kind == "hetero" else drf_doc([drf_job("a")])
    doc = {**doc, "policy": {"method": "fair-share", "base": base}}
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert f"policy.base: one of {', '.join(KINDS[kind].methods)}, not {json.dumps(base)}" in err


def test_a_fair_share_half_life_past_the_clock_is_refused_without_a_warning(capsys, tmp_path):
    """1e308 overflowed (a RuntimeWarning on stderr, exit 0)."""
    doc = {**QUICK, "policy": {"method": "fair-share", "half_life_s": 1e308}}
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert "policy.half_life_s: a number of seconds from 0 to 1e+09" in err
    assert "Warning" not in err


@pytest.mark.parametrize("policy, line", [
    ({"method": "finish-time", "tolerance": []}, "policy.tolerance: must be of type number"),
    ({"method": "finish-time", "tolerance": 1e308}, "policy.tolerance: must be <= 0.01"),
    ({"method": "max-min", "formulation": {}}, "policy.formulation: must be one of"),
])
def test_a_methods_options_are_checked_as_a_specs_are(capsys, tmp_path, policy, line):
    """A list as finish-time's tolerance was exit 1 at the first allocation (TypeError), a
    formulation {} and a tolerance of 1e308 were used as given."""
    doc = {**QUICK, "trace": {**QUICK["trace"], "jobs": 3}, "policy": policy}
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert line in err


# --- generator parameters and the document's whole numbers -------------------------------------

@pytest.mark.parametrize("kind, trace, line", [
    ("hetero", {"multi_gpu": "no"}, 'trace.multi_gpu: multi_gpu is true or false, not "no"'),
    ("hetero", {"priorities": "no"}, 'trace.priorities: priorities is true or false, not "no"'),
    ("hetero", {"multi_gpu": 1}, "trace.multi_gpu: multi_gpu is true or false, not 1"),
    ("hetero", {"stream": 3}, "trace.stream: stream is a string, not 3"),
    ("hetero", {"rate": True}, "trace.rate: rate is a number > 0, not true"),
    ("drf", {"tenants": "4"}, 'trace.tenants: tenants is a whole number >= 0 (in digits, as 7), '
                              'not "4"'),
])
def test_a_generators_parameter_takes_only_its_type(capsys, tmp_path, kind, trace, line):
    """"multi_gpu": "no" turned multi-GPU jobs on; "priorities": "no" was a traceback."""
    doc = {**QUICK, "trace": {**QUICK["trace"], **trace}} if kind == "hetero" else \
        {**drf_doc([]), "trace": {"generator": "poisson", "seed": 0, "jobs": 3, "rate": 9.0,
                                  **trace}}
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert line in err


@pytest.mark.parametrize("part, value, line", [
    ("trace", {"seed": 1e308}, "trace.seed: a whole number written in digits (as 7), not 1e+308"),
    ("mechanism", {"seed": 1e308}, "mechanism.seed: a whole number written in digits (as 7), "
                                   "not 1e+308"),
    ("trace", {"jobs": 5.0}, "trace.jobs: a whole number written in digits (as 7), not 5.0"),
    ("measure", {"window": [0, 1e3]}, "measure.window[1]: a whole number written in digits "
                                      "(as 7), not 1000.0"),
])
def test_a_whole_number_written_as_a_float_is_refused(capsys, tmp_path, part, value, line):
    """JSON Schema's integer admits an integral float: mechanism.seed 1e308 was a traceback
    (numpy's SeedSequence), trace.seed 1e308 'seed is int, not 1e+308'."""
    doc = {**QUICK, part: {**QUICK[part], **value}}
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert line in err


def test_a_shipped_traces_types_seed_written_as_a_float_is_refused(capsys, tmp_path):
    doc = {**QUICK, "trace": {"shipped": "elasticflow", "cluster": "cluster01",
                              "types_seed": 1e308, "larger": "drop", "jobs": 3}}
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert "trace.types_seed: a whole number written in digits (as 7), not 1e+308" in err


def test_a_huge_whole_seed_is_a_seed(capsys, tmp_path):
    """numpy's SeedSequence and Python's random take any whole number >= 0."""
    doc = {**QUICK, "trace": {**QUICK["trace"], "seed": 10**30, "jobs": 3},
           "mechanism": {**QUICK["mechanism"], "seed": 10**30}}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    code, _, err = cli(capsys, "validate", str(path))
    assert code == 0, err


@pytest.mark.parametrize("kind, stream", [("hetero", "numpy"), ("hetero", "gavel"),
                                          ("drf", None)])
@pytest.mark.parametrize("rate", [1e-300, 5e-324])
def test_a_rate_so_low_the_clock_cannot_hold_the_arrivals(capsys, tmp_path, kind, stream, rate):
    """A rate of 1e-300 jobs/hour put arrivals near 1e304 s, where each job started and
    finished at once (JCT 0, exit 0); 5e-324 made them infinite (a RuntimeWarning)."""
    if kind == "hetero":
        doc = {**QUICK, "trace": {**QUICK["trace"], "rate": rate, "stream": stream}}
    else:
        doc = {**drf_doc([]), "trace": {"generator": "poisson", "seed": 0, "jobs": 3,
                                        "rate": rate}}
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert "trace.rate: the jobs generated arrive until " in err
    assert "past 1e+09 s (a replay's clock ends there)" in err and "Warning" not in err


@pytest.mark.parametrize("trace", [
    {"table": "jobs.csv", "jobs": [{"id": "a"}]},
    {"shipped": "elasticflow", "cluster": "cluster01", "types_seed": 0, "larger": "drop",
     "jobs": [{"id": "a"}]},
])
def test_listed_jobs_beside_a_table_or_a_shipped_trace(capsys, tmp_path, trace):
    """It was a traceback (a list taken as a count), or 'the table has no rows'."""
    (tmp_path / "jobs.csv").write_text("model,scale_factor,steps,arrival\n"
                                       "ResNet-18 (batch size 16),1,1000,0\n")
    err = refused(capsys, tmp_path, json.dumps({**QUICK, "trace": trace}), "replay", "DOC")
    source = "table" if "table" in trace else "shipped"
    assert f'trace.jobs: a {source} trace takes a count ("jobs": N keeps its first N jobs)' in err


def test_a_reset_period_past_the_clock_is_refused_without_a_warning(capsys, tmp_path):
    """reset_s 1e308 overflowed (a RuntimeWarning on stderr, exit 0)."""
    doc = {**QUICK, "mechanism": {**QUICK["mechanism"], "reset_s": 1e308}}
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert "mechanism.reset_s: must be <= 1000000000" in err and "Warning" not in err


def test_the_reset_periods_range_is_the_clocks():
    from fairalloc.replay.clock import LATEST_S
    from fairalloc.replay.document import replay_schema

    mechanism = replay_schema()["properties"]["mechanism"]["properties"]
    assert mechanism["reset_s"]["maximum"] == LATEST_S


def test_a_listed_job_without_a_value_that_has_a_default_takes_it(capsys, tmp_path):
    """A weight (default 1, as a table's missing column) given for one job only: the others
    take the default; steps have none, so a job without them is refused."""
    jobs = [{"id": "a", "throughput": {"v100": 2, "p100": 1, "k80": 1}, "steps": 100,
             "weight": 3},
            {"id": "b", "throughput": {"v100": 2, "p100": 1, "k80": 1}, "steps": 100}]
    doc = {**QUICK, "trace": {"jobs": jobs}, "mechanism": {"name": "ideal"}}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    code, out, err = cli(capsys, "replay", str(path), "--format", "json", "-q")
    assert code == 0, err
    del jobs[1]["steps"]
    err = refused(capsys, tmp_path, json.dumps(doc), "replay", "DOC")
    assert "trace.jobs[1]: every job gives 'steps' when one does (it has no default)" in err

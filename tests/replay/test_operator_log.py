"""An operator's own log as a replay's trace (issue 33, section 2): a drf table, a hetero
table's tenant, columns no kind reads named, a log of durations and GPU counts typed as the
shipped trace is, and a table's type and rule errors reported together."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from clitools import run

from fairalloc import api
from fairalloc.errors import SpecError
from fairalloc.replay.document import load, template
from fairalloc.replay.hetero_trace import assign_types, listed_columns
from fairalloc.replay.trace import Trace

DRF = {"replay": "log", "kind": "drf",
       "cluster": {"capacity": {"cpu": 16, "mem": 64}},
       "policy": {"method": "progressive-filling"}, "measure": {"finish_time_fairness": False}}
HETERO = {"replay": "log", "kind": "hetero", "cluster": {"workers": {"v100": 1}},
          "mechanism": {"name": "ideal"}, "measure": {"finish_time_fairness": False}}
A3C = "A3C"


def write(tmp_path, text: str, name: str = "jobs.csv") -> str:
    (tmp_path / name).write_text(text, encoding="utf-8")
    return name


def document(tmp_path, data: dict, name: str = "replay.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def finishes(data: dict, root=None) -> dict[str, float]:
    """Each job's finish time (s) in a replay of ``data``, by id."""
    played = api.replay(load(data, root) if root is not None else data)
    assert played.status == "done"
    return dict(zip(played.jobs["id"], played.jobs["finish"]))


def refusal(tmp_path, data: dict) -> str:
    with pytest.raises(SpecError) as caught:
        load(data, tmp_path)
    return caught.value.report()


# --- a drf trace from a table -------------------------------------------------------------

DRF_JOBS = [
    {"id": "a", "arrival": 0, "demand": {"cpu": 2, "mem": 4}, "max_tasks": 4,
     "duration": 600, "tenant": "x", "weight": 1},
    {"id": "b", "arrival": 60, "demand": {"cpu": 1, "mem": 8}, "max_tasks": 8,
     "duration": 900, "tenant": "y", "weight": 2},
    {"id": "c", "arrival": 120, "demand": {"cpu": 4, "mem": 2}, "max_tasks": 2,
     "duration": 300, "tenant": "x", "weight": 1},
]
DRF_TABLE = ("id,arrival,demand.cpu,mem_gb,max_tasks,duration,tenant,weight\n"
             "a,0,2,4,4,600,x,1\nb,60,1,8,8,900,y,2\nc,120,4,2,2,300,x,1\n")


def test_a_drf_replay_reads_a_table_as_it_reads_listed_jobs(tmp_path):
    write(tmp_path, DRF_TABLE)
    table = {**DRF, "trace": {"table": "jobs.csv", "map": {"demand.mem": "mem_gb"}}}
    listed = {**DRF, "trace": {"jobs": DRF_JOBS}}
    for policy in ({"method": "progressive-filling"},
                   {"method": "fair-share", "half_life_s": 3600}):
        assert finishes({**table, "policy": policy}, tmp_path) == \
            finishes({**listed, "policy": policy})
    trace = load(table, tmp_path).trace
    assert trace.columns["tenant"].tolist() == ["x", "y", "x"]
    assert trace.columns["demand.mem"].tolist() == [4, 8, 2]


def test_a_drf_tables_bad_cells_are_named_by_line_and_column_as_listed_values_are(tmp_path):
    write(tmp_path, "id,arrival,demand.cpu,max_tasks,duration\n"
                    "a,0,x,4,600\nb,0,1,0.5,600\n")
    report = refusal(tmp_path, {**DRF, "trace": {"table": "jobs.csv"}})
    assert "line 2, column 'demand.cpu': 'x' is not a number" in report
    assert "line 3, column 'max_tasks': 0.5 is below 1" in report
    listed = refusal(tmp_path, {**DRF, "trace": {"jobs": [
        {"id": "b", "demand": {"cpu": 1}, "max_tasks": 0.5, "duration": 600}]}})
    assert "0.5 is below 1 (max_tasks is at least 1)" in listed     # the same rule


def test_a_map_of_no_trace_column_names_the_families(tmp_path):
    write(tmp_path, DRF_TABLE)
    report = refusal(tmp_path, {**DRF, "trace": {"table": "jobs.csv", "map": {
        "demand": "mem_gb"}}})
    assert "trace.map: no trace column 'demand'" in report, report
    assert "demand.<name>" in report, report


def test_a_drf_table_without_a_duration_is_refused_as_a_listed_trace_is(tmp_path):
    write(tmp_path, "id,arrival,demand.cpu\na,0,1\n")
    assert "each job needs its duration" in refusal(tmp_path, {**DRF, "trace": {
        "table": "jobs.csv"}})


# --- a hetero table's tenant ----------------------------------------------------------------

# four jobs on one V100: x's three arrive first, y's one later, so that fair share over time
# (half-life of a day) favours y against x's past usage
FOUR = [("a", 0, "x"), ("b", 0, "x"), ("c", 0, "x"), ("d", 1800, "y")]


def test_fair_share_from_a_hetero_table_runs_per_tenant_as_listed(tmp_path):
    write(tmp_path, "id,submitted,team,model,scale_factor,steps\n" + "".join(
        f"{job},{arrival},{team},{A3C},1,20000\n" for job, arrival, team in FOUR))
    policy = {"method": "fair-share", "base": "max-min", "half_life_s": 86400}
    table = {**HETERO, "policy": policy, "trace": {
        "table": "jobs.csv", "map": {"arrival": "submitted", "tenant": "team"}}}
    listed = {**HETERO, "policy": policy, "trace": {"jobs": [
        {"id": job, "arrival": arrival, "tenant": team, "model": A3C, "steps": 20000}
        for job, arrival, team in FOUR]}}
    per_job = {**listed, "trace": {"jobs": [
        {"id": job, "arrival": arrival, "model": A3C, "steps": 20000}
        for job, arrival, _ in FOUR]}}
    from_table = finishes(table, tmp_path)
    assert from_table == finishes(listed)
    assert from_table["d"] != finishes(per_job)["d"]    # the tenant matters on this trace


def test_a_hetero_table_named_like_a_tenant_column_reads_it(tmp_path):
    write(tmp_path, f"id,arrival,tenant,model,steps\na,0,x,{A3C},10\n")
    trace = load({**HETERO, "policy": {"method": "max-min"},
                  "trace": {"table": "jobs.csv"}}, tmp_path).trace
    assert trace.columns["tenant"].tolist() == ["x"] and trace.ignored == ()


def test_a_hetero_table_reads_throughputs_per_type_as_a_listed_trace_does(tmp_path):
    write(tmp_path, "id,arrival,throughput.v100,throughput.k80,steps\n"
                    "a,0,2,1,7200\nb,0,2,0.5,3600\n")
    cluster = {"workers": {"v100": 1, "k80": 1}}
    table = {**HETERO, "cluster": cluster, "policy": {"method": "max-min"},
             "trace": {"table": "jobs.csv"}}
    listed = {**table, "trace": {"jobs": [
        {"id": "a", "throughput": {"v100": 2, "k80": 1}, "steps": 7200},
        {"id": "b", "throughput": {"v100": 2, "k80": 0.5}, "steps": 3600}]}}
    assert finishes(table, tmp_path) == finishes(listed)


# --- columns no kind reads --------------------------------------------------------------------

def test_columns_no_trace_column_reads_are_named_in_the_result_and_on_stderr(tmp_path):
    write(tmp_path, f"id,arrival,user,model,steps,queue,priority\n"
                    f"a,0,ann,{A3C},10,q1,3\nb,5,bo,{A3C},10,q2,1\n")
    data = {**HETERO, "policy": {"method": "max-min"}, "trace": {"table": "jobs.csv"}}
    played = api.replay(load(data, tmp_path))
    assert played.settings["ignored_columns"] == ["user", "queue", "priority"]
    done = run("replay", document(tmp_path, data), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["settings"]["ignored_columns"] == \
        ["user", "queue", "priority"]
    lines = [line for line in done.stderr.splitlines() if "not read" in line]
    assert len(lines) == 1 and "user, queue, priority" in lines[0], done.stderr
    mapped = {**data, "trace": {"table": "jobs.csv", "map": {"tenant": "user",
                                                             "weight": "priority"}}}
    trace = load(mapped, tmp_path).trace
    assert trace.ignored == ("queue",)
    assert trace.columns["weight"].tolist() == [3, 1]


def test_a_listed_or_generated_trace_ignores_nothing():
    played = api.replay({**HETERO, "policy": {"method": "max-min"}, "trace": {"jobs": [
        {"id": "a", "model": A3C, "steps": 10}]}})
    assert played.settings["ignored_columns"] == []


def test_the_template_lists_only_table_columns_a_hetero_table_reads():
    named = re.search(r"\(hetero: (model[^)]*)\)", template()).group(1)
    columns = {c.replace("//", "").strip().removeprefix("optional ")
               for c in re.split("[,;]", named)}
    read = {"id", "arrival", "tenant", *listed_columns()}
    assert columns <= read, columns - read


# --- a log of arrival, duration and GPU count ------------------------------------------------

LOG = ("job,submitted,user,gpus,runtime\n"
       "j1,0,ann,1,600\nj2,30,bo,4,3600\nj3,60,ann,16,1200\nj4,90,cy,2,900\n")
LOG_MAP = {"id": "job", "arrival": "submitted", "num_gpu": "gpus", "duration": "runtime",
           "tenant": "user"}


def by_hand(larger: str, seed: int) -> Trace:
    """The log's jobs typed by ``assign_types`` from a trace built without a table."""
    trace = Trace.of(["j1", "j2", "j3", "j4"], [0, 30, 60, 90],
                     {"num_gpu": np.array([1, 4, 16, 2]),
                      "duration": np.array([600.0, 3600, 1200, 900]),
                      "tenant": np.array(["ann", "bo", "ann", "cy"], dtype=object)})
    return assign_types(trace, seed, larger=larger)[0]


@pytest.mark.slow
@pytest.mark.parametrize("larger", ["drop", "cap"])
def test_a_log_of_durations_and_gpu_counts_is_typed_as_the_shipped_trace_is(tmp_path, larger):
    write(tmp_path, LOG)
    data = {**HETERO, "cluster": {"workers": {"v100": 8, "k80": 8}},
            "policy": {"method": "max-min"},
            "trace": {"table": "jobs.csv", "map": LOG_MAP, "types_seed": 3, "larger": larger}}
    trace = load(data, tmp_path).trace
    expected = by_hand(larger, 3)
    assert trace.ids == expected.ids
    for name in ("model", "scale_factor", "steps", "tenant"):
        assert trace.columns[name].tolist() == expected.columns[name].tolist(), name
    assert ("j3" in trace.ids) == (larger == "cap")
    played = api.replay(load(data, tmp_path))
    assert played.status == "done"
    assert played.settings["dropped_jobs"] == (["j3"] if larger == "drop" else [])
    assert played.settings["ignored_columns"] == []
    done = run("replay", document(tmp_path, data), "--format", "csv")
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "dropped" in line]
    assert said == ([f"{tmp_path / 'jobs.csv'}: 1 job(s) of the source with more GPUs "
                     "than measured dropped (larger: drop): j3"] if larger == "drop" else []), \
        done.stderr


def test_a_log_without_types_seed_says_how_to_type_it(tmp_path):
    write(tmp_path, LOG)
    mapped = refusal(tmp_path, {**HETERO, "policy": {"method": "max-min"},
                                "trace": {"table": "jobs.csv", "map": LOG_MAP}})
    assert "types_seed" in mapped and "larger" in mapped, mapped
    typo = refusal(tmp_path, {**HETERO, "trace": {"table": "jobs.csv", "map": {
        "modle": "user"}}})
    assert "no trace column 'modle'" in typo and "types_seed" not in typo, typo
    write(tmp_path, "id,arrival,num_gpu,duration\na,0,1,600\n", "alike.csv")
    alike = refusal(tmp_path, {**HETERO, "policy": {"method": "max-min"},
                               "trace": {"table": "alike.csv"}})
    assert "types_seed" in alike and "larger" in alike, alike


def test_a_log_typed_needs_both_keys_and_its_gpu_count(tmp_path):
    write(tmp_path, LOG)
    trace = {"table": "jobs.csv", "map": LOG_MAP, "types_seed": 3}
    assert "trace.larger: a table of durations and GPU counts needs 'larger'" in \
        refusal(tmp_path, {**HETERO, "trace": trace})
    no_gpus = {**trace, "larger": "drop", "map": {k: v for k, v in LOG_MAP.items()
                                                  if k != "num_gpu"}}
    assert "no column 'num_gpu'" in refusal(tmp_path, {**HETERO, "trace": no_gpus})


def test_a_logs_bad_rows_are_named_by_line_and_column(tmp_path):
    write(tmp_path, "id,arrival,num_gpu,duration\na,0,3,600\nb,0,1,0\nc,x,1,5\n")
    report = refusal(tmp_path, {**HETERO, "trace": {
        "table": "jobs.csv", "types_seed": 0, "larger": "drop"}})
    assert "line 2, column 'num_gpu': no model is measured on 3 GPUs" in report, report
    assert "line 3, column 'duration': 0 is not above 0" in report, report
    assert "line 4, column 'arrival'" in report, report


def test_a_gavel_trace_file_takes_no_typing(tmp_path):
    write(tmp_path, f"{A3C}\tpython3\tdir\t--n\t1\t100\t1\t1\t-1\t0\n", "gavel.trace")
    report = refusal(tmp_path, {**HETERO, "trace": {
        "table": "gavel.trace", "format": "gavel", "types_seed": 0, "larger": "drop"}})
    assert "trace.types_seed" in report, report


# --- all of a table's errors at once ------------------------------------------------------

def test_a_tables_type_errors_and_rule_errors_are_reported_together(tmp_path):
    write(tmp_path, f"id,arrival,model,scale_factor,steps\na,0,{A3C},1,-5\nb,x,{A3C},1,9\n"
                    f"c,0,{A3C},3,9\nd,0,{A3C},1,y\n")
    report = refusal(tmp_path, {**HETERO, "trace": {"table": "jobs.csv"}})
    assert "line 2, column 'steps': -5 is not above 0" in report, report
    assert "line 3, column 'arrival': 'x' is not a number" in report, report
    assert "line 4, column 'scale_factor'" in report, report
    # a cell not of its type is named once, never judged again as the 0 left in its place
    assert [line for line in report.splitlines() if "line 5" in line] == \
        ["  line 5, column 'steps': 'y' is not a number (steps is a number)"], report

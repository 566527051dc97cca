"""Replay traces from tables: CSV, TSV, Parquet and Gavel's trace files, bad cells named by
file, line and column, and hetero types drawn for jobs known by duration and GPUs."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from fairalloc.errors import ArgumentError, SpecError
from fairalloc.models.hetero import measured
from fairalloc.replay.hetero_trace import (
    assign_types,
    read_gavel_trace,
    read_hetero_trace,
    runs_nowhere,
)
from fairalloc.replay.tables import Column, read_trace
from fairalloc.replay.trace import Trace

JOBS = {"gpus": Column(int, at_least=1), "duration": float, "user": str}


def write(tmp_path, text: str, name: str = "jobs.csv") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def refused(path: str, **kwargs) -> str:
    with pytest.raises(SpecError) as caught:
        read_trace(path, **kwargs)
    return caught.value.report()


def test_a_table_maps_its_columns_and_sorts_by_arrival(tmp_path):
    path = write(tmp_path, "job,arrival,gpus,duration,user\n"
                           "b,30,2,600.5,ann\na,0,1,60,bo\nc,30,4,1e3,ann\n")
    trace = read_trace(path, mapping={"id": "job"}, columns=JOBS)
    assert trace.ids == ("a", "b", "c") and trace.arrival.tolist() == [0, 30, 30]
    assert trace.columns["gpus"].tolist() == [1, 2, 4]
    assert trace.columns["gpus"].dtype == np.int64
    assert trace.columns["duration"].tolist() == [60.0, 600.5, 1000.0]
    assert trace.columns["user"].tolist() == ["bo", "ann", "ann"]
    assert trace.source == path


def test_without_an_id_column_jobs_are_numbered_in_file_order(tmp_path):
    path = write(tmp_path, "submitted,gpus,duration,user\n9,1,1,u\n3,1,1,u\n")
    trace = read_trace(path, mapping={"arrival": "submitted"}, columns=JOBS)
    assert trace.ids == ("1", "0") and trace.arrival.tolist() == [3.0, 9.0]


def test_a_column_with_a_default_may_be_missing(tmp_path):
    path = write(tmp_path, "id,arrival\nx,0\n")
    trace = read_trace(path, columns={"weight": Column(float, default=1.0)})
    assert trace.columns["weight"].tolist() == [1.0]


HEADER = "id,arrival,gpus,duration,user\n"


@pytest.mark.parametrize("row, where, why", [
    ("a,0,two,60,u", "line 2, column 'gpus'", "'two' is not a number (gpus is a whole number)"),
    ("a,0,1.5,60,u", "line 2, column 'gpus'", "1.5 is not a whole number"),
    ("a,0,0,60,u", "line 2, column 'gpus'", "0 is below 1 (gpus is at least 1)"),
    ("a,0,99999999999999999999,60,u", "line 2, column 'gpus'", "is too large"),
    ("a,-5,1,60,u", "line 2, column 'arrival'", "-5 is below 0 (arrival is at least 0)"),
    ("a,inf,1,60,u", "line 2, column 'arrival'", "inf is not a number"),
    ("a,0,1,,u", "line 2, column 'duration'", "empty cell (duration is a number; every job"),
    ("a,0,1,1_000,u", "line 2, column 'duration'", "'1_000' is not a number"),
    (",0,1,60,u", "line 2, column 'id'", "empty cell"),
])
def test_each_bad_cell_is_named_by_file_line_and_column(tmp_path, row, where, why):
    path = write(tmp_path, HEADER + row + "\n")
    report = refused(path, columns=JOBS)
    assert report.startswith(f"{path}: invalid trace (1 problem)"), report
    assert f"  {where}: " in report and why in report, report


def test_every_bad_cell_is_reported_at_once_in_file_order(tmp_path):
    path = write(tmp_path, HEADER + "a,0,1,60,u\nb,x,1,60,u\na,1,0,60,u\n")
    lines = refused(path, columns=JOBS).splitlines()
    assert lines[0].endswith("invalid trace (3 problems)")
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "line 3, column 'arrival'", "line 4, column 'gpus'", "line 4, column 'id'"]
    assert "'a' is an earlier job's id" in lines[3]


def test_lines_are_counted_through_quoted_line_breaks_and_blank_lines(tmp_path):
    path = write(tmp_path, HEADER + 'a,0,1,60,"two\nlines"\n\nb,0,1,60,"x\r\ny"\nc,0,x,1,u\n')
    assert "line 7, column 'gpus'" in refused(path, columns=JOBS)


def test_a_missing_column_is_named_with_the_columns_there(tmp_path):
    path = write(tmp_path, "id,arrival,gpus\na,0,1\n")
    report = refused(path, columns=JOBS)
    assert "$: no column 'duration': every job needs its duration" in report
    assert "columns: id, arrival, gpus" in report
    report = refused(path, columns=JOBS, mapping={"user": "owner", "duration": "gpus"})
    assert "no column 'owner' (mapped to user" in report


def test_a_mapping_of_an_unknown_trace_column_is_an_argument_error(tmp_path):
    path = write(tmp_path, HEADER + "a,0,1,60,u\n")
    with pytest.raises(ArgumentError, match="no trace column 'gpu'"):
        read_trace(path, columns=JOBS, mapping={"gpu": "gpus"})


def test_a_file_that_is_no_table_is_refused_naming_it(tmp_path):
    assert "no such file" in refused(str(tmp_path / "none.csv"), columns=JOBS)
    assert "the table has no rows" in refused(write(tmp_path, HEADER), columns=JOBS)


def test_tsv_and_choices(tmp_path):
    path = write(tmp_path, "id\tarrival\tuser\na\t0\tann\nb\t1\tanne\nc\t2\tzed\n", "t.tsv")
    with pytest.raises(SpecError) as caught:
        read_trace(path, columns={"user": Column(str, choices={"ann", "bo"})})
    report = caught.value.report()
    assert "line 3, column 'user': 'anne' is not a known user (did you mean 'ann'?)" in report
    assert "line 4, column 'user': 'zed' is not a known user (known: ann, bo)" in report


def test_parquet_typed_columns_and_its_rows(tmp_path):
    path = str(tmp_path / "jobs.parquet")
    with duckdb.connect() as con:
        con.execute(f"""COPY (SELECT * FROM (VALUES (7, 0.0, 2, 60.0, 'u'),
            (8, 5.5, 1, 30.0, 'v')) t(id, arrival, gpus, duration, user))
            TO '{path}' (FORMAT parquet)""")
    trace = read_trace(path, columns=JOBS)
    assert trace.ids == ("7", "8") and trace.arrival.tolist() == [0.0, 5.5]
    assert trace.columns["gpus"].tolist() == [2, 1]
    with duckdb.connect() as con:
        con.execute(f"""COPY (SELECT * FROM (VALUES (7, 0.0, 2, 60.0, 'u'),
            (8, 5.5, 0, 30.0, 'v')) t(id, arrival, gpus, duration, user))
            TO '{path}' (FORMAT parquet)""")
    assert "line 3, column 'gpus': 0 is below 1" in refused(path, columns=JOBS)


# Gavel's trace file: the fields its generate_trace.py writes (Job.__str__ and the arrival)
GAVEL_LINE = "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%f\t%d\n"


def gavel_file(tmp_path, jobs) -> str:
    """A trace in Gavel's format of (model, steps, scale factor, priority, arrival) jobs."""
    text = "".join(GAVEL_LINE % (model, 'python3 main.py --data "%s/x"', "dir", "--steps", 1,
                                 steps, scale, priority, -1, arrival)
                   for model, steps, scale, priority, arrival in jobs)
    return write(tmp_path, text, "gavel.trace")


JOBS_GAVEL = [("ResNet-18 (batch size 32)", 775977, 1, 1, 0),
              ("Transformer (batch size 256)", 19178, 4, 5, 182095),
              ("A3C", 36, 1, 1, 11)]


def test_a_gavel_trace_is_read_as_gavel_numbers_its_jobs(tmp_path):
    trace = read_gavel_trace(gavel_file(tmp_path, JOBS_GAVEL))
    assert trace.ids == ("0", "2", "1") and trace.arrival.tolist() == [0, 11, 182095]
    assert trace.columns["model"].tolist() == ["ResNet-18 (batch size 32)", "A3C",
                                               "Transformer (batch size 256)"]
    assert trace.columns["scale_factor"].tolist() == [1, 1, 4]
    assert trace.columns["steps"].tolist() == [775977, 36, 19178]
    assert trace.columns["weight"].tolist() == [1, 1, 5]


def test_a_gavel_trace_round_trips_through_a_hetero_table(tmp_path):
    """The same jobs read from Gavel's file and from a CSV of the hetero columns."""
    gavel = read_gavel_trace(gavel_file(tmp_path, JOBS_GAVEL))
    rows = "".join(f'{i},"{m}",{s},{st},{p},{a}\n' for i, (m, st, s, p, a) in
                   enumerate(JOBS_GAVEL))
    table = read_hetero_trace(write(tmp_path, "id,model,scale_factor,steps,weight,arrival\n"
                                    + rows))
    assert table.ids == gavel.ids and table.arrival.tolist() == gavel.arrival.tolist()
    for name in ("model", "scale_factor", "steps", "weight"):
        assert table.columns[name].tolist() == gavel.columns[name].tolist(), name


@pytest.mark.parametrize("job, where, why", [
    (("ResNet-18 (batch size 33)", 10, 1, 1, 0), "line 2, column 'job_type'",
     "is not a known model (did you mean 'ResNet-18 (batch size 32)'"),
    (("A3C", 10, 2, 1, 0), "line 2, column 'scale_factor'",
     "A3C is measured at scale factors 1 only, not 2"),
    (("A3C", 0, 1, 1, 0), "line 2, column 'total_steps'", "0 is not above 0"),
    (("A3C", 10, 0, 1, 0), "line 2, column 'scale_factor'", "0 is below 1"),
])
def test_a_bad_gavel_job_is_named_by_line_and_field(tmp_path, job, where, why):
    path = gavel_file(tmp_path, [JOBS_GAVEL[0], job])
    with pytest.raises(SpecError) as caught:
        read_gavel_trace(path)
    assert f"{where}: " in str(caught.value) and why in str(caught.value), caught.value


def test_a_gavel_line_of_other_fields_is_refused_at_its_line(tmp_path):
    """Read as named, not sniffed: a short line is refused at its line (DuckDB's sniffer
    guessed four columns from such a file and returned one row of three)."""
    path = write(tmp_path, GAVEL_LINE % ("A3C", "c", "d", "-n", 1, 36, 1, 1, -1, 0)
                 + "A3C\tc\td\t-n\t1\t36\n", "short.trace")
    with pytest.raises(SpecError) as caught:
        read_gavel_trace(path)
    report = str(caught.value)
    assert "CSV Error on Line: 2" in report and "Expected Number of Columns: 10 Found: 6" in \
        report, report


def durations(gpus) -> Trace:
    n = len(gpus)
    return Trace.of([f"j{i}" for i in range(n)], np.arange(n, dtype=float),
                    {"duration": np.full(n, 3600.0), "num_gpu": np.asarray(gpus)})


def test_the_type_draw_is_seeded_and_measured_at_the_jobs_gpus():
    trace = durations([1, 2, 4, 8] * 50)
    typed, dropped = assign_types(trace, 7, larger="drop")
    again, _ = assign_types(trace, 7, larger="drop")
    other, _ = assign_types(trace, 8, larger="drop")
    models = typed.columns["model"].tolist()
    assert dropped == () and models == again.columns["model"].tolist()
    assert models != other.columns["model"].tolist()
    table = measured()
    for model, scale, steps in zip(models, typed.columns["scale_factor"].tolist(),
                                   typed.columns["steps"].tolist()):
        assert steps == pytest.approx(3600 * table[(model, scale)]["v100"])
    assert typed.columns["weight"].tolist() == [1.0] * 200
    assert len(set(models)) > 20         # uniform over 26 configurations at 1 GPU, 19 above


def test_jobs_above_8_gpus_are_dropped_or_capped_keeping_gpu_time():
    trace = durations([1, 16, 64])
    kept, dropped = assign_types(trace, 0, larger="drop")
    assert kept.ids == ("j0",) and dropped == ("j1", "j2")
    capped, none = assign_types(trace, 0, larger="cap")
    assert none == () and capped.columns["scale_factor"].tolist() == [1, 8, 8]
    model, steps = capped.columns["model"][2], capped.columns["steps"][2]
    assert steps == pytest.approx(3600 * 8 * measured()[(model, 8)]["v100"])
    with pytest.raises(ArgumentError, match="larger"):
        assign_types(trace, 0, larger="keep")
    with pytest.raises(ArgumentError, match="uses 3 GPUs"):
        assign_types(durations([3]), 0, larger="drop")
    with pytest.raises(ArgumentError, match="no column num_gpu"):
        assign_types(Trace.of(["a"], [0], {"duration": [1.0]}), 0, larger="drop")


def test_jobs_no_worker_type_can_run_are_named():
    trace = Trace.of(["a", "b", "c"], [0, 0, 0], {
        "model": np.array(["ResNet-50 (batch size 128)", "ResNet-50 (batch size 128)", "A3C"],
                          dtype=object),
        "scale_factor": np.array([2, 1, 1])})
    assert measured()[("ResNet-50 (batch size 128)", 2)]["k80"] == 0
    assert runs_nowhere(trace, {"k80": 8}) == ["a"]
    assert runs_nowhere(trace, {"k80": 8, "v100": 1}) == ["a"]       # 2 GPUs on 1 V100
    assert runs_nowhere(trace, {"k80": 8, "v100": 2}) == []
    assert runs_nowhere(trace, {"a100": 8}) == ["a", "b", "c"]

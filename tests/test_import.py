"""fairalloc import: specs from CSV and Parquet tables read with DuckDB — every kind round-trips
through a table, columns map by name or --map, and a bad cell is reported by file, line and
column with exit code 2."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import duckdb
import pytest
from clitools import ROOT, cli

import fairalloc
from fairalloc import traces
from fairalloc.spec import schema

TRACES = ROOT / "specs" / "traces"
ROUND_TRIP = {"drf": "drf/weighted-cluster.json", "emrf": "emrf/mix-m1.json",
              "etf": "etf/datacenter-mix.json", "moldable": "moldable/gpu-mix.json",
              "accelos": "accelos/parboil-mix4.json", "token": "token/five-spark-types.json"}


def flatten(entity: dict, prefix: str = "") -> dict[str, str]:
    """An entity as table cells: nested objects as dotted columns, lists as JSON."""
    out = {}
    for key, value in entity.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and all(not isinstance(v, dict | list) for v in value.values()):
            out |= {f"{name}.{k}": repr(v) if isinstance(v, float) else str(v)
                    for k, v in value.items()}
        elif isinstance(value, dict | list):
            out[name] = json.dumps(value)
        else:
            out[name] = repr(value) if isinstance(value, float) else str(value)
    return out


def write_table(path: Path, entities: list[dict]) -> None:
    rows = [flatten(e) for e in entities]
    names = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, names)
        writer.writeheader()
        writer.writerows(rows)


@pytest.mark.parametrize("kind", sorted(ROUND_TRIP))
def test_every_kind_round_trips_through_a_table(tmp_path, capsys, kind):
    base = ROOT / "specs" / ROUND_TRIP[kind]
    original = json.loads(base.read_text(encoding="utf-8"))
    key = traces.entity_list(schema(kind))
    write_table(tmp_path / "t.csv", original[key])
    out = tmp_path / "spec.json"
    code, stdout, err = cli(capsys, "import", kind, str(tmp_path / "t.csv"), "--base",
                            str(base), "-o", str(out))
    assert code == 0 and stdout == "", err
    made = json.loads(out.read_text(encoding="utf-8"))
    assert made[key] == original[key]
    assert {k: v for k, v in made.items() if k != key} == \
        {k: v for k, v in original.items() if k != key}
    assert fairalloc.load_spec(out).kind == kind


def test_a_parquet_table_gives_the_same_spec(tmp_path, capsys):
    source = TRACES / "drf-users.csv"
    parquet = tmp_path / "users.parquet"
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT * FROM read_csv('{source}')) TO '{parquet}' "
                    "(FORMAT parquet)")
    flags = ["--map", "id=user", "--map", "demand.cpu=cpu", "--map", "demand.mem=mem_gb",
             "--map", "demand.gpu=gpu", "--set", "capacity.cpu=64", "--set",
             "capacity.mem=256", "--set", "capacity.gpu=4", "--name", "n"]
    code, from_csv, _ = cli(capsys, "import", "drf", str(source), *flags)
    assert code == 0
    code, from_parquet, _ = cli(capsys, "import", "drf", str(parquet), *flags)
    assert code == 0 and json.loads(from_parquet) == json.loads(from_csv)
    spec = json.loads(from_csv)
    assert [u["id"] for u in spec["users"]][:2] == ["ana", "ben"]
    assert spec["users"][1] == {"id": "ben", "weight": 1, "demand": {"cpu": 8, "mem": 32,
                                                                      "gpu": 0}, "max_tasks": 6}
    assert "max_tasks" not in spec["users"][0]          # an empty cell leaves the key out
    assert fairalloc.solve(spec).status == "optimal"


def test_emrf_splits_from_per_device_work(capsys):
    code, out, err = cli(capsys, "import", "emrf", str(TRACES / "emrf-devices.csv"),
                         "--map", "id=user", "--map", "split.cpu=cpu_gflops", "--map",
                         "split.gpu=gpu_gflops", "--normalize", "split", "--set",
                         "capacity.cpu=100", "--set", "capacity.gpu=800", "--set", "knob=0.5")
    assert code == 0 and "4 users" in err
    users = json.loads(out)["users"]
    etl = next(u for u in users if u["id"] == "etl")
    assert etl["split"] == pytest.approx({"cpu": 0.8, "gpu": 0.2}) and etl["weight"] == 2
    assert all(sum(u["split"].values()) == pytest.approx(1) for u in users)
    code, _, err = cli(capsys, "import", "emrf", str(TRACES / "emrf-devices.csv"),
                       "--map", "id=user", "--map", "split.cpu=cpu_gflops", "--map",
                       "split.gpu=gpu_gflops", "--set", "capacity.cpu=100", "--set",
                       "capacity.gpu=800", "--set", "knob=0.5")
    assert code == 2 and "line 2 of" in err      # without --normalize the splits do not sum to 1


def write(tmp_path: Path, text: str, name: str = "t.csv") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


CAPACITY = ["--set", "capacity.cpu=9", "--set", "capacity.mem=18"]


@pytest.mark.parametrize("text, flags, messages", [
    ("id,demand.cpu,demand.mem\na,abc,4\nb,2,1\nc,x,1\n", CAPACITY,
     ["line 2, column 'demand.cpu': 'abc' is not a number",
      "line 4, column 'demand.cpu': 'x' is not a number"]),
    ("id,demand.cpu,demand.mem\na,1,4\na,2,1\n", CAPACITY,
     ["users[1].id: duplicate id 'a'", "(line 3 of"]),
    ("id,demand.cpu,demand.mem\na,1,4\nb,-2,1\n", CAPACITY, ["users[1].demand.cpu", "line 3"]),
    ("id,demand.cpu,demand.mem,max_tasks\na,1,4,many\n", CAPACITY,
     ["line 2, column 'max_tasks': 'many' is not a number"]),
    ("", CAPACITY, ["the table has no rows"]),
    ("name,demand.cpu\na,1\n", CAPACITY, ["no column gives the ids"]),
    ("id,demand.cpu\na,1\n", ["--map", "weight=nope"], ["no column 'nope'"]),
    ("id,demand.cpu\na,1\n", ["--map", "colour=id"], ["no key 'colour'"]),
    ("id,demand.cpu\na,1\n", ["--set", "capacity"], ["expected KEY=VALUE"]),
    ("id,demand.cpu\na,1\n", ["--normalize", "nothing"], ["no key 'nothing'"]),
])
def test_bad_tables_exit_2_with_where(tmp_path, capsys, text, flags, messages):
    code, out, err = cli(capsys, "import", "drf", write(tmp_path, text), *flags)
    assert code == 2 and out == "" and "Traceback" not in err
    for message in messages:
        assert message in err, err


def test_a_missing_file_and_an_unknown_kind(tmp_path, capsys):
    code, _, err = cli(capsys, "import", "drf", str(tmp_path / "none.csv"))
    assert code == 2 and "no such file" in err
    code, _, err = cli(capsys, "import", "nokind", str(TRACES / "drf-users.csv"))
    assert code == 2 and "invalid choice: 'nokind'" in err


def test_numeric_ids_become_strings(tmp_path, capsys):
    code, out, _ = cli(capsys, "import", "drf", write(tmp_path, "id,demand.cpu\n7,1\n8,2\n"),
                       "--set", "capacity.cpu=4")
    assert code == 0 and [u["id"] for u in json.loads(out)["users"]] == ["7", "8"]


def test_ids_are_the_text_written_and_numbers_their_written_value(tmp_path, capsys):
    text = ("id,demand.cpu,weight,max_tasks\n1,1,1,1\n2,2.5,2,2\n2.5,1,1,3\ntrue,1,1,4\n"
            "2024-01-01,1,1,5\n12345678901234567890,3,1,6\n007,1e1,1.5,7\n")
    code, out, err = cli(capsys, "import", "drf", write(tmp_path, text), "--set",
                         "capacity.cpu=40")
    assert code == 0, err
    users = json.loads(out)["users"]
    assert [u["id"] for u in users] == ["1", "2", "2.5", "true", "2024-01-01",
                                        "12345678901234567890", "007"]
    assert [u["demand"]["cpu"] for u in users] == [1, 2.5, 1, 1, 1, 3, 10]
    assert [u["weight"] for u in users] == [1, 2, 1, 1, 1, 1, 1.5]
    assert '"max_tasks":7}' in out                                 # whole numbers stay whole
    number = traces.Leaf(("x",), "number")
    assert traces.column_values(["12345678901234567891", "2.5", None], number)[0] == \
        [12345678901234567891, 2.5, None]                            # every digit kept


def test_parquet_ids_typed_as_numbers_dates_or_booleans_are_their_text(tmp_path, capsys):
    parquet = tmp_path / "t.parquet"
    with duckdb.connect() as con:
        con.execute(f"""COPY (SELECT * FROM (VALUES
            (1.0::DOUBLE, 7::INTEGER, DATE '2024-01-01', true, 12345678901234567890::UBIGINT,
             0.1::FLOAT),
            (2.5, 8, DATE '2024-01-02', false, 1, 0.2)) t(d, i, day, flag, big, "demand.cpu"))
            TO '{parquet}' (FORMAT parquet)""")
    expected = {"d": ["1", "2.5"], "i": ["7", "8"], "day": ["2024-01-01", "2024-01-02"],
                "flag": ["true", "false"], "big": ["12345678901234567890", "1"]}
    for column, ids in expected.items():
        code, out, err = cli(capsys, "import", "drf", str(parquet), "--map", f"id={column}",
                             "--set", "capacity.cpu=4")
        assert code == 0, err
        users = json.loads(out)["users"]
        assert [u["id"] for u in users] == ids
        assert [u["demand"]["cpu"] for u in users] == [0.1, 0.2]     # FLOAT as written


@pytest.mark.parametrize("text, line", [
    ('id,demand.cpu\n"a\nb",1\nc,x\n', 4),                 # a line break inside a cell
    ('id,demand.cpu\n"a\r\nb",1\n\n"c ""x""",x\n', 5),      # CRLF in a cell, a blank line
    ('id,"no\nte",demand.cpu\na,z,1\nb,z,x\n', 4),      # ... in the header
])
def test_a_bad_cell_after_a_quoted_line_break_names_its_line(tmp_path, capsys, text, line):
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode())
    code, _, err = cli(capsys, "import", "drf", str(path), "--set", "capacity.cpu=4")
    assert code == 2
    assert f"line {line}, column 'demand.cpu': 'x' is not a number" in err, err


def test_a_spec_error_after_a_quoted_line_break_names_its_line(tmp_path, capsys):
    code, _, err = cli(capsys, "import", "drf", write(tmp_path, 'id,demand.cpu\n"a\nb",1\n'
                                                                 "c,-1\n"),
                       "--set", "capacity.cpu=4")
    assert code == 2 and "users[1].demand.cpu" in err and "(line 4 of" in err, err


@pytest.mark.parametrize("kind, column, cells, why", [
    ("drf", "max_tasks", ["1_000", "2"], "line 2, column 'max_tasks': '1_000' is not a number"),
    ("drf", "max_tasks", ["1", "0x10"], "line 3, column 'max_tasks': '0x10' is not a number"),
    ("drf", "weight", ["٣", "2"], "line 2, column 'weight': '٣' is not a number"),
    ("etf", "demand", ["1", "+.5"], "line 3, column 'demand': 0.5 is not a whole number"),
])
def test_numbers_duckdb_would_take_are_refused_by_cell(tmp_path, capsys, kind, column, cells,
                                                       why):
    """Numbers are converted by DuckDB in bulk only where every cell is a plain number: its
    casts take all four of these (hex and ``+.5`` as whole numbers)."""
    text = f"id,{column}\n" + "".join(f"u{i},{c}\n" for i, c in enumerate(cells))
    code, out, err = cli(capsys, "import", kind, write(tmp_path, text))
    assert code == 2 and why in err, err


def test_bulk_numbers_keep_their_written_values(tmp_path):
    """Whole numbers in int64 exactly (2**53 + 1), spaces around a number allowed, a column
    with a decimal as doubles, and a whole number past the doubles exact among decimals (the
    column then read from its text)."""
    text = ("n,x,big,gap\n9007199254740993, 2.5 ,12345678901234567891,\n"
            "2,1,0.5,\n-0,+3,1e2,7\n")
    _, table, _ = traces.read_table(write(tmp_path, text))
    number, integer = traces.Leaf(("v",), "number"), traces.Leaf(("v",), "integer")
    assert traces.table_column(table, "n", number) == ([9007199254740993, 2, 0], [])
    assert traces.table_column(table, "x", number) == ([2.5, 1.0, 3.0], [])
    assert traces.table_column(table, "x", integer)[1] == [(0, "2.5 is not a whole number")]
    assert traces.table_column(table, "big", number) == ([12345678901234567891, 0.5, 100.0],
                                                         [])
    assert traces.table_column(table, "gap", integer) == ([None, None, 7], [])
    assert [type(v) for v in traces.table_column(table, "x", number)[0]] == [float] * 3


def test_parquet_numbers_are_checked_in_bulk_as_typed(tmp_path):
    """Parquet's integers and doubles (NULL an empty cell): a whole double is an integer
    key's int, a fraction or an infinity is named by row."""
    parquet = tmp_path / "t.parquet"
    with duckdb.connect() as con:
        con.execute(f"""COPY (SELECT * FROM (VALUES (7::BIGINT, 2.0::DOUBLE, 2.5::DOUBLE),
            (NULL, 3.0, 'inf'::DOUBLE)) t(i, d, f)) TO '{parquet}' (FORMAT parquet)""")
    _, table, _ = traces.read_table(str(parquet))
    number, integer = traces.Leaf(("v",), "number"), traces.Leaf(("v",), "integer")
    assert traces.table_column(table, "i", integer) == ([7, None], [])
    assert traces.table_column(table, "d", integer) == ([2, 3], [])
    assert [type(v) for v in traces.table_column(table, "d", number)[0]] == [float, float]
    assert traces.table_column(table, "f", integer)[1] == [
        (0, "2.5 is not a whole number"), (1, "inf is not a whole number")]

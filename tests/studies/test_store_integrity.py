"""Trust at the edges of studies: a store records the spec files its instances ran on (resume
refuses a changed one, ``study instance`` re-makes what ran), only a fairalloc store is opened
(a foreign, older, truncated or garbage file is one line and exit 2 for every store command),
study specs are read strictly and exactly, and the Python study API checks its arguments."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import duckdb
import pytest

import fairalloc
from fairalloc import api
from fairalloc.cli import main
from fairalloc.errors import SpecError, StoreError
from fairalloc.studies.plan import load_study, study_name
from fairalloc.studies.store import FORMAT, VERSION, Store

ROOT = Path(__file__).resolve().parents[2]
CLASSIC = ROOT / "specs" / "drf" / "classic.json"
TOKEN = str(ROOT / "specs" / "token" / "kmeans-pagerank.json")
GENERATED = {"study": "gen", "kind": "drf", "seed": 1, "methods": ["lp"],
             "instances": {"generate": {"users": 3}, "count": 2}}


def tables(path: Path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables")
                .fetchall()}


def one_line_exit_2(capsys, argv: list[str], *needles: str) -> str:
    """Run ``fairalloc ARGV``: it must exit 2 with one line on stderr (holding every needle)
    and nothing on stdout."""
    capsys.readouterr()
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert all(n in err for n in needles), err
    return err


@pytest.fixture
def on_files(tmp_path):
    """A study of two spec files, run: (study file, store, the first spec file)."""
    (tmp_path / "specs").mkdir()
    for name, cpu in (("a.json", 9), ("b.json", 12)):
        data = json.loads(CLASSIC.read_text())
        data["capacity"]["cpu"] = cpu
        (tmp_path / "specs" / name).write_text(json.dumps(data))
    study = tmp_path / "s.json"
    study.write_text(json.dumps({"study": "files", "kind": "drf", "methods": ["lp"],
                                 "instances": {"specs": ["specs/*.json"]}}))
    store = tmp_path / "s.duckdb"
    assert main(["study", "run", str(study), "--store", str(store), "--workers", "1",
                 "-q"]) == 0
    return study, store, tmp_path / "specs" / "a.json"


# ---------------------------------------------------------------- what ran is what is kept


def test_resume_refuses_an_edited_spec_file_naming_it(on_files, capsys):
    study, store, first = on_files
    data = json.loads(first.read_text())
    data["capacity"]["cpu"] = 90
    first.write_text(json.dumps(data))
    one_line_exit_2(capsys, ["study", "run", str(study), "--store", str(store), "--resume"],
                    str(first), "instance 0 ", "has changed")
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 2


def test_resume_refuses_a_changed_set_of_files(on_files, capsys):
    study, store, first = on_files
    shutil.copy(first, first.parent / "c.json")
    one_line_exit_2(capsys, ["study", "run", str(study), "--store", str(store), "--resume"],
                    "ran on 2 spec files", "now match 3")


def test_a_reformatted_spec_file_is_the_same_spec(on_files, capsys):
    study, store, first = on_files
    first.write_text(json.dumps(json.loads(first.read_text()), indent=4))
    assert main(["study", "run", str(study), "--store", str(store), "--resume", "-q"]) == 0


def test_instance_remakes_what_ran_from_any_directory(on_files, tmp_path, capsys,
                                                      monkeypatch):
    _, store, first = on_files
    ran = json.loads(first.read_text())
    first.write_text(json.dumps({**ran, "capacity": {"cpu": 90, "mem": 18}}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["study", "instance", str(store), "0"]) == 0
    assert json.loads(capsys.readouterr().out) == ran
    first.unlink()                       # the file gone: the store still has it
    assert main(["study", "instance", str(store), "0"]) == 0
    assert json.loads(capsys.readouterr().out) == ran


# ---------------------------------------------------------------- only fairalloc stores


def test_a_new_store_carries_the_fairalloc_marker(tmp_path):
    path = tmp_path / "m.duckdb"
    fairalloc.run_study(GENERATED, path, workers=1)
    with duckdb.connect(str(path), read_only=True) as con:
        assert con.execute("SELECT format, version FROM fairalloc_meta").fetchall() == \
            [(FORMAT, VERSION)]


def test_run_refuses_a_foreign_database_and_leaves_it_alone(tmp_path, capsys):
    path = tmp_path / "theirs.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE accounts (id INTEGER)")
    (tmp_path / "s.json").write_text(json.dumps(GENERATED))
    one_line_exit_2(capsys, ["study", "run", str(tmp_path / "s.json"), "--store", str(path)],
                    "not a fairalloc study store", "accounts")
    assert tables(path) == {"accounts"}


def _foreign(good: Path, path: Path) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE accounts (id INTEGER)")


def _older(good: Path, path: Path) -> None:
    """A store as fairalloc wrote it before the format marker and the spec files."""
    shutil.copy(good, path)
    with duckdb.connect(str(path)) as con:
        con.execute("DROP TABLE fairalloc_meta")
        con.execute("DROP TABLE spec_files")


def _newer(good: Path, path: Path) -> None:
    shutil.copy(good, path)
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE fairalloc_meta SET version = version + 1")


def _empty(good: Path, path: Path) -> None:
    duckdb.connect(str(path)).close()


def _truncated(good: Path, path: Path) -> None:
    path.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])


def _garbage(good: Path, path: Path) -> None:
    path.write_bytes(b"\x00DUCK not a database" * 50)


def _text(good: Path, path: Path) -> None:
    path.write_text('{"study": "not a store"}')


DAMAGE = {"foreign": (_foreign, "not a fairalloc study store"),
          "older": (_older, "older format"),
          "newer": (_newer, f"this fairalloc reads version {VERSION}"),
          "empty": (_empty, "an empty database"),
          "truncated": (_truncated, ""),
          "garbage": (_garbage, ""),
          "text": (_text, "")}


@pytest.fixture(scope="module")
def good_store(tmp_path_factory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("good")
    (where / "s.json").write_text(json.dumps(GENERATED))
    assert main(["study", "run", str(where / "s.json"), "--store", str(where / "s.duckdb"),
                 "--workers", "1", "-q"]) == 0
    return where / "s.json", where / "s.duckdb"


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("command", ["summary", "export", "instance", "report", "resume"])
def test_every_store_command_refuses_a_store_that_is_not_one(damage, command, good_store,
                                                             tmp_path, capsys):
    study, good = good_store
    make, words = DAMAGE[damage]
    path = tmp_path / "bad.duckdb"
    make(good, path)
    before = path.read_bytes()
    argv = {"summary": ["study", "summary", str(path)],
            "export": ["study", "export", str(path), "-o", str(tmp_path / "rows.csv")],
            "instance": ["study", "instance", str(path), "0"],
            "report": ["report", str(path), "-o", str(tmp_path / "r.html")],
            "resume": ["study", "run", str(study), "--store", str(path), "--resume"]}[command]
    if (damage, command) == ("empty", "resume"):     # an empty database is a new store
        assert main(argv) == 0
        return
    one_line_exit_2(capsys, argv, str(path), words)
    if damage in ("foreign", "older", "newer", "text", "garbage"):
        assert path.read_bytes() == before


@pytest.mark.slow
def test_a_read_that_meets_a_damaged_block_is_a_store_error(good_store, tmp_path):
    """DuckDB opens some truncated files and fails only when a query reads the lost block."""
    _, good = good_store
    whole = good.read_bytes()
    path = tmp_path / "cut.duckdb"
    failures = 0
    for cut in range(4096 * 3, len(whole), max(len(whole) // 40, 1)):
        path.write_bytes(whole[:cut])
        try:
            with Store(path, read_only=True) as store:
                store.rows(store.study()["study"])
        except StoreError as exc:
            assert str(path) in str(exc) and "\n" not in str(exc)
            failures += 1
    assert failures


# ---------------------------------------------------------------- study specs, exactly


def test_whole_number_floats_are_the_integers_they_are(tmp_path):
    exact = {**GENERATED, "repeat": 2, "solver": {"threads": 1}}
    floats = {**exact, "seed": 1.0, "repeat": 2.0, "solver": {"threads": 1.0},
              "instances": {"generate": {"users": 3.0}, "count": 2.0}}
    a = fairalloc.run_study(exact, workers=1)
    b = fairalloc.run_study(floats, workers=1)
    assert list(b["status"]) == ["optimal"] * 4
    assert b["seed"].tolist() == a["seed"].tolist()
    assert b["objective"].tolist() == a["objective"].tolist()


def test_a_generator_option_is_one_of_its_choices(capsys):
    bad = {"study": "m", "kind": "moldable", "methods": ["gpusched1"],
           "instances": {"generate": {"speedup": "Linear"}, "count": 1}}
    with pytest.raises(SpecError) as caught:
        load_study(bad)
    (v,) = caught.value.violations
    assert (v.path, v.rule) == ("instances.generate.speedup",
                                'must be one of "linear", "two-phase"')
    varied = {**bad, "instances": {"generate": {}, "count": 1},
              "grid": {"speedup": ["linear", "Two-phase"], "jobs": [2.5]}}
    with pytest.raises(SpecError) as caught:
        load_study(varied)
    assert [(v.path, v.rule) for v in caught.value.violations] == [
        ("grid.speedup", '"Two-phase": must be one of "linear", "two-phase"'),
        ("grid.jobs", "2.5: must be a whole number")]


def _alarm(signum, frame):
    raise TimeoutError("no answer within 20 s")


def test_a_hetero_cluster_of_no_workers_is_refused_not_a_hang():
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(20)
    try:
        with pytest.raises(SpecError) as caught:
            load_study({"study": "h", "kind": "hetero",
                        "instances": {"generate": {"workers": 0}, "count": 1}})
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert "workers must be at least 1" in str(caught.value)


def test_a_long_study_name_is_refused_in_words():
    with pytest.raises(SpecError) as caught:
        load_study({**GENERATED, "study": "x" * 201})
    assert [str(v) for v in caught.value.violations] == [
        "study: must be at most 200 characters long"]


def test_sweep_and_simulate_of_a_long_named_spec_run(tmp_path, capsys):
    long = json.loads(CLASSIC.read_text())
    long["name"] = "y" * 200
    (tmp_path / "long.json").write_text(json.dumps(long))
    assert main(["sweep", str(tmp_path / "long.json"), "--set", "users[0].weight=1,2"]) == 0
    token = json.loads(Path(TOKEN).read_text())
    token["name"] = "z" * 200
    (tmp_path / "token.json").write_text(json.dumps(token))
    assert main(["simulate", str(tmp_path / "token.json"), "--rounds", "50"]) == 0


def test_long_study_names_fit_and_stay_apart():
    a, b = study_name("y" * 300 + "a", "sweep of knob"), study_name("y" * 300 + "b", "sweep")
    assert len(a) == len(b) == 200 and a != b


def test_summary_of_a_text_column_says_so(good_store, capsys):
    _, good = good_store
    one_line_exit_2(capsys, ["study", "summary", str(good), "--values", "status"],
                    "--values", "'status' is not a number column")


# ---------------------------------------------------------------- the Python study API


def test_store_error_is_public_and_raised_by_run_study(tmp_path):
    assert fairalloc.StoreError is StoreError and "StoreError" in fairalloc.__all__
    path = tmp_path / "theirs.duckdb"
    _foreign(path, path)
    with pytest.raises(fairalloc.StoreError, match="not a fairalloc study store"):
        fairalloc.run_study(GENERATED, path, workers=1)


@pytest.mark.parametrize("arguments, error, words", [
    ({"study": None}, TypeError, "a study is a dict, a file path"),
    ({"workers": 2.5}, TypeError, "workers is a whole number"),
    ({"workers": 0}, ValueError, "workers must be at least 1"),
    ({"workers": True}, TypeError, "workers is a whole number"),
    ({"cluster": ("local", 0)}, ValueError, "local:N takes N from 1"),
    ({"cluster": ("local", 2.0)}, TypeError, "whole number of workers"),
    ({"cluster": "local:0"}, ValueError, "local:N takes N from 1"),
    ({"cluster": 3}, TypeError, "cluster is ('local', N)"),
    ({"store": b"x.duckdb"}, TypeError, "store is a file path"),
    ({"resume": "yes"}, TypeError, "resume is True or False"),
])
def test_run_study_checks_its_arguments(arguments, error, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        api.run_study(**{"study": GENERATED, **arguments})
    assert list(tmp_path.iterdir()) == []          # no file made, named b'x.duckdb' or else

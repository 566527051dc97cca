"""The examples shipped inside the package: every one is valid, ``fairalloc examples`` lists and
copies them, and a wheel built from the checkout carries them."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

import pytest
from clitools import ROOT, cli

import fairalloc
from fairalloc.catalog import EXAMPLES, examples
from fairalloc.replay import document as replays
from fairalloc.studies.plan import load_study


def test_the_repository_specs_are_the_shipped_examples():
    assert (ROOT / "specs").resolve() == EXAMPLES.resolve()


@pytest.mark.parametrize("example", [e for e in examples() if e.path.endswith(".json")],
                         ids=lambda e: e.path)
def test_every_example_is_valid(example):
    path = EXAMPLES / example.path
    if example.kind.startswith("study"):
        assert load_study(path).task_count > 0
    elif example.kind.startswith("replay"):
        assert replays.load(path).kind.name == example.kind.split("(")[1].rstrip(")")
    else:
        assert fairalloc.load_spec(path).kind == example.kind


def test_examples_lists_every_kind(capsys):
    code, out, _ = cli(capsys, "examples", "--format", "csv")
    assert code == 0
    kinds = {line.split(",")[1] for line in out.splitlines()[1:]}
    assert set(fairalloc.registry.shipped_kinds()) <= kinds    # a kind added from outside has none
    code, out, _ = cli(capsys, "examples", "moldable", "--format", "csv")
    assert code == 0 and {line.split(",")[1] for line in out.splitlines()[1:]} == {"moldable"}


def test_copy_writes_a_folder_that_solves_and_never_overwrites(tmp_path, capsys):
    target = tmp_path / "mine"
    code, _, err = cli(capsys, "examples", "--copy", str(target))
    assert code == 0 and "examples copied into" in err
    copied = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert copied == sorted(e.path for e in examples())
    spec = target / "moldable" / "example1.json"
    assert fairalloc.solve(spec, "exact").status == "optimal"
    spec.write_text("{}", encoding="utf-8")                # the user's edit
    code, out, err = cli(capsys, "examples", "moldable", "--copy", str(target))
    assert code == 2 and out == "" and "exist already (--force overwrites them)" in err
    assert spec.read_text(encoding="utf-8") == "{}"
    assert cli(capsys, "examples", "moldable", "--copy", str(target), "--force")[0] == 0
    assert fairalloc.load_spec(spec).kind == "moldable"


@pytest.mark.slow
def test_copied_studies_find_their_specs(tmp_path, capsys):
    cli(capsys, "examples", "--copy", str(tmp_path))
    for study in (tmp_path / "studies").glob("*.json"):
        assert load_study(study).task_count > 0


@pytest.mark.parametrize("argv, message", [
    (("nothing",), "no examples of 'nothing'"),
    (("--copy", __file__), "is a file; name a folder"),
])
def test_bad_examples_arguments_exit_2(capsys, argv, message):
    code, out, err = cli(capsys, "examples", *argv)
    assert code == 2 and out == "" and message in err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to export the checkout")
def test_a_wheel_carries_the_examples(tmp_path):
    """Built from a copy of the tracked files (as from a fresh clone), without network."""
    tree = tmp_path / "tree"
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "HEAD"],
                             capture_output=True, check=True).stdout
    tree.mkdir()
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"),
                           str(tree)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    wheel, = (tmp_path / "dist").glob("fairalloc-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"fairalloc/examples/{e.path}" for e in examples()}
    assert shipped <= names, sorted(shipped - names)[:5]

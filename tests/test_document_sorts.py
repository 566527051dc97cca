"""A document given to a command of another sort (a replay document to ``solve``, a study to
``replay``, a spec to ``study run``) is refused in one line naming the file, what it is and
the command to run instead; the API raises the same ``SpecError``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitools import ROOT, cli, write

from fairalloc import api
from fairalloc.documents import WrongDocument, sort_of
from fairalloc.errors import SpecError
from fairalloc.studies.plan import load_study

REPLAY = str(ROOT / "specs" / "replay" / "quick.json")
STUDY = str(ROOT / "specs" / "studies" / "replay-quick.json")
SPEC = str(ROOT / "specs" / "drf" / "classic.json")


@pytest.mark.parametrize("argv, said", [
    (["solve", REPLAY], f'{REPLAY}: a replay document (key "replay"), not a spec: run '
                        f'"fairalloc replay {REPLAY}"'),
    (["compare", REPLAY], f'{REPLAY}: a replay document (key "replay"), not a spec: run '
                          f'"fairalloc replay {REPLAY}"'),
    (["solve", STUDY], f'{STUDY}: a study (key "study"), not a spec: run '
                       f'"fairalloc study run {STUDY}"'),
    (["replay", STUDY], f'{STUDY}: a study (key "study"), not a replay document: run '
                        f'"fairalloc study run {STUDY}"'),
    (["replay", SPEC], f'{SPEC}: a spec (key "problem"), not a replay document: run '
                       f'"fairalloc solve {SPEC}"'),
    (["study", "run", REPLAY], f'{REPLAY}: a replay document (key "replay"), not a study: '
                               f'run "fairalloc replay {REPLAY}"'),
])
def test_a_document_of_another_sort_is_named_in_one_line(capsys, argv, said):
    code, out, err = cli(capsys, *argv)
    assert (code, out, err) == (2, "", f"fairalloc: {said}\n")


def test_the_api_refuses_it_as_a_spec_error_whatever_reads_it():
    for read in (api.load_spec, api.replays.load, load_study):
        wrong = {api.load_spec: REPLAY, api.replays.load: STUDY, load_study: SPEC}[read]
        with pytest.raises(WrongDocument) as caught:
            read(wrong)
        assert isinstance(caught.value, SpecError) and len(caught.value.report().split("\n")) == 1
    with pytest.raises(WrongDocument, match=r'not a spec: run "fairalloc replay FILE"'):
        api.load_spec({"replay": "x", "kind": "hetero"})


def test_a_file_name_is_quoted_as_a_shell_reads_it(tmp_path, capsys):
    path = write(tmp_path, {"replay": "x"}, "my replay.json")
    code, _, err = cli(capsys, "solve", path)
    assert code == 2 and f"run \"fairalloc replay '{path}'\"" in err


def test_the_sort_is_the_one_top_level_key_it_has():
    assert [sort_of(d) for d in ({"problem": "drf"}, {"replay": "a"}, {"study": "b"}, {},
                                 [], {"problem": "drf", "study": "b"})] == \
        ["problem", "replay", "study", None, None, None]


@pytest.mark.parametrize("data, first", [
    ({"users": []}, "problem: required key is missing"),
])
def test_a_spec_of_no_other_sort_keeps_its_schema_problems(tmp_path, capsys, data, first):
    code, _, err = cli(capsys, "solve", write(tmp_path, data))
    assert code == 2 and "invalid spec" in err and f"\n  {first}" in err


def test_validate_checks_a_replay_document_in_one_line(capsys):
    code, out, err = cli(capsys, "validate", REPLAY)
    assert (code, err) == (0, "")
    assert out == (f"{REPLAY}: valid replay document quick: hetero, 16 jobs "
                   "(gavel(seed=0, jobs=16, rate=2.0)), policy max-min, mechanism rounds\n")


def test_validate_gives_a_bad_replay_document_s_problems(tmp_path, capsys):
    data = json.loads(Path(REPLAY).read_text())
    data["trace"]["rate"], data["policy"]["method"] = -1, "nosuch"
    code, out, err = cli(capsys, "validate", write(tmp_path, data))
    assert (code, out) == (2, "") and "invalid replay (2 problems)" in err
    assert "\n  policy.method: unknown policy 'nosuch'" in err and "\n  trace.rate: " in err


@pytest.mark.parametrize("flag", [["--method", "lp"], ["--allocation", SPEC],
                                  ["--fail-on", "feasibility"], ["--format", "json"]])
def test_validate_refuses_an_allocation_s_flags_for_a_replay_document(capsys, flag):
    code, out, err = cli(capsys, "validate", REPLAY, *flag)
    assert (code, out) == (2, "") and err.startswith(f"fairalloc validate: error: {flag[0]}: ")


def test_load_document_tells_a_spec_from_a_replay_document():
    assert isinstance(api.load_document(REPLAY), api.replays.Document)
    assert api.load_document(SPEC).kind == "drf"
    assert isinstance(api.load_document(json.loads(Path(REPLAY).read_text())),
                      api.replays.Document)

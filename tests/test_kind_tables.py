"""Every table that lists kinds by hand names every kind fairalloc ships, so a new kind cannot
silently drop out of the fuzz, report and bad-spec tests, ``make demo`` or the README."""

from __future__ import annotations

import re
import subprocess

import pytest
import test_bad_specs
import test_fuzz
import test_report
from clitools import ROOT

from fairalloc.registry import KINDS, shipped_kinds


@pytest.mark.parametrize("table", [test_fuzz.SAMPLES, test_report.EXAMPLES],
                         ids=["test_fuzz.SAMPLES", "test_report.EXAMPLES"])
def test_each_kind_has_a_sample_spec(table):
    assert sorted(table) == sorted(shipped_kinds()), f"kinds missing: {_missing(table)}"
    assert all((ROOT / "specs" / path).is_file() for path in table.values()), table


def _missing(named) -> list[str]:
    return [kind for kind in shipped_kinds() if kind not in named]


def test_each_kind_has_bad_specs_with_expectations():
    """tests/bad_specs/<kind>-*.json, each with its EXPECTED row (test_bad_specs checks the
    files and the rows agree)."""
    covered = {name.split("-")[0] for name in test_bad_specs.EXPECTED}
    assert not _missing(covered), f"no bad spec of {_missing(covered)} in tests/bad_specs/"


def test_make_demo_solves_an_example_of_each_kind():
    printed = subprocess.run(
        ["make", "-s", "--no-print-directory", "--eval", "print-demo: ; @echo $(DEMO_SPECS)",
         "print-demo"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    kinds = {path.split("/")[1] for path in printed}
    assert sorted(kinds) == sorted(shipped_kinds()), f"kinds missing: {_missing(kinds)}"
    assert all(path.startswith("specs/") and path.endswith(".json") for path in printed)


def _kind_table(text: str) -> dict[str, list[str]]:
    """README's kind table: kind -> the methods its row names (backquoted), in order."""
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"`[\w-]+`", cells[0]):
            rows[cells[0].strip("`")] = re.findall(r"`([^`]+)`", cells[2])
    return rows


def test_the_readme_kind_table_names_each_kind_and_its_methods():
    rows = _kind_table((ROOT / "README.md").read_text(encoding="utf-8"))
    assert sorted(rows) == sorted(shipped_kinds()), f"kinds missing: {_missing(rows)}"
    for kind, methods in rows.items():
        record = KINDS[kind]
        assert sorted(methods) == sorted(record.methods), (kind, methods)
        assert methods[0] == record.default, f"{kind}: README lists the default first"


def _exact_marks(text: str) -> dict[str, set[str]]:
    """README's kind table: kind -> the methods its row marks ``(exact…)``."""
    marks = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and re.fullmatch(r"`[\w-]+`", cells[0]):
            marks[cells[0].strip("`")] = set(re.findall(r"`([^`]+)` \(exact", cells[2]))
    return marks


def test_the_readme_marks_as_exact_what_the_kind_records_do():
    """One source for "exact": the kind record (``Kind.exact_methods``), which ``fairalloc
    list`` prints; README's table must mark the same methods."""
    marks = _exact_marks((ROOT / "README.md").read_text(encoding="utf-8"))
    for kind, marked in marks.items():
        assert marked == set(KINDS[kind].exact_methods()), kind


def test_every_kind_cites_its_paper_in_the_references_page_and_methods_page():
    references = (ROOT / "docs" / "references.md").read_text(encoding="utf-8")
    methods = (ROOT / "docs" / "methods.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^## (\w+)\n\n(.*?)(?=^## |\Z)", methods, re.M | re.S))
    for kind in shipped_kinds():
        record = KINDS[kind]
        assert record.reference and record.reference in references, kind
        assert "(references.md)" in sections[kind].split("\n\n")[0], kind


def test_fairalloc_list_marks_every_exact_method(capsys):
    from clitools import cli

    code, out, _ = cli(capsys, "list")
    assert code == 0
    for kind in shipped_kinds():
        for method in KINDS[kind].methods:
            exact = method in KINDS[kind].exact_methods()
            assert re.search(rf"(?<![\w-]){re.escape(method)}\*?†", out) or not exact, method


def test_fairalloc_list_names_the_kinds_that_replay(capsys):
    from clitools import cli

    code, out, _ = cli(capsys, "list")
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for kind in shipped_kinds():
        assert ("replay" in rows[kind]) == (KINDS[kind].replay is not None), kind

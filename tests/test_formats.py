"""Output formats for people and papers: CSV, LaTeX and HTML beside table, JSON and Markdown, for
solve, compare, sweep and study summaries, each text format escaped in one place."""

from __future__ import annotations

import csv
import html.parser
import io
import re
import shutil
import subprocess

import pytest
from clitools import ROOT, cli, write

import fairalloc
from fairalloc.render import escape_latex, escape_markdown, render_html

EMRF1 = str(ROOT / "specs" / "emrf" / "example1-knob0.5.json")
HOSTILE_ID = "a&b_%#$<i>|{x}~^\\"


def hostile_spec(tmp_path) -> str:
    """A DRF spec whose ids carry every character a format must escape."""
    return write(tmp_path, {"problem": "drf", "name": "ids & 100% <b>",
                            "capacity": {"cpu": 9, "mem": 18},
                            "users": [{"id": HOSTILE_ID, "demand": {"cpu": 1, "mem": 4}},
                                      {"id": "plain", "demand": {"cpu": 3, "mem": 1}}]})


class Collector(html.parser.HTMLParser):
    """Element names and text of an HTML fragment (fails on nothing: checks what it saw)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def parsed(fragment: str) -> Collector:
    found = Collector()
    found.feed(fragment)
    return found


@pytest.mark.parametrize("command", [("solve",), ("compare",),
                                     ("sweep", "--set", "users[1].weight=1,2")])
def test_csv_parses_with_the_csv_module(tmp_path, capsys, command):
    code, out, _ = cli(capsys, command[0], hostile_spec(tmp_path), *command[1:],
                       "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert len({len(r) for r in rows}) == 1 and len(rows) >= 2
    if command[0] == "solve":
        assert rows[0][0] == "id" and rows[1][0] == HOSTILE_ID
        assert float(rows[1][2]) == pytest.approx(fairalloc.solve(
            hostile_spec(tmp_path)).allocation[HOSTILE_ID]["dominant_share"], rel=1e-15)


FORMULAS = ["=HYPERLINK(\"http://127.0.0.1:9/\",\"x\")", "=cmd|' /C calc'!A0", "@SUM(A1:A2)",
            "+1+2", "-2+3", "\tTAB", "\rCR", "＝1+1"]


def spreadsheet_would_run(cell: str) -> bool:
    """A CSV cell a spreadsheet reads as a formula: it starts with = + - @, a tab or CR (or a
    full-width = + - @) and is not a number (written independently of render.csv_safe)."""
    if not cell or cell[0] not in "=+-@\t\r＝＋－＠":
        return False
    try:
        float(cell)
    except ValueError:
        return True
    return False


def formula_spec(tmp_path) -> str:
    return write(tmp_path, {"problem": "drf", "name": "@name", "capacity": {"cpu": 90},
                            "users": [{"id": f, "demand": {"cpu": 1}} for f in FORMULAS]
                            + [{"id": "-1.5", "demand": {"cpu": 2}}]})


@pytest.mark.parametrize("command", [("solve",), ("compare",),
                                     ("sweep", "--set", "name=@a,=b(),-c")])
def test_csv_cells_never_start_a_formula(tmp_path, capsys, command):
    code, out, err = cli(capsys, command[0], formula_spec(tmp_path), *command[1:],
                         "--format", "csv")
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert not [c for r in rows for c in r if spreadsheet_would_run(c)]
    if command[0] == "solve":            # the rule's mark, the number kept a number
        assert [r[0] for r in rows[1:]] == ["'" + f for f in FORMULAS] + ["-1.5"]
    if command[0] == "sweep":
        assert [r[0] for r in rows[1:]] == ["'@a", "'=b()", "'-c"]


def test_study_summary_and_export_csv_never_start_a_formula(tmp_path, capsys):
    study = write(tmp_path, {"study": "=evil()", "kind": "drf", "methods": ["lp"],
                             "instances": {"base": formula_spec(tmp_path)},
                             "grid": {"name": ["@SUM(1)", "-x", "\rCR", "plain"]}}, "s.json")
    store = str(tmp_path / "s.duckdb")
    assert cli(capsys, "study", "run", study, "--store", store, "--workers", "1", "-q")[0] == 0
    code, out, err = cli(capsys, "study", "summary", store, "--by", "name", "--format", "csv")
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert "'@SUM(1)" in {r[0] for r in rows} and "plain" in {r[0] for r in rows}
    assert not [c for r in rows for c in r if spreadsheet_would_run(c)]
    assert cli(capsys, "study", "export", store, "-o", str(tmp_path / "rows.csv"))[0] == 0
    with open(tmp_path / "rows.csv", newline="", encoding="utf-8") as fh:
        exported = list(csv.DictReader(fh))
    assert {r["study"] for r in exported} == {"'=evil()"} and len(exported) == 4
    assert {r["name"] for r in exported} == {"'@SUM(1)", "'-x", "'\rCR", "plain"}
    assert not [c for r in exported for c in r.values() if spreadsheet_would_run(c)]


def test_latex_escapes_every_special_character(tmp_path, capsys):
    code, out, _ = cli(capsys, "solve", hostile_spec(tmp_path), "--format", "latex")
    assert code == 0
    assert r"a\&b\_\%\#\$\textless{}i\textgreater{}\textbar{}\{x\}" \
           r"\textasciitilde{}\textasciicircum{}\textbackslash{}" in out
    assert r"ids \& 100\% \textless{}b\textgreater{}" in out
    body = out.replace(r"\&", "").replace(r"\%", "").replace(r"\#", "").replace(r"\$", "")
    for line in body.splitlines():      # no raw special character is left outside commands
        if line.startswith("%"):
            continue
        for char in "%#$":
            assert char not in line, line
    assert out.count(r"\begin{table}") == 3
    assert out.count(r"\end{tabular}") + out.count(r"\end{tabularx}") == 3


HOSTILE_NAME = "x\n\\input{secret}\r%\u2028\\def\\y{z}"
PDFLATEX = shutil.which("pdflatex")
needs_pdflatex = pytest.mark.skipif(
    PDFLATEX is None, reason="pdflatex is not installed (apt-get install texlive-latex-base "
                             "texlive-latex-recommended; .ci/run installs it before the tests)")


def hostile_latex(tmp_path, capsys) -> str:
    """``solve --format latex`` of a spec whose name would run ``\\input`` after a line break
    and whose ids start with ``[`` and ``*`` (read as ``\\\\[1em]`` and ``\\\\*``)."""
    spec = write(tmp_path, {"problem": "drf", "name": HOSTILE_NAME, "capacity": {"cpu": 9},
                            "users": [{"id": "[1em] B", "demand": {"cpu": 1}},
                                      {"id": "*star", "demand": {"cpu": 3}}]})
    code, out, err = cli(capsys, "solve", spec, "--format", "latex")
    assert code == 0, err
    return out


def test_latex_escapes_user_strings_in_comments_and_row_starts(tmp_path, capsys):
    out = hostile_latex(tmp_path, capsys)
    lines = out.splitlines()
    assert not any(re.match(r"\s*\\(input|def)", line) for line in lines)
    comment = next(line for line in lines if line.startswith("% x"))
    assert r"\textbackslash{}input\{secret\}" in comment and "\\%" in comment
    rows = [line for line in lines if line.endswith(r"\\")]
    assert rows and not any(re.match(r"\s*[\[*]", line) for line in rows)
    assert r"{[}1em{]} B & " in out and r"{*}star & " in out


@needs_pdflatex
def test_latex_with_hostile_names_compiles_to_their_text(tmp_path, capsys):
    (tmp_path / "table.tex").write_text(hostile_latex(tmp_path, capsys), encoding="utf-8")
    (tmp_path / "secret.tex").write_text("\\typeout{INJECTED}SECRET\n", encoding="utf-8")
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs,tabularx,graphicx,amssymb}\n"
        "\\pdfcompresslevel=0\n"
        "\\begin{document}\n\\input{table}\n\\end{document}\n", encoding="utf-8")
    done = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "INJECTED" not in (tmp_path / "doc.log").read_text(errors="replace")
    page = (tmp_path / "doc.pdf").read_bytes()          # uncompressed: text in TJ strings
    assert b"([1em])" in page and b"(*star)" in page and b"(secret)" in page


def test_html_escapes_and_parses(tmp_path, capsys):
    code, out, _ = cli(capsys, "solve", hostile_spec(tmp_path), "--format", "html")
    assert code == 0
    found = parsed(out)
    assert "i" not in found.tags and "b" not in found.tags       # the ids' tags stay text
    assert HOSTILE_ID in "".join(found.text)
    assert found.tags.count("table") == 3
    code, out, _ = cli(capsys, "compare", EMRF1, "--format", "html")
    assert code == 0 and parsed(out).tags.count("table") == 1


def test_markdown_escapes_pipes_in_cells(tmp_path, capsys):
    code, out, _ = cli(capsys, "solve", hostile_spec(tmp_path), "--format", "markdown")
    assert code == 0
    line = next(row for row in out.splitlines() if row.startswith("| a&b"))
    assert "\\|" in line and line.count(" | ") == line.replace("\\|", "").count(" | ")
    assert escape_markdown("x|y") == "x\\|y"


def test_witnesses_open_on_expand_in_html():
    result = fairalloc.solve(EMRF1)          # envy-freeness fails with a witness
    fragment = render_html(result)
    assert "<details>" in fragment and "witness:" in fragment
    assert result._repr_html_() == fragment
    found = parsed(fragment)
    assert "summary" in found.tags


def test_study_summary_in_every_format(tmp_path, capsys):
    study = write(tmp_path, {"study": "f", "kind": "drf", "methods": ["lp", "progressive-filling"],
                             "instances": {"generate": {"users": 3}, "count": 3}}, "f.json")
    store = str(tmp_path / "f.duckdb")
    assert cli(capsys, "study", "run", study, "--store", store, "--workers", "1", "-q")[0] == 0
    for fmt_name, marker in (("latex", r"\begin{tabular}"), ("html", "<table>"),
                             ("markdown", "| method |"), ("csv", "method,")):
        code, out, _ = cli(capsys, "study", "summary", store, "--format", fmt_name)
        assert code == 0 and marker in out, fmt_name


def test_one_escaper_per_format():
    assert escape_latex("✓ ✗ ÷") == r"\checkmark{} $\times$ $\div$"


def test_a_comparison_shows_itself_in_a_notebook():
    rows = fairalloc.compare(EMRF1)
    assert isinstance(rows, list) and [m for m, _ in rows] == ["lp", "wfq", "drf"]
    markdown = rows._repr_markdown_()
    assert markdown.startswith("## EMRF paper, Example 1 (knob 0.5) — every emrf method")
    assert "| lp | optimal |" in markdown and "✗" in markdown
    fragment = rows._repr_html_()
    found = parsed(fragment)
    assert found.tags.count("tr") == 4 and "details" in found.tags
    assert "witness:" in fragment

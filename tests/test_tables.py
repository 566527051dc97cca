"""Terminal tables never cut a number or a name: at any width every value the JSON output holds
is printed whole somewhere (wrapped text, abbreviated heads with a legend, or one block per
row), and piped output follows COLUMNS."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from clitools import ROOT, cli, slow_cases, write

from fairalloc import api
from fairalloc.render import _dotted, fmt, ratio_to
from fairalloc.studies.summary import summary_cells

WIDTHS = (60, 80, 100, 120, 150)
EMRF2 = str(ROOT / "specs" / "emrf" / "example2-knob0.5.json")
GAVEL = str(ROOT / "specs" / "hetero" / "gavel-mix.json")
SOLVED = [str(ROOT / "specs" / path) for path in
          ("emrf/example2-knob0.5.json", "moldable/example1.json", "hetero/gavel-mix.json",
           "etf/example.json", "token/kmeans-pagerank.json", "accelos/figure3.json")]


def table(capsys, monkeypatch, width: int, *argv: str) -> str:
    """``fairalloc ARGV`` as a table, piped (not a terminal) with ``COLUMNS=width``."""
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = cli(capsys, *argv)
    assert code in (0, 3), err
    return out


def as_json(capsys, *argv: str):
    code, out, err = cli(capsys, *argv, "--format", "json")
    assert code in (0, 3), err
    return json.loads(out)


def assert_whole(out: str, cells, width: int) -> None:
    """Each word of each cell is printed whole (not folded, not cut with an ellipsis), and no
    line is wider than the console."""
    assert max(map(len, out.splitlines())) <= width
    for cell in cells:
        for word in str(cell).split():
            assert re.search(rf"(?<![\w.]){re.escape(word)}(?![\w.])", out), (word, out)


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_prints_every_number_and_name_whole(capsys, monkeypatch, width):
    results = as_json(capsys, "compare", EMRF2)
    out = table(capsys, monkeypatch, width, "compare", EMRF2)
    exact = next(r for r in results if r["method"] == "lp")
    cells = [c for r in results for c in (r["method"], r["status"], fmt(r["objective"]),
                                          fmt(ratio_to(r["objective"], exact["objective"],
                                                       "max")))]
    assert_whole(out, cells, width)
    assert "…" not in out


@pytest.mark.parametrize("width", WIDTHS)
def test_a_hetero_sweep_prints_every_cell_whole(capsys, monkeypatch, width):
    argv = ("sweep", GAVEL, "--set", "jobs[5].weight=1,2", "--methods",
            "max-min,agnostic-max-min", "--workers", "1", "-q")
    records = as_json(capsys, *argv)
    out = table(capsys, monkeypatch, width, *argv)
    cells = [fmt(v) for r in records for k, v in r.items()
             if k in ("method", "status", "objective") or k.startswith("metric.")]
    assert_whole(out, cells, width)
    assert "…" not in out


@pytest.fixture(scope="module")
def hetero_store(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("store")
    study = write(folder, {"study": "hs", "kind": "hetero", "seed": 1, "reference": "exact",
                           "instances": {"generate": {"workers": 2}, "count": 2},
                           "grid": {"jobs": [3]},
                           "methods": ["max-min-isolated", "agnostic-max-min"]},
                  "hs.json")
    store = str(folder / "hs.duckdb")
    done = api.study_run(study, store, workers=1)
    assert done.progress.errors == 0
    return store


@pytest.mark.parametrize("width", WIDTHS)
def test_a_study_summary_prints_every_cell_whole(capsys, monkeypatch, hetero_store, width):
    found = api.summary(hetero_store)
    _, body = summary_cells(found.records, found.by, found.values, None)
    out = table(capsys, monkeypatch, width, "study", "summary", hetero_store)
    assert_whole(out, [cell for row in body for cell in row], width)
    assert "…" not in out


@pytest.mark.parametrize("spec", slow_cases(SOLVED, [str(ROOT / "specs" / "token" /
                                                              "kmeans-pagerank.json")]),
                         ids=lambda p: p.split("specs/")[1])
@pytest.mark.parametrize("width", WIDTHS)
def test_solve_tables_print_every_id_number_and_metric_whole(capsys, monkeypatch, spec, width):
    result = as_json(capsys, "solve", spec)
    out = table(capsys, monkeypatch, width, "solve", spec)
    allocation = result["allocation"]
    ids = list(allocation)[:25]
    cells = [*ids, *[f["check"] for f in result["validation"]],
             *[f["verdict"] for f in result["validation"]]]
    cells += [fmt(v) for uid in ids for v in _leaves(allocation[uid])]
    cells += [c for key, value in _dotted(result["metrics"]) for c in (key, fmt(value))
              if not isinstance(value, (list, dict))]
    assert_whole(out, cells, width)


def _leaves(value) -> list:
    """The numbers and names of a JSON value (an allocation's entry)."""
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [value] if value else []
    return [value]


def test_piped_tables_follow_columns_and_default_to_150(capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, _ = cli(capsys, "compare", EMRF2)
    assert code == 0 and max(map(len, out.splitlines())) == 150
    out = table(capsys, monkeypatch, 90, "compare", EMRF2)
    assert 80 < max(map(len, out.splitlines())) <= 90


def test_layout_keeps_fitting_tables_as_they_are_and_abbreviates_the_fewest_heads():
    from fairalloc.render import abbreviated, layout

    heads = ["utilization.cpu", "utilization.gpu", "status"]
    columns = [["0.5"], ["0.75"], ["optimal"]]
    assert layout(heads, columns, 80).widths is None
    assert layout(heads, columns, 45).heads == heads        # closer spacing first
    fit = layout(heads, columns, 35)
    assert fit.heads == ["u.cpu", "utilization.gpu", "status"], fit.heads
    assert fit.legend == "u.cpu: utilization.cpu"
    assert layout(heads, columns, 16) is None       # one block per row
    assert abbreviated(["utilization.gpu"] * 2, [5, 5]) == ["u.gpu", "u.gpu2"]


PDFLATEX = shutil.which("pdflatex")
needs_pdflatex = pytest.mark.skipif(
    PDFLATEX is None, reason="pdflatex is not installed (apt-get install texlive-latex-base "
                             "texlive-latex-recommended; .ci/run installs it before the tests)")
LATEX_TABLES = {          # the widest tables each command writes
    "solve": ("solve", EMRF2), "solve-hetero": ("solve", GAVEL),
    "compare": ("compare", EMRF2),
    "sweep": ("sweep", GAVEL, "--set", "jobs[5].weight=1,2", "--methods",
              "max-min,agnostic-max-min", "--workers", "1", "-q"),
}


def compiled_log(folder, tables: str, preamble: str = "") -> str:
    """The log of a minimal ``article`` that inputs ``tables`` (the packages they ask for)."""
    packages = re.search(r"\\usepackage\{([^}]*)\}", tables).group(1)
    (folder / "tables.tex").write_text(tables, encoding="utf-8")
    (folder / "doc.tex").write_text(
        f"\\documentclass{{article}}{preamble}\n\\usepackage{{{packages}}}\n"
        "\\begin{document}\n\\input{tables}\n\\end{document}\n", encoding="utf-8")
    done = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                          cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    return (folder / "doc.log").read_text(errors="replace")


@needs_pdflatex
@pytest.mark.parametrize("width", [None, "\\textwidth", "0.6\\linewidth"])
def test_latex_tables_compile_and_fit_the_width(tmp_path, capsys, hetero_store, width):
    flags = ["--format", "latex", *(["--latex-width", width] if width else [])]
    tables = [cli(capsys, *argv, *flags) for argv in LATEX_TABLES.values()]
    tables.append(cli(capsys, "study", "summary", hetero_store, "--values",
                      "ratio,time_s,metric.min_normalized_throughput", *flags))
    assert all(code in (0, 3) for code, _, _ in tables), [err for _, _, err in tables]
    text = "\n\\clearpage\n".join(out for _, out, _ in tables)
    log = compiled_log(tmp_path, text)
    assert "Overfull \\hbox" not in log, re.findall(r"Overfull \\hbox.*", log)
    assert text.count("\\begin{table}") == 3 * 2 + 3


@needs_pdflatex
def test_latex_free_text_wraps_in_a_two_column_page(tmp_path, capsys):
    code, out, err = cli(capsys, "solve", EMRF2, "--format", "latex")
    assert code in (0, 3), err
    checks = out[out.index(": checks}"):]
    assert "\\begin{tabularx}" in checks and "\\raggedright" in checks
    log = compiled_log(tmp_path, out, "[twocolumn]")
    assert "Overfull \\hbox" not in log, re.findall(r"Overfull \\hbox.*", log)


def test_latex_width_must_be_a_length(capsys):
    code, _, err = cli(capsys, "compare", EMRF2, "--format", "latex", "--latex-width",
                       "\\linewidth}\\input{x")
    assert code == 2 and "not a LaTeX length" in err

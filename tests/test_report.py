"""fairalloc report: a spec's or a study's report as one self-contained HTML file or as Markdown
with its figures beside it, checked as documents and, where Chromium is installed, in a real
headless browser (the DOM it renders, every request it makes, a screenshot that is not blank)."""

from __future__ import annotations

import functools
import html.parser
import http.server
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from clitools import ROOT, cli, slow_cases, write

from fairalloc import report

SPECS = ROOT / "specs"
EMRF1 = str(SPECS / "emrf" / "example1-knob0.5.json")
EXAMPLES = {"drf": "drf/classic.json", "emrf": "emrf/example1-knob0.5.json",
            "etf": "etf/example.json", "moldable": "moldable/example1.json",
            "accelos": "accelos/figure3.json", "token": "token/five-spark-types.json",
            "hetero": "hetero/agnostic-unfair.json"}


class Dom(html.parser.HTMLParser):
    """What a page holds: elements with their attributes, and its text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def ids(self) -> set[str]:
        return {a["id"] for _, a in self.elements if "id" in a}

    def count(self, tag: str) -> int:
        return sum(t == tag for t, _ in self.elements)


def external_references(dom: Dom) -> list[str]:
    """Every attribute that would make a browser fetch something (src, href, ...), except
    in-page anchors and data: URIs."""
    found = []
    for tag, attrs in dom.elements:
        for name in ("src", "href", "srcset", "poster", "data"):
            value = attrs.get(name)
            if value and not value.startswith(("#", "data:")) and tag != "a":
                found.append(f"<{tag} {name}={value}>")
    return found


@pytest.mark.parametrize("kind", slow_cases(sorted(EXAMPLES), ["token"]))
def test_every_kind_gets_a_self_contained_html_report(tmp_path, capsys, kind):
    out = tmp_path / "r.html"
    code, stdout, err = cli(capsys, "report", str(SPECS / EXAMPLES[kind]), "-o", str(out))
    assert code == 0 and stdout == "" and f"report written to {out}" in err
    text = out.read_text(encoding="utf-8")
    dom = Dom(text)
    assert {"comparison", "verdicts", "metrics", "allocation"} <= dom.ids()
    assert dom.count("script") == 0 and external_references(dom) == []
    assert "<style>" in text
    comparison = text[text.index('id="comparison"'):text.index("</table>",
                                                              text.index('id="comparison"'))]
    from fairalloc.registry import KINDS

    for method in KINDS[kind].methods:          # every method, side by side
        assert f"<td>{method}</td>" in comparison
    title = KINDS[kind].reference.split("*")[1]   # the paper, cited by its title
    assert "Reference" in dom.text and title in "".join(dom.text)


def test_a_report_has_witnesses_figures_and_the_papers_notes(tmp_path, capsys):
    out = tmp_path / "emrf.html"
    assert cli(capsys, "report", EMRF1, "-o", str(out))[0] == 0
    text = out.read_text(encoding="utf-8")
    dom = Dom(text)
    assert dom.count("details") >= 3 and "witness:" in text     # EF and SI fail with witnesses
    assert dom.count("svg") >= 1 and 'id="figure-sweep-knob"' in text
    assert "Notes on the paper" in text and "Theorem 1" in text   # fairalloc/notes/emrf.md
    assert "<strong>" in text                                      # its Markdown, as HTML


VERDICT_HEADS = {"SI": "sharing incentive", "EF": "envy-freeness",
                 "PE": "Pareto efficiency", "SP": "strategy-proofness"}


def _table(text: str, ident: str) -> str:
    start = text.index(f'id="{ident}"')
    return text[start:text.index("</p>", text.index("</table>", start))]


@pytest.mark.slow
def test_the_verdict_matrix_names_its_abbreviated_checks(tmp_path, capsys):
    """Each initialled column head (SI, EF, PE, SP) is an <abbr> titled with the check's name,
    and a legend under the matrix spells them out, in HTML and in Markdown."""
    html_out, markdown_out = tmp_path / "r.html", tmp_path / "r.md"
    assert cli(capsys, "report", EMRF1, "-o", str(html_out))[0] == 0
    assert cli(capsys, "report", EMRF1, "-o", str(markdown_out))[0] == 0
    matrix = _table(html_out.read_text(encoding="utf-8"), "verdicts")
    markdown = markdown_out.read_text(encoding="utf-8")
    verdicts = markdown[markdown.index("## Verdicts"):]
    for short, title in VERDICT_HEADS.items():
        assert f'<th><abbr title="{title}">{short}</abbr></th>' in matrix
        assert f"{short}: {title}" in matrix.rpartition("</table>")[2]
        assert f"{short}: {title}" in verdicts[:verdicts.index("\n## ", 3)]
    assert '<abbr title="δ-fairness">δ-fair</abbr>' in matrix       # words get a title too


@pytest.mark.parametrize("fmt", ["html", "markdown"])
def test_compare_tables_name_their_abbreviated_checks(capsys, fmt):
    code, out, _ = cli(capsys, "compare", EMRF1, "--format", fmt)
    assert code == 0
    for short, title in VERDICT_HEADS.items():
        assert f"{short}: {title}" in out
        assert (f'<abbr title="{title}">{short}</abbr>' in out) == (fmt == "html")


def test_a_markdown_report_writes_its_figures_beside_it(tmp_path, capsys):
    out = tmp_path / "gantt.md"
    code, _, err = cli(capsys, "report", str(SPECS / EXAMPLES["moldable"]), "-o", str(out))
    assert code == 0 and "figures in" in err
    text = out.read_text(encoding="utf-8")
    figures = sorted((tmp_path / "gantt_files").glob("*.svg"))
    assert [f.name for f in figures] == ["result.svg"]
    assert "![" in text and "(gantt_files/result.svg)" in text
    assert figures[0].read_text(encoding="utf-8").startswith("<svg")
    assert "| method | status |" in text and "## Verdicts" in text


def test_format_overrides_the_extension(tmp_path, capsys):
    out = tmp_path / "r.txt"
    assert cli(capsys, "report", EMRF1, "-o", str(out), "--format", "markdown",
               "--methods", "lp,drf")[0] == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# EMRF paper, Example 1") and "| wfq |" not in text


@pytest.fixture(scope="module")
def study_store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("study")
    study = {"study": "report-study", "kind": "moldable", "seed": 3,
             "methods": ["gpusched2", "offload-then-list"],
             "instances": {"generate": {"jobs": 6, "processors": 4}, "count": 6}}
    path = folder / "study.json"
    path.write_text(__import__("json").dumps(study), encoding="utf-8")
    from fairalloc.cli import main

    store = folder / "s.duckdb"
    assert main(["study", "run", str(path), "--store", str(store), "--workers", "1", "-q"]) == 0
    return store


def test_a_study_stores_report(tmp_path, capsys, study_store):
    out = tmp_path / "study.html"
    assert cli(capsys, "report", str(study_store), "-o", str(out))[0] == 0
    dom = Dom(out.read_text(encoding="utf-8"))
    assert "summary" in dom.ids() and dom.count("svg") >= 1
    assert "gpusched2" in "".join(dom.text) and external_references(dom) == []
    assert "Real-Time Scheduling upon a Host-Centric" in "".join(dom.text)   # its kind's paper


@pytest.mark.parametrize("argv, message", [
    (("missing.json", "-o", "r.html"), "missing.json"),
    (("STORE", "-o", "r.html", "--methods", "exact"), "solver and method flags are for a spec"),
    (("SPEC", "-o", "r.html", "--study", "x"), "names a study in a store"),
    (("SPEC", "-o", "nowhere/r.html"), "folder nowhere does not exist"),
])
def test_bad_report_arguments_exit_2(tmp_path, capsys, monkeypatch, study_store, argv, message):
    monkeypatch.chdir(tmp_path)
    argv = [{"STORE": str(study_store), "SPEC": EMRF1}.get(a, a) for a in argv]
    code, out, err = cli(capsys, "report", *argv)
    assert code == 2 and out == "" and message in err and "Traceback" not in err


def test_a_bad_spec_gets_its_paths(tmp_path, capsys):
    spec = write(tmp_path, {"problem": "drf", "capacity": {"cpu": -1}, "users": []})
    code, out, err = cli(capsys, "report", spec, "-o", str(tmp_path / "r.html"))
    assert code == 2 and out == "" and "capacity.cpu" in err
    assert not (tmp_path / "r.html").exists()


def test_notes_markdown_as_html():
    assert report.notes_html("# T\n\n- a **b**\n  c\n- `x<y`\n\ntext *i*") == (
        "<h3>T</h3>\n<ul><li>a <strong>b</strong> c</li><li><code>x&lt;y</code></li></ul>\n"
        "<p>text <em>i</em></p>")


# --- in a real browser ----------------------------------------------------------------------

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)
needs_browser = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install "
                             "chromium; .ci/run installs it before the tests)")


class Recorder(http.server.SimpleHTTPRequestHandler):
    """Serves a folder and records every request with its status."""

    requests: list[tuple[str, int]]

    def log_request(self, code="-", size="-"):
        self.requests.append((self.path, int(code) if str(code).isdigit() else 0))

    def log_message(self, *args):
        pass


def serve(folder: Path):
    """A local HTTP server for ``folder`` that records requests: (server, requests)."""
    requests: list[tuple[str, int]] = []
    handler = type("Handler", (Recorder,), {"requests": requests})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, requests


def chromium(url: str, *flags: str) -> subprocess.CompletedProcess:
    """Headless Chromium with scripts off (a report must read without them)."""
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-extensions", "--disable-javascript",
         *flags, url], capture_output=True, text=True, timeout=120)


def page_requests(folder: Path, page: str) -> tuple[str, list[tuple[str, int]]]:
    """The DOM Chromium renders for ``page`` and every request it made (the page's own and
    the favicon aside)."""
    server, requests = serve(folder)
    try:
        done = chromium(f"http://127.0.0.1:{server.server_port}/{page}", "--dump-dom",
                        "--virtual-time-budget=5000")
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, [(p, c) for p, c in requests if p not in (f"/{page}", "/favicon.ico")]


@pytest.mark.slow
@needs_browser
def test_the_request_check_can_fail(tmp_path):
    (tmp_path / "bad.html").write_text('<p>x</p><img src="missing.png">', encoding="utf-8")
    _, requests = page_requests(tmp_path, "bad.html")
    assert ("/missing.png", 404) in requests


@pytest.mark.slow
@needs_browser
def test_the_report_renders_in_chromium(tmp_path, capsys):
    assert cli(capsys, "report", EMRF1, "-o", str(tmp_path / "report.html"))[0] == 0
    rendered, requests = page_requests(tmp_path, "report.html")
    assert requests == []                          # nothing fetched, nothing failed
    dom = Dom(rendered)
    assert {"comparison", "verdicts"} <= dom.ids()
    rows = rendered[rendered.index('id="verdicts"'):]
    assert rows.count("<tr>") >= 4                 # a header and the three EMRF methods
    assert dom.count("details") >= 3 and dom.count("svg") >= 1


@pytest.mark.slow
@needs_browser
def test_the_reports_screenshot_is_not_blank(tmp_path, capsys):
    from matplotlib import image

    assert cli(capsys, "report", EMRF1, "-o", str(tmp_path / "report.html"))[0] == 0
    shot = tmp_path / "shot.png"
    done = chromium((tmp_path / "report.html").as_uri(), f"--screenshot={shot}",
                    "--window-size=1200,1600")
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    pixels = image.imread(str(shot))[..., :3]
    assert pixels.shape[:2] == (1600, 1200)
    dark = (pixels.mean(axis=2) < 0.5).mean()      # text, rules and plot lines
    assert 0.005 < dark < 0.5 and float(np.std(pixels)) > 0.05

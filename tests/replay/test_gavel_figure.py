"""benchmarks/gavel_figure.py, the figures of docs/replay.md's figure 8 and figure 9 sections:
each follows the figure rules, names the rates a partial sweep lacks, leaves out the difference
panel when no rate is one of Gavel's and the panels of policies the store has no run of, shows
Gavel re-run here beside its printed values, and draws from a study's store."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from clitools import ROOT
from paper.gavel_figure8 import FIGURE_8, FIGURE_8_RATES
from paper.gavel_figure9 import FIGURE_9, FIGURE_9_RATES, FIGURE_9_RERUN
from test_replay_figures import captured, problems

from fairalloc import api

SCRIPT = ROOT / "benchmarks" / "gavel_figure.py"
FIGURE_9_POLICIES = ("agnostic-max-min", "max-min", "fifo", "fifo-aware")


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("gavel_figure", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module     # its dataclass looks its module up while it is made
    spec.loader.exec_module(module)
    return module


def drawn(script, monkeypatch, tmp_path, number, measured):
    figures = captured(monkeypatch)
    monkeypatch.setattr(script, "save", lambda fig, path: figures.append(fig))
    script.draw(script.FIGURES[number], measured, str(tmp_path / "x.png"))
    fig, = figures
    return fig


def test_the_whole_sweep_follows_the_figure_rules(script, monkeypatch, tmp_path):
    measured = {p: {x: 1.02 * v for x, v in values.items()} for p, values in FIGURE_8.items()}
    fig = drawn(script, monkeypatch, tmp_path, 8, measured)
    assert len(fig.axes) == 2 and problems(fig) == []
    assert "no " not in fig._suptitle.get_text()
    table = script.table(script.FIGURES[8], measured)
    assert "–" not in table and "+2.0%" in table and "re-run" not in table


def test_a_partial_sweep_names_the_rates_it_lacks(script, monkeypatch, tmp_path):
    measured = {"max-min": {0.4: 17.0, 5.6: 30.0}}
    fig = drawn(script, monkeypatch, tmp_path, 8, measured)
    title = " ".join(fig._suptitle.get_text().split())      # wrapped lines joined
    assert "no agnostic-max-min run" in title       # none at all: no list of every rate
    assert "no agnostic-max-min run at" not in title
    assert "no max-min run at 0.8, 1.2" in title and problems(fig) == []
    rows = script.table(script.FIGURES[8], measured).splitlines()[2:]
    assert len(rows) == len(FIGURE_8_RATES) and rows[1].startswith("| 0.8 | – |")


def test_rates_gavel_did_not_print_leave_out_the_difference_panel(script, monkeypatch,
                                                                   tmp_path):
    fig = drawn(script, monkeypatch, tmp_path, 8, {"max-min": {1.0: 17.0, 3.0: 16.0}})
    assert len(fig.axes) == 1 and problems(fig) == []


def test_figure_9_draws_a_panel_per_group_with_gavel_re_run(script, monkeypatch, tmp_path):
    """LAS and FIFO measured, no finish-time policy: two JCT panels and the difference; the
    FIFO panel spans decades (a log axis); a difference beyond the panel's reach sits at its
    edge; Gavel re-run's points are drawn and tabled."""
    measured = {p: {x: 0.95 * v for x, v in FIGURE_9[p].items()} for p in FIGURE_9_POLICIES}
    measured["fifo"][2.0] = 40 * FIGURE_9["fifo"][2.0]
    fig = drawn(script, monkeypatch, tmp_path, 9, measured)
    assert len(fig.axes) == 3 and problems(fig) == []
    las, fifo, difference = fig.axes
    assert las.get_yscale() == "linear" and fifo.get_yscale() == "log"
    assert "re-run here" in " ".join(line.get_label() for line in las.lines)
    assert max(difference.get_ylim()) < 60 and "at the edge" in difference.get_title()
    tables = script.table(script.FIGURES[9], measured)
    assert tables.count("| jobs/h |") == 2 and "Gavel re-run" in tables
    rerun = FIGURE_9_RERUN["max-min"][2.0]
    assert f"{rerun:.2f} (fairalloc {100 * (0.95 * 21.90 / rerun - 1):+.1f}%)" in tables
    rows = tables.split("\n\n")[0].splitlines()[2:]
    assert len(rows) == len(FIGURE_9_RATES) and rows[-1].startswith("| 3 | – | – |")
    assert "agnostic/aware at 2.8 jobs/h: 3.05 (+0.0% of Gavel's 3.05" in \
        script.ratio_line(script.FIGURES[9], measured)


@pytest.mark.slow
def test_it_draws_from_a_replay_studys_store(script, tmp_path, capsys):
    store, png = tmp_path / "quick.duckdb", tmp_path / "fig8.png"
    api.run_study(str(ROOT / "specs" / "studies" / "replay-quick.json"), str(store), workers=1)
    assert set(script.measured_hours(str(store))) == {"agnostic-max-min", "max-min"}
    assert script.main(["8", str(store), "-o", str(png)]) == 0
    assert png.read_bytes().startswith(b"\x89PNG")
    assert "| 0.4 | – | 17.58 |" in capsys.readouterr().out
    assert script.main(["9", str(store), str(store), "-o", str(tmp_path / "fig9.png")]) == 0
    assert "| 0.4 | – | 18.58 |" in capsys.readouterr().out

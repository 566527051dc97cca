"""benchmarks/gavel_fig8_figure.py, the figure of docs/replay.md's figure 8 section: it follows
the figure rules, names the rates a partial sweep lacks, leaves out the difference panel when
no rate is one of Gavel's, and draws from a study's store."""

from __future__ import annotations

import importlib.util

import pytest
from clitools import ROOT
from paper.gavel_figure8 import FIGURE_8, FIGURE_8_RATES
from test_replay_figures import captured, problems

from fairalloc import api

SCRIPT = ROOT / "benchmarks" / "gavel_fig8_figure.py"


@pytest.fixture(scope="module")
def figure8():
    spec = importlib.util.spec_from_file_location("gavel_fig8_figure", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def drawn(figure8, monkeypatch, tmp_path, measured):
    figures = captured(monkeypatch)
    monkeypatch.setattr(figure8, "save", lambda fig, path: figures.append(fig))
    figure8.draw(measured, str(tmp_path / "x.png"))
    fig, = figures
    return fig


def test_the_whole_sweep_follows_the_figure_rules(figure8, monkeypatch, tmp_path):
    measured = {p: {x: 1.02 * v for x, v in values.items()} for p, values in FIGURE_8.items()}
    fig = drawn(figure8, monkeypatch, tmp_path, measured)
    assert len(fig.axes) == 2 and problems(fig) == []
    assert "no " not in fig._suptitle.get_text()
    assert "–" not in figure8.table(measured) and "+2.0%" in figure8.table(measured)


def test_a_partial_sweep_names_the_rates_it_lacks(figure8, monkeypatch, tmp_path):
    measured = {"max-min": {0.4: 17.0, 5.6: 30.0}}
    fig = drawn(figure8, monkeypatch, tmp_path, measured)
    title = " ".join(fig._suptitle.get_text().split())      # wrapped lines joined
    assert "no agnostic-max-min run at 0.4, 0.8" in title
    assert "no max-min run at 0.8, 1.2" in title and problems(fig) == []
    rows = figure8.table(measured).splitlines()[2:]
    assert len(rows) == len(FIGURE_8_RATES) and rows[1].startswith("| 0.8 | – |")


def test_rates_gavel_did_not_print_leave_out_the_difference_panel(figure8, monkeypatch,
                                                                   tmp_path):
    fig = drawn(figure8, monkeypatch, tmp_path, {"max-min": {1.0: 17.0, 3.0: 16.0}})
    assert len(fig.axes) == 1 and problems(fig) == []


@pytest.mark.slow
def test_it_draws_from_a_replay_studys_store(figure8, tmp_path, capsys):
    store, png = tmp_path / "quick.duckdb", tmp_path / "fig8.png"
    api.run_study(str(ROOT / "specs" / "studies" / "replay-quick.json"), str(store), workers=1)
    assert set(figure8.measured_hours(str(store))) == {"agnostic-max-min", "max-min"}
    assert figure8.main([str(store), str(png)]) == 0
    assert png.read_bytes().startswith(b"\x89PNG")
    assert "| 0.4 | – | 17.58 |" in capsys.readouterr().out

"""Replay figures follow the figure rules (issue 27): every legend inside its axes and off the
data, every axis labelled (a y axis with its unit), no empty and no duplicated panel; the
study summary, the report and ``replay --plot`` draw them."""

from __future__ import annotations

import numpy as np
import pytest
from clitools import ROOT, cli

from fairalloc import api, plots
from fairalloc.studies import plots as study_plots

QUICK = ROOT / "specs" / "studies" / "replay-quick.json"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("replays") / "quick.duckdb"
    api.run_study(str(QUICK), str(path), workers=1)
    return str(path)


def captured(monkeypatch) -> list:
    figures = []
    for module in (plots, study_plots):
        monkeypatch.setattr(module, "save", lambda fig, path: figures.append(fig))
    return figures


def problems(fig) -> list[str]:
    """What breaks the figure rules, one line each."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    titles = [ax.get_title() for ax in fig.axes]
    out += [f"duplicated panel {t!r}" for t in set(titles) if titles.count(t) > 1]
    for ax in fig.axes:
        name = ax.get_title() or "untitled"
        drawn = ax.lines + ax.collections + ax.patches
        if not drawn:
            out.append(f"{name}: empty panel")
        if not ax.get_xlabel():
            out.append(f"{name}: no x label")
        if "(" not in ax.get_ylabel():
            out.append(f"{name}: y label without a unit: {ax.get_ylabel()!r}")
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        frame = ax.get_window_extent(renderer)
        if not (box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1
                and box.y1 <= frame.y1 + 1):
            out.append(f"{name}: legend outside its axes")
        for line in ax.lines:       # its path as drawn (steps too), each segment sampled
            xy = line.get_path().interpolated(40).vertices
            points = line.get_transform().transform(xy[np.isfinite(xy).all(axis=1)])
            inside = ((points[:, 0] > box.x0) & (points[:, 0] < box.x1)
                      & (points[:, 1] > box.y0) & (points[:, 1] < box.y1))
            if inside.any():
                out.append(f"{name}: legend over {line.get_label()!r}")
        for patch in ax.patches:
            if patch.get_window_extent(renderer).overlaps(box):
                out.append(f"{name}: legend over a bar")
    return out


def test_the_study_figure_follows_the_rules(store, monkeypatch, tmp_path):
    figures = captured(monkeypatch)
    found = api.summary(store)
    jobs, over = api.replay_rows(store)
    study_plots.replay_study(found.rows, jobs, over, [*found.record["grid"]], found.title,
                       str(tmp_path / "x.png"))
    fig, = figures
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("average JCT against trace.rate")
    assert any(t.startswith("finish-time fairness") for t in titles)
    assert any(t.startswith("the checks") for t in titles)
    assert problems(fig) == []


def test_a_panel_with_nothing_to_show_is_left_out(store, monkeypatch, tmp_path):
    figures = captured(monkeypatch)
    found = api.summary(store)
    jobs, over = api.replay_rows(store)
    rows = {k: v for k, v in found.rows.items() if not k.startswith("metric.verdicts.")}
    jobs = {**jobs, "rho": np.full(len(jobs["rho"]), np.nan)}
    study_plots.replay_study(rows, jobs, over, [*found.record["grid"]], found.title,
                       str(tmp_path / "x.png"))
    titles = [ax.get_title() for ax in figures[0].axes]
    assert len(titles) == 3 and not any("fairness" in t or "checks" in t for t in titles)


def test_one_replay_draws_its_cdfs_utilisation_and_checks(monkeypatch, tmp_path):
    figures = captured(monkeypatch)
    plots.replay_run(api.replay(ROOT / "specs" / "replay" / "quick.json"),
                     str(tmp_path / "x.png"))
    fig, = figures
    assert [ax.get_title() for ax in fig.axes] == [
        "JCT of the jobs that finished", "finish-time fairness", "utilisation over time",
        "the checks on the allocations judged"]
    assert problems(fig) == []


def test_one_replay_leaves_out_a_panel_with_nothing_to_show(monkeypatch, tmp_path):
    figures = captured(monkeypatch)
    run = api.replay(ROOT / "specs" / "replay" / "quick.json")
    run.jobs["rho"][:] = np.nan
    run.verdicts = {}
    plots.replay_run(run, str(tmp_path / "x.png"))
    assert [ax.get_title() for ax in figures[0].axes] == ["JCT of the jobs that finished",
                                                           "utilisation over time"]


def test_the_commands_draw_and_report_a_replay_study(store, tmp_path, capsys):
    png, html = tmp_path / "s.png", tmp_path / "r.html"
    assert cli(capsys, "study", "summary", store, "--plot", str(png))[0] == 0
    assert png.read_bytes().startswith(b"\x89PNG")
    assert cli(capsys, "report", store, "-o", str(html))[0] == 0
    text = html.read_text()
    assert "hetero replays" in text and "<svg" in text and "The replay document" in text
    one = tmp_path / "one.svg"
    code, _, _ = cli(capsys, "replay", str(ROOT / "specs" / "replay" / "quick.json"),
                     "--plot", str(one))
    assert code == 0 and "utilisation over time" in one.read_text()

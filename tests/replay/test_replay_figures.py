"""Replay figures follow the figure rules (issue 27, legends moved below the axes by issue 33):
every legend in the figure and off the data, its axes' labels and the other panels, every axis
labelled (the axis of values with its unit), no empty and no duplicated panel; the study
summary, the report and ``replay --plot`` draw them."""

from __future__ import annotations

import json

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


def _numeric(text: str) -> bool:
    """Whether a tick label is a number (matplotlib writes minus signs and powers as math)."""
    plain = text.replace("\N{MINUS SIGN}", "-").strip("$").replace("\\mathdefault{", "")
    try:
        float(plain.replace("}", "").replace("10^{", "1e"))
    except ValueError:
        return False
    return True


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
        # the axis of values names its unit: y, or x beside a y axis of names (horizontal bars)
        named = any(t.get_text() and not _numeric(t.get_text()) for t in ax.get_yticklabels())
        values = ax.get_xlabel() if named else ax.get_ylabel()
        if "(" not in values:
            out.append(f"{name}: axis of values without a unit: {values!r}")
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        page = fig.bbox
        if not (box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y0 >= page.y0 - 1
                and box.y1 <= page.y1 + 1):
            out.append(f"{name}: legend outside the figure")
        labels = [ax.xaxis.label, *ax.get_xticklabels()]
        if any(t.get_text() and t.get_window_extent(renderer).overlaps(box) for t in labels):
            out.append(f"{name}: legend over its x axis's labels")
        for other in fig.axes:
            if other is not ax and other.get_visible() and \
                    other.get_window_extent(renderer).overlaps(box):
                out.append(f"{name}: legend over the panel {other.get_title()!r}")
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_one_replay_draws_its_cdfs_utilisation_and_checks(monkeypatch, tmp_path):
    figures = captured(monkeypatch)
    plots.replay_run(api.replay(ROOT / "specs" / "replay" / "quick.json"),
                     str(tmp_path / "x.png"))
    fig, = figures
    assert [ax.get_title() for ax in fig.axes] == [
        "JCT of the jobs that finished, all jobs", "finish-time fairness, all jobs",
        "utilisation over time (whole run)",
        "the checks on the allocations judged"]
    assert problems(fig) == []


@pytest.mark.slow
def test_a_fifo_replay_reads_at_any_spread_and_any_number_of_checks(monkeypatch, tmp_path):
    """FIFO's rho spans two decades (0.3 to 17 here): its CDF on a log axis; six checks' names
    stay apart; one run's worker types differ by colour, not only by dash (issue 33 §3)."""
    figures = captured(monkeypatch)
    doc = json.loads((ROOT / "specs" / "replay" / "quick.json").read_text())
    doc["policy"] = {"method": "fifo"}
    doc["trace"].update(jobs=30, rate=6)
    doc["measure"] = {"checks": {"every": 4}}
    run = api.replay(doc)
    assert np.nanmax(run.jobs["rho"]) > 10 * np.nanmin(run.jobs["rho"])
    plots.replay_run(run, str(tmp_path / "x.png"))
    fig, = figures
    assert problems(fig) == []
    axes = {ax.get_title(): ax for ax in fig.axes}
    rho = axes["finish-time fairness, all jobs"]
    assert rho.get_xscale() == "log" and "log scale" in rho.get_xlabel()
    checks = axes["the checks on the allocations judged"]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    names = [t for t in checks.get_yticklabels() + checks.get_xticklabels() if t.get_text()]
    assert len(checks.get_yticklabels()) == 6
    boxes = [t.get_window_extent(renderer) for t in names]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    used = axes["utilisation over time (whole run)"]
    assert len({line.get_color() for line in used.lines}) == len(run.resources)


def test_one_replay_leaves_out_a_panel_with_nothing_to_show(monkeypatch, tmp_path):
    figures = captured(monkeypatch)
    run = api.replay(ROOT / "specs" / "replay" / "quick.json")
    run.jobs["rho"][:] = np.nan
    run.verdicts = {}
    plots.replay_run(run, str(tmp_path / "x.png"))
    assert [ax.get_title() for ax in figures[0].axes] == [
        "JCT of the jobs that finished, all jobs", "utilisation over time (whole run)"]


@pytest.mark.slow
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

"""Figures a paper reader can use: files by extension (PNG, SVG, PDF), axes that name their
quantity and unit with one unit to an axis, several methods overlaid, the trade-off view, an
untitled spec titled by its file name, distinct Gantt colours past 20 jobs, whisker legends."""

from __future__ import annotations

import json
import re

import pytest
from clitools import ROOT, cli

from fairalloc.plots.moldable import job_colors
from fairalloc.registry import KINDS

EMRF1 = str(ROOT / "specs" / "emrf" / "example1-knob0.5.json")
MOLDABLE1 = str(ROOT / "specs" / "moldable" / "example1.json")


def svg_texts(path) -> list[str]:
    """The text elements of an SVG figure (matplotlib keeps text as text: svg.fonttype none)."""
    return [re.sub(r"\s+", " ", t).strip()
            for t in re.findall(r"<text[^>]*>(.*?)</text>", path.read_text(), re.S)]


@pytest.mark.parametrize("suffix, magic", [("png", b"\x89PNG"), ("svg", b"<?xml"),
                                           ("pdf", b"%PDF")])
def test_the_extension_chooses_the_format(tmp_path, capsys, suffix, magic):
    path = tmp_path / f"sweep.{suffix}"
    code, _, err = cli(capsys, "sweep", EMRF1, "--set", "knob=0,1", "--plot", str(path))
    assert code == 0, err
    assert path.read_bytes().startswith(magic)


def test_a_sweep_puts_one_unit_on_an_axis_and_overlays_methods(tmp_path, capsys):
    path = tmp_path / "sweep.svg"
    assert cli(capsys, "sweep", EMRF1, "--set", "knob=0:1:0.5", "--methods", "lp,wfq",
               "--plot", str(path))[0] == 0
    texts = svg_texts(path)
    kind = KINDS["emrf"]
    for label in (kind.unit("objective"), kind.unit("utilization.cpu"),
                  kind.unit("delta_observed")):
        assert label.replace("&", "&amp;") in texts, label
    # the utilisations and the deltas are different quantities: different axes
    assert kind.unit("utilization.cpu") != kind.unit("delta_observed")
    for legend in ("lp: utilization.gpu", "wfq: utilization.gpu", "lp: delta_observed"):
        assert legend in texts
    assert "trade-off over the sweep of knob" in texts          # utilisation against δ


def test_an_untitled_spec_is_titled_by_its_file_name(tmp_path, capsys):
    spec = json.loads((ROOT / "specs" / "moldable" / "example1.json").read_text())
    spec.pop("name", None)
    spec.pop("description", None)
    path = tmp_path / "my-cluster.json"
    path.write_text(json.dumps(spec))
    gantt = tmp_path / "gantt.svg"
    assert cli(capsys, "solve", str(path), "--plot", str(gantt))[0] == 0
    assert any(t.startswith("my-cluster.json — ") for t in svg_texts(gantt))
    sweep = tmp_path / "sweep.svg"
    assert cli(capsys, "sweep", str(path), "--set", "processors=8,9", "--plot", str(sweep))[0] == 0
    assert "my-cluster.json: sweep of processors" in svg_texts(sweep)


def test_gantt_colours_stay_distinct_past_twenty_jobs():
    for n in (5, 20, 21, 60, 200):
        colors = [tuple(round(float(c), 6) for c in color[:3]) for color in job_colors(n)]
        assert len(set(colors)) == n


def test_box_plots_say_what_their_whiskers_are(tmp_path, capsys):
    path = tmp_path / "boxes.svg"
    assert cli(capsys, "experiment", "moldable", "--jobs", "5", "--processors", "3",
               "--instances", "4", "--workers", "1", "--plot", str(path))[0] == 0
    assert "box: p25–p75, line: median, whiskers: p10–p90" in svg_texts(path)


def test_every_kind_labels_its_objective():
    for kind in KINDS.values():
        assert kind.unit("objective") != "objective", kind.name


def test_a_metric_equal_to_the_objective_gets_no_panel_of_its_own(tmp_path, capsys):
    """hetero's objective is min_normalized_throughput: one panel (the objective's), and the
    metric still serves the trade-off view."""
    path = tmp_path / "hetero.svg"
    spec = str(ROOT / "specs" / "hetero" / "agnostic-unfair.json")
    assert cli(capsys, "sweep", spec, "--set", "jobs[0].weight=1,2", "--methods",
               "max-min,agnostic-max-min", "--plot", str(path))[0] == 0
    texts = svg_texts(path)
    assert "max-min: min_normalized_throughput" not in texts      # no legend of its panel
    assert "max-min: total_normalized_throughput" in texts
    assert "trade-off over the sweep of jobs[0].weight" in texts

"""Figures a paper reader can use: files by extension (PNG, SVG, PDF), axes that name their
quantity and unit with one unit to an axis, several methods overlaid, the trade-off view, an
untitled spec titled by its file name, distinct Gantt colours past 20 jobs, whisker legends."""

from __future__ import annotations

import json
import re

import pytest
from clitools import ROOT, cli, slow_cases

from fairalloc.plots.moldable import job_colors
from fairalloc.registry import KINDS

EMRF1 = str(ROOT / "specs" / "emrf" / "example1-knob0.5.json")
MOLDABLE1 = str(ROOT / "specs" / "moldable" / "example1.json")


def svg_texts(path) -> list[str]:
    """The text elements of an SVG figure (matplotlib keeps text as text: svg.fonttype none)."""
    return [re.sub(r"\s+", " ", t).strip()
            for t in re.findall(r"<text[^>]*>(.*?)</text>", path.read_text(), re.S)]


@pytest.mark.slow
@pytest.mark.parametrize("suffix, magic", [("png", b"\x89PNG"), ("svg", b"<?xml"),
                                           ("pdf", b"%PDF")])
def test_the_extension_chooses_the_format(tmp_path, capsys, suffix, magic):
    path = tmp_path / f"sweep.{suffix}"
    code, _, err = cli(capsys, "sweep", EMRF1, "--set", "knob=0,1", "--plot", str(path))
    assert code == 0, err
    assert path.read_bytes().startswith(magic)


@pytest.mark.slow
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
    # a legend entry per method (colour, marker) and per metric (line style), not per pair
    for legend in ("lp", "wfq", "utilization.gpu", "utilization.cpu"):
        assert legend in texts
    assert "lp: utilization.gpu" not in texts
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


@pytest.mark.slow
def test_a_metric_equal_to_the_objective_gets_no_panel_of_its_own(tmp_path, capsys):
    """hetero's objective is min_normalized_throughput: one panel (the objective's), and the
    metric still serves the trade-off view."""
    path = tmp_path / "hetero.svg"
    spec = str(ROOT / "specs" / "hetero" / "agnostic-unfair.json")
    assert cli(capsys, "sweep", spec, "--set", "jobs[0].weight=1,2", "--methods",
               "max-min,agnostic-max-min", "--plot", str(path))[0] == 0
    texts = svg_texts(path)
    assert "min_normalized_throughput" not in texts      # no panel of its own
    assert "total_normalized_throughput" in texts
    assert "trade-off over the sweep of jobs[0].weight" in texts


# --- what every figure is held to, measured on matplotlib's artists -----------------------------
#
# Each figure a command saves is caught as it is saved (``Figure.savefig``) and measured in
# display coordinates: legends against the figure's box, the plotted points and every label;
# each axis's label; each panel's data against the others'.

# axis labels of quantities without a unit; none so far (a count says "(count)")
UNITLESS: tuple[str, ...] = ()
MOST_LEGEND_ENTRIES = 12
MOST_CATEGORIES = 32          # rows of a strip: more cannot be read (28 processors can)


@pytest.fixture
def figures(monkeypatch):
    """The defects of each figure saved while the test runs, measured as it is saved (before
    it is closed)."""
    from matplotlib.figure import Figure

    saved = []
    savefig = Figure.savefig

    def recording(fig, *args, **kwargs):
        savefig(fig, *args, **kwargs)
        saved.append(defects(fig))

    monkeypatch.setattr(Figure, "savefig", recording)
    return saved


def defects(fig) -> list[str]:
    """What is wrong with a drawn figure, one line each (empty: nothing found)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.axison]
    legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend()]
    legends += [(None, legend) for legend in fig.legends]
    out = []
    for ax, legend in legends:
        box = legend.get_window_extent(renderer)
        name = _panel_name(ax) if ax is not None else "the figure"
        if not _inside(box, fig.bbox):
            out.append(f"{name}: legend outside the figure ({_box(box)} vs {_box(fig.bbox)})")
        if len(legend.get_texts()) > MOST_LEGEND_ENTRIES:
            out.append(f"{name}: legend of {len(legend.get_texts())} entries")
        for other in axes:
            covered = _points_under(box.padded(-1), other, renderer)
            if covered:
                out.append(f"{name}: legend over {covered} plotted points of "
                           f"{_panel_name(other)}")
            for text in _labels(other):
                if text.get_text() and box.overlaps(text.get_window_extent(renderer)):
                    out.append(f"{name}: legend over the text {text.get_text()!r}")
        for text in fig.texts:              # the notes under a figure
            if text.get_text() and box.overlaps(text.get_window_extent(renderer)):
                out.append(f"{name}: legend over the note {text.get_text()!r}")
    for ax in axes:
        out += _crowded_ticks(ax, renderer)
        out += _unit_defects(ax)
        out += _empty_panel_defects(ax)
        out += _hidden_line_defects(ax)
    signatures = [(_panel_name(ax), _data(ax)) for ax in axes]
    for i, (name, data) in enumerate(signatures):
        for other, same in signatures[:i]:
            if data and data == same:
                out.append(f"{name}: the same data as {other}")
    return out


def _panel_name(ax) -> str:
    return repr(ax.get_title() or ax.get_ylabel() or "a panel")


def _inside(box, outer, tolerance: float = 1.0) -> bool:
    return (box.x0 >= outer.x0 - tolerance and box.y0 >= outer.y0 - tolerance
            and box.x1 <= outer.x1 + tolerance and box.y1 <= outer.y1 + tolerance)


def _box(box) -> str:
    return f"[{box.x0:.0f}, {box.x1:.0f}] x [{box.y0:.0f}, {box.y1:.0f}]"


def _points_under(box, ax, renderer) -> int:
    """How many of the panel's drawn points (line vertices, and points along each segment;
    scatter points; bars) lie under ``box``, counting only what the panel's frame shows."""
    import numpy as np

    frame = ax.get_window_extent(renderer)
    points = []
    for line in ax.get_lines():
        xy = np.asarray(line.get_xydata(), float)
        if not line.get_visible() or len(xy) == 0:
            continue
        shown = line.get_transform().transform(xy)
        points.append(shown)
        for a, b in zip(shown[:-1], shown[1:]):        # a line hides what its segments cross
            points.append(a + np.linspace(0, 1, 25)[:, None] * (b - a))
    for collection in ax.collections:
        offsets = np.asarray(collection.get_offsets(), float)
        if len(offsets) and collection.get_visible():
            points.append(collection.get_offset_transform().transform(offsets))
    for patch in ax.patches:                           # bars: a legend over one hides it
        extent = patch.get_window_extent(renderer)
        if patch.get_visible() and extent.width > 0 and extent.height > 0 \
                and box.overlaps(extent):
            points.append(np.array([[(extent.x0 + extent.x1) / 2, extent.y1]]))
    if not points:
        return 0
    xy = np.concatenate(points)
    xy = xy[np.isfinite(xy).all(axis=1)]
    seen = ((xy[:, 0] >= frame.x0) & (xy[:, 0] <= frame.x1) & (xy[:, 1] >= frame.y0)
            & (xy[:, 1] <= frame.y1))
    under = ((xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0)
             & (xy[:, 1] < box.y1))
    return int((seen & under).sum())


def _crowded_ticks(ax, renderer) -> list[str]:
    """Tick labels of one axis that run into each other: their boxes overlap or, slanted by
    an angle θ, two labels d apart along the axis are closer than a line (d sin θ < height)."""
    import math

    out = []
    for axis in (ax.xaxis, ax.yaxis):
        shown = [t for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
        for a, b in zip(shown, shown[1:]):
            slant = math.radians(b.get_rotation() % 180)
            if axis is ax.xaxis and math.sin(slant) and math.cos(slant):
                d = abs(float(ax.transData.transform((b.get_position()[0], 0))[0]
                              - ax.transData.transform((a.get_position()[0], 0))[0]))
                crowded = d * math.sin(slant) < b.get_fontsize() * ax.figure.dpi / 72
            else:
                crowded = a.get_window_extent(renderer).overlaps(b.get_window_extent(renderer))
            if crowded:
                out.append(f"{_panel_name(ax)}: tick labels {a.get_text()!r} and "
                           f"{b.get_text()!r} run into each other")
    return out


def _labels(ax) -> list:
    """The texts of a panel a legend must leave readable: axis labels, title, tick labels."""
    texts = [ax.xaxis.label, ax.yaxis.label, ax.title]
    texts += [t for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_visible()]
    return texts


def _categorical(axis) -> bool:
    """Whether an axis's ticks name categories (methods, checks, processors), not numbers."""
    texts = [t.get_text() for t in axis.get_ticklabels()]
    numbers = [re.sub(r"\\mathdefault|\\times|[${}^−\-+.,\s\d]", "", t) for t in texts]
    return not axis.get_ticklocs().size or any(n for n in numbers)


def _unit_defects(ax) -> list[str]:
    """An axis of numbers whose label names no unit; an axis of too many categories."""
    out = []
    for axis, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
        label = axis.label.get_text()
        if _categorical(axis):
            if len(axis.get_ticklocs()) > MOST_CATEGORIES:
                out.append(f"{_panel_name(ax)}: {len(axis.get_ticklocs())} rows on its {name} axis")
            continue
        if not (re.search(r"\(.+\)", label) or label in UNITLESS):
            out.append(f"{_panel_name(ax)}: {name} axis label {label!r} names no unit")
    return out


def _series(ax) -> list:
    """The panel's plotted lines with data, as (x, y) arrays."""
    import numpy as np

    out = []
    for line in ax.get_lines():
        xy = np.asarray(line.get_xydata(), float)
        if line.get_visible() and len(xy) and line.get_transform().contains_branch(ax.transData):
            out.append((line, xy[:, 0], xy[:, 1]))
    return out


def _empty_panel_defects(ax) -> list[str]:
    """A panel with nothing to show: numerical noise (every value within 1e-9 of zero), one
    value of x for every point (a column), or y = x (an identity line)."""
    import numpy as np

    series = [(line, x, y) for line, x, y in _series(ax) if len(x) > 1]
    if not series:
        return []
    ys = np.concatenate([y for _, _, y in series])
    name = _panel_name(ax)
    if np.nanmax(np.abs(ys)) <= 1e-9 and np.nanmax(np.abs(ys)) > 0:
        return [f"{name}: every value is numerical noise (at most {np.nanmax(np.abs(ys)):.1e})"]
    if all(np.ptp(x) <= 1e-9 * max(1.0, np.abs(x).max()) for _, x, _ in series):
        return [f"{name}: every point at one x (a column of dots)"]
    if all(np.allclose(x, y) for _, x, y in series):
        return [f"{name}: an identity line (y = x)"]
    return []


def _hidden_line_defects(ax) -> list[str]:
    """Two lines of one panel with the same points drawn alike: one hides the other."""
    series = [s for s in _series(ax) if not s[0].get_label().startswith("_")]
    out = []
    for i, (line, x, y) in enumerate(series):
        for other, x2, y2 in series[:i]:
            same_points = len(x) > 1 and x.shape == x2.shape and (x == x2).all() and \
                (abs(y - y2) <= 1e-12 * (1 + abs(y))).all()
            alike = (line.get_marker(), line.get_linestyle(), line.get_markerfacecolor()) == \
                (other.get_marker(), other.get_linestyle(), other.get_markerfacecolor())
            if same_points and alike:
                out.append(f"{_panel_name(ax)}: {line.get_label()!r} hides "
                           f"{other.get_label()!r} (same points, same marks)")
    return out


def _data(ax) -> tuple:
    """What a panel plots, rounded, in a comparable form (lines and scatter points)."""
    import numpy as np

    lines = sorted(tuple(np.round(np.column_stack([x, y]), 9).ravel().tolist())
                   for _, x, y in _series(ax))
    dots = sorted(tuple(np.round(np.asarray(c.get_offsets(), float), 9).ravel().tolist())
                  for c in ax.collections if len(c.get_offsets()))
    return tuple(lines) + tuple(dots)


def assert_clean(figures) -> None:
    assert figures, "no figure was saved"
    problems = [f"figure {i}: {d}" for i, found in enumerate(figures) for d in found]
    assert not problems, "\n".join(problems)


# --- every command that draws, on small specs ---------------------------------------------------

def spec(name: str) -> str:
    return str(ROOT / "specs" / name)


PICTURES = {"drf": "drf/classic.json", "emrf": "emrf/example1-knob0.5.json",
            "etf": "etf/resnet-mobilenet.json", "accelos": "accelos/figure3.json",
            "token": "token/kmeans-pagerank.json", "hetero": "hetero/gavel-mix.json",
            "moldable": "moldable/case-study.json"}


def test_every_kind_has_a_picture_of_its_allocation():
    assert {name for name, kind in KINDS.items() if kind.plot is not None} >= set(PICTURES)


@pytest.mark.parametrize("kind", slow_cases(sorted(PICTURES), ["token"]))
def test_solve_plot_draws_every_kind_cleanly(tmp_path, capsys, figures, kind):
    code, _, err = cli(capsys, "solve", spec(PICTURES[kind]), "--no-validate", "--plot",
                       str(tmp_path / "result.png"))
    assert code == 0, err
    assert_clean(figures)


def test_the_gantt_chart_shows_idle_processors(tmp_path, capsys):
    """The case study has 28 processors; gpusched2's schedule uses P0-P15 only."""
    gantt = tmp_path / "gantt.svg"
    assert cli(capsys, "solve", spec("moldable/case-study.json"), "--method", "gpusched2",
               "--no-validate", "--plot", str(gantt))[0] == 0
    lanes = [t for t in svg_texts(gantt) if re.fullmatch(r"P\d+", t)]
    assert lanes == [f"P{q}" for q in range(28)]


SWEEPS = {      # a sweep, and the notes its figure must hold for the panels it leaves out
    "emrf (README)": ["emrf/example1-knob0.5.json", "knob=0:1:0.1", "lp,wfq,drf", []],
    "drf": ["drf/weighted-cluster.json", "users[0].weight=1:4:1", "progressive-filling,lp",
            ["trade-off of utilization.cpu, utilization.mem, utilization.gpu, utilization.net "
             "against min_weighted_dominant_share not drawn: min_weighted_dominant_share does "
             "not move over the sweep",
             "progressive-filling's objective equals lp's at every value (its markers hollow and "
             "bigger)"]],
    "etf": ["etf/resnet-mobilenet.json", "phi=0:1:0.25", "waterfill,leximin", []],
    "hetero": ["hetero/gavel-mix.json", "jobs[5].weight=1:4:1",
               "max-min,leximin,agnostic-max-min",
               ["max-min's objective equals leximin's at every value (its markers hollow and "
                "bigger)"]],
    "token": ["token/five-spark-types.json", "boosts=10:30:10", "mean-field",
              ["boosts_per_round equals boosts at every value (not drawn)"]],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_sweep_plots_are_clean(tmp_path, capsys, figures, name):
    path, values, methods, notes = SWEEPS[name]
    figure = tmp_path / "s.svg"
    code, _, err = cli(capsys, "sweep", spec(path), "--set", values, "--methods", methods,
                       "--workers", "1", "--plot", str(figure))
    assert code == 0, err
    assert_clean(figures)
    texts = svg_texts(figure)
    for note in notes:                      # what is left out or hidden is said
        assert f"note: {note}" in texts, texts


@pytest.mark.slow
def test_a_numerically_zero_metric_is_left_out_with_a_note(tmp_path, capsys):
    """The token game's fixed-point residual is about 1e-16 at every value: no panel."""
    figure = tmp_path / "s.svg"
    assert cli(capsys, "sweep", spec("token/five-spark-types.json"), "--set", "boosts=10,20",
               "--workers", "1", "--plot", str(figure))[0] == 0
    texts = svg_texts(figure)
    assert any(re.fullmatch(r"note: residual is (0|numerically zero) at every value.*", t)
               for t in texts), texts
    assert "fixed-point residual (utility)" not in texts


def three_gpu_types(tmp_path) -> str:
    """Gavel's mix cut to two jobs on its three GPU types: every hetero method, three
    utilisations (the report that had a 21-entry legend and 42 rows of checks)."""
    data = json.loads((ROOT / "specs" / "hetero" / "gavel-mix.json").read_text())
    data["jobs"] = data["jobs"][:2]
    path = tmp_path / "three-types.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("path", ["drf/weighted-cluster.json", "accelos/figure3.json",
                                  "hetero"])
def test_report_figures_are_clean(tmp_path, capsys, figures, path):
    path = three_gpu_types(tmp_path) if path == "hetero" else spec(path)
    code, _, err = cli(capsys, "report", path, "-o", str(tmp_path / "r.html"), "-q")
    assert code == 0, err
    assert_clean(figures)


def test_the_accelos_report_has_figures(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert cli(capsys, "report", spec("accelos/figure3.json"), "-o", str(out), "-q")[0] == 0
    assert '<figure id="figure-result">' in out.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("argv", [
    ["accelos", "--kernels", "4", "--mixes", "10", "--seed", "1"],
    ["moldable", "--jobs", "6", "--processors", "3", "--instances", "6"],
])
def test_experiment_plots_are_clean(tmp_path, capsys, figures, argv):
    code, _, err = cli(capsys, "experiment", *argv, "--workers", "1", "--plot",
                       str(tmp_path / "e.png"), "-q")
    assert code == 0, err
    assert_clean(figures)


@pytest.mark.slow
def test_a_study_summary_draws_each_value_once(tmp_path, capsys, figures):
    study = tmp_path / "study.json"
    study.write_text(json.dumps({
        "study": "figures", "kind": "moldable", "seed": 3, "methods": ["gpusched2", "gpusched1"],
        "grid": {"jobs": [4, 6]}, "instances": {"generate": {"processors": 2}, "count": 3}}))
    store = tmp_path / "s.duckdb"
    assert cli(capsys, "study", "run", str(study), "--store", str(store), "--workers", "1",
               "-q")[0] == 0
    code, _, err = cli(capsys, "study", "summary", str(store), "--values", "ratio,time_s",
                       "--plot", str(tmp_path / "summary.png"))
    assert code == 0, err
    assert_clean(figures)


@pytest.mark.slow
def test_token_simulation_plot_is_clean(tmp_path, capsys, figures):
    code, _, err = cli(capsys, "simulate", spec("token/five-spark-types.json"), "--rounds",
                       "200", "--plot", str(tmp_path / "sim.png"), "-q")
    assert code == 0, err
    assert_clean(figures)

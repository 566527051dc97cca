"""Commands that may take long: the checks they run are the caller's to choose (compare, sweep,
report), the report's trade-off sweep is the caller's to choose or skip and does not probe every
point, progress reaches the caller through ``on_step``, and -q keeps a study's summary on
standard output."""

from __future__ import annotations

import argparse
import json

import pytest
from clitools import ROOT, cli

from fairalloc import api, checks, engine, report
from fairalloc import cli as cli_module
from fairalloc.cli import completion, studies
from fairalloc.engine import SolverSettings
from fairalloc.errors import ArgumentError
from fairalloc.solvers import highs

SPECS = ROOT / "specs"
ETF = str(SPECS / "etf" / "example.json")
EMRF = str(SPECS / "emrf" / "example1-knob0.5.json")


def headings(doc) -> list[str]:
    return [b.text for b in doc.blocks if type(b).__name__ == "Heading"]


def figures(doc) -> list:
    return [b for b in doc.blocks if type(b).__name__ == "Figure"]


def test_compare_runs_the_checks_asked_for():
    assert all(not r.validation for _, r in api.compare(ETF, ["waterfill", "greedy"],
                                                        validate=False))
    only = api.compare(ETF, ["waterfill"], checks=["feasibility", "max_min"])
    assert [f.check for f in only[0][1].validation] == ["feasibility", "max_min"]
    with pytest.raises(ArgumentError, match="no check 'nope' in etf"):
        api.compare(ETF, checks=["nope"])


def test_compare_reports_each_method_as_it_starts():
    seen = []
    api.compare(ETF, ["waterfill", "greedy"], validate=False,
                on_step=lambda *step: seen.append(step))
    assert seen == [("waterfill", 0, 2), ("greedy", 1, 2), ("done", 2, 2)]


def test_sweep_runs_the_checks_asked_for():
    swept = api.sweep(EMRF, "knob", [0, 1], workers=1, checks=["pareto_efficiency"])
    assert [c for c in swept.rows if c.startswith("check.")] == ["check.pareto_efficiency"]
    bare = api.sweep(EMRF, "knob", [0, 1], workers=1, validate=False)
    assert not [c for c in bare.rows if c.startswith("check.")]


def counting_reruns(monkeypatch) -> list:
    """Every re-run a strategy-proofness probe makes, counted."""
    made = []
    rerun = checks.rerun

    def counted(mechanism, problem):
        made.append(problem)
        return rerun(mechanism, problem)

    monkeypatch.setattr(checks, "rerun", counted)
    return made


@pytest.mark.slow
def test_the_reports_trade_off_sweep_does_not_probe_each_point(monkeypatch):
    made = counting_reruns(monkeypatch)
    doc = api.report(ETF, methods=["waterfill"])
    # the probe of the spec itself only (at most PROBE_RUNS), not one at each of 11 points
    assert 0 < len(made) <= checks.PROBE_RUNS
    assert "not checked at each point: strategy_proofness" in figures(doc)[-1].caption
    made.clear()
    doc = api.report(ETF, methods=["waterfill"], checks=["strategy_proofness"],
                     sweep=("phi", [0, 1]))
    assert len(made) > checks.PROBE_RUNS     # asked for: the spec and each point probed
    assert "strategy_proofness" not in figures(doc)[-1].caption


def test_the_reports_sweep_is_chosen_or_skipped():
    chosen = api.report(ETF, methods=["waterfill"], validate=False, sweep=("phi", [0, 0.5]))
    assert figures(chosen)[-1].name == "sweep-phi" and "Verdicts" not in headings(chosen)
    skipped = api.report(ETF, methods=["waterfill"], sweep=False)
    assert not any(f.name.startswith("sweep") for f in figures(skipped))
    with pytest.raises(ArgumentError, match=r"sweep: bogus=1: bogus: unknown key"):
        api.report(ETF, sweep=("bogus", [1]))


def test_a_report_shows_its_steps_to_the_end():
    seen = []
    api.report(ETF, methods=["waterfill", "greedy"], validate=False, sweep=("phi", [0, 1]),
               on_step=lambda *step: seen.append(step))
    # two methods, two methods at two points, the figures, then done
    assert [s[0] for s in seen[:2]] == ["waterfill", "greedy"]
    assert seen[-2][0] == "figures" and seen[-1] == ("done", 7, 7)
    assert [s[1] for s in seen] == sorted(s[1] for s in seen)
    assert {s[2] for s in seen} == {7}


def test_check_and_sweep_flags(tmp_path, capsys):
    code, out, _ = cli(capsys, "compare", ETF, "--methods", "waterfill", "--no-validate",
                       "--format", "json")
    assert code == 0 and json.loads(out)[0]["validation"] == []
    code, out, _ = cli(capsys, "sweep", EMRF, "--set", "knob=0,1", "--checks", "feasibility",
                       "--workers", "1", "--format", "csv")
    assert code == 0 and out.splitlines()[0].endswith("delta_bound,feasible")
    report = str(tmp_path / "r.md")
    code, _, err = cli(capsys, "report", ETF, "-o", report, "--methods", "waterfill",
                       "--no-sweep", "--checks", "feasibility")
    assert code == 0 and err.startswith(f"report written to {report}")   # its figures beside
    assert "sweep-phi" not in (tmp_path / "r.md").read_text()
    code, _, err = cli(capsys, "report", ETF, "-o", report, "--sweep", "phi=0:1:0.5",
                       "--methods", "waterfill", "-q")
    assert code == 0 and err == "" and "sweep-phi.svg" in (tmp_path / "r.md").read_text()


@pytest.mark.parametrize("argv, message", [
    (["compare", ETF, "--checks", "nope"], "--checks: no check 'nope' in etf"),
    (["compare", ETF, "--checks", "max_min", "--no-validate"], "--checks: give --checks or"),
    (["report", ETF, "-o", "x.html", "--sweep", "phi=0:1:0.5", "--no-sweep"],
     "--sweep: give --sweep or --no-sweep"),
    (["report", ETF, "-o", "x.html", "--sweep", "phi"], "--sweep: 'phi': expected KEY="),
    (["report", ETF, "-o", "x.html", "--sweep", "bogus=1,2"], "--sweep: bogus=1: bogus"),
])
def test_bad_check_and_sweep_flags_exit_2(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, *argv)
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "x.html").exists()


def test_study_run_quiet_keeps_the_summary_on_stdout(tmp_path, capsys):
    study = {"study": "quiet", "kind": "drf", "seed": 1, "methods": ["lp"],
             "instances": {"generate": {"users": 3}, "count": 2}}
    (tmp_path / "quiet.json").write_text(json.dumps(study))
    code, out, err = cli(capsys, "study", "run", str(tmp_path / "quiet.json"), "--store",
                         str(tmp_path / "quiet.duckdb"), "--workers", "1", "-q")
    assert code == 0 and "quiet" in out and "lp" in out and err == ""


def parsers() -> dict:
    """Every command's parser (``study run`` and each kind's ``experiment KIND`` too)."""
    found, todo = {}, [("fairalloc", cli_module.parser())]
    while todo:
        name, p = todo.pop()
        found[name] = p
        todo += [(f"{name} {sub}", sp) for sub, sp in completion._subcommands(p).items()]
    for kind in api.kinds_with("experiment"):
        found[f"experiment {kind}"] = studies._experiment_parser(kind,
                                                                    api.experiment_of(kind))
    return found


def test_help_shows_every_default():
    for name, p in parsers().items():
        text = " ".join(p.format_help().split())
        for action in p._actions:
            if action.option_strings and action.default not in (None, False, [],
                                                                 argparse.SUPPRESS):
                shown = f"(default: {action.default})"
                assert shown in text or f"default: {action.default}" in text, \
                    (name, action.option_strings)
    assert "(default: 25)" in " ".join(parsers()["fairalloc solve"].format_help().split())


def test_the_checks_re_run_on_one_thread_unless_threads_were_asked_for():
    def threads(settings: SolverSettings) -> int | None:
        with settings.checking() as chosen:
            return chosen.threads

    assert threads(SolverSettings()) == engine.CHECK_THREADS == 1
    assert threads(SolverSettings(threads=2)) == 2
    with highs.settings(threads=2):          # api.report's block around the compare
        assert threads(SolverSettings()) == 2
    assert highs.asked_threads() is None


def test_a_reports_methods_get_a_time_limit(monkeypatch):
    given = []
    compare = engine.compare

    def recorded(spec, methods, settings, *args, **kwargs):
        given.append(settings.time_limit)
        return compare(spec, methods, settings, *args, **kwargs)

    monkeypatch.setattr(engine, "compare", recorded)
    api.report(ETF, methods=["waterfill"], sweep=False)
    api.report(ETF, methods=["waterfill"], sweep=False, time_limit=3)
    spec = api.load_spec(ETF)
    spec.raw["options"] = {"time_limit": 7}
    api.report(dict(spec.raw), methods=["waterfill"], sweep=False)
    assert given == [report.REPORT_TIME_LIMIT, 3, 7]

"""``fairalloc report REPLAY.json``: the replay is run (progress on stderr) and its measures,
the checks' verdicts over the run, its figure and its document are written as HTML or
Markdown; a spec report's flags are refused."""

from __future__ import annotations

import pytest
from clitools import ROOT, cli

from fairalloc import api
from fairalloc.errors import ArgumentError

QUICK = str(ROOT / "specs" / "replay" / "quick.json")


@pytest.mark.slow
def test_a_replay_s_report_runs_it_and_shows_its_measures_checks_and_figure(tmp_path, capsys):
    html = tmp_path / "r.html"
    code, out, err = cli(capsys, "report", QUICK, "-o", str(html))
    assert (code, out) == (0, "") and err == f"report written to {html}\n"
    text = html.read_text()
    assert "one replay of hetero: max-min (rounds)" in text
    for shown in ("jobs finished", "average JCT", "worst rho", "check feasibility",
                  "sharing incentive over time", "The replay document", "<svg",
                  "the checks on the allocations judged", "&quot;round_s&quot;: 360"):
        assert shown in text, shown


def test_a_replay_s_markdown_report_has_its_figure_beside_it(tmp_path, capsys):
    md = tmp_path / "r.md"
    assert cli(capsys, "report", QUICK, "-o", str(md))[0] == 0
    text = md.read_text()
    assert text.startswith("# quick\n") and "| check sharing_incentive | ✓ " in text
    assert (tmp_path / "r_files" / "replay.svg").read_text().count("<svg") == 1


def test_the_api_reports_a_replay_with_its_progress():
    seen = []
    doc = api.report(QUICK, on_step=lambda what, done, total: seen.append((what, done, total)))
    assert [b.text for b in doc.blocks if type(b).__name__ == "Heading"][:3] == [
        "Summary", "Figures", "The replay document"]
    assert seen and seen[-1][1:] == (16, 16) and seen[-1][0].endswith(" h simulated")


@pytest.mark.parametrize("flags, said", [
    (["--methods", "lp"], "--methods: a replay's report shows its run; solver and method flags"),
    (["--time-limit", "5"], "--methods: a replay's report shows its run; solver"),
    (["--no-validate"], "--checks: a replay's report shows its run; checks and the trade-off"),
    (["--no-sweep"], "--sweep: a replay's report shows its run; checks and the trade-off"),
    (["--study", "x"], "--study: names a study in a store, not in a spec or a replay document"),
])
def test_a_spec_report_s_flags_are_refused_for_a_replay(tmp_path, capsys, flags, said):
    out = tmp_path / "r.html"
    code, _, err = cli(capsys, "report", QUICK, "-o", str(out), *flags)
    assert code == 2 and err.startswith(f"fairalloc report: error: {said}") and not out.exists()
    with pytest.raises(ArgumentError):
        api.report(QUICK, checks=["feasibility"])


def test_a_study_given_to_report_says_to_run_it(tmp_path, capsys):
    study = str(ROOT / "specs" / "studies" / "replay-quick.json")
    code, _, err = cli(capsys, "report", study, "-o", str(tmp_path / "r.html"))
    assert code == 2 and err == (f'fairalloc: {study}: a study (key "study"), not a spec or a '
                                 f'replay document: run "fairalloc study run {study}"\n')

"""The replay engine: hand-computed runs under each mechanism, invariants (work conservation,
determinism by seed, rho of a job alone), policy failures and bad documents."""

from __future__ import annotations

import json

import numpy as np
import pytest
from clitools import ROOT, cli, write

from fairalloc import api
from fairalloc.errors import SolverError, SpecError, Violations
from fairalloc.registry import KINDS
from fairalloc.replay import engine
from fairalloc.replay import hetero as replay
from fairalloc.replay.document import load

HETERO = KINDS["hetero"]


def doc(jobs, workers=None, policy="max-min", mechanism=None, **measure) -> dict:
    """A replay of listed jobs on one V100 (default), no finish-time fairness unless asked."""
    measure.setdefault("finish_time_fairness", False)
    return {"replay": "t", "kind": "hetero", "cluster": {"workers": workers or {"v100": 1}},
            "trace": {"jobs": jobs}, "policy": {"method": policy},
            "mechanism": mechanism or {"name": "ideal"}, "measure": measure}


def job(name, steps, arrival=0.0, v100=2.0, **more):
    return {"id": name, "arrival": arrival, "steps": steps,
            "throughput": {"v100": v100, **more}}


def test_ideal_two_jobs_by_hand():
    """One V100, two jobs at 2 steps/s: the max-min shares it half and half (1 step/s each);
    a (720 steps) ends at 720 s, then b has the V100 alone for its last 720 steps: 1080 s."""
    run = api.replay(doc([job("a", 720), job("b", 1440)]))
    assert run.status == "done"
    assert run.jobs["finish"] == pytest.approx([720.0, 1080.0], rel=1e-6)
    assert run.jobs["queueing"].tolist() == [0.0, 0.0]
    assert run.summary["utilization"]["v100"] == pytest.approx(1.0)


def test_rounds_two_jobs_by_hand():
    """Gavel's rounds on one V100, two jobs of 1440 steps at 2 steps/s (720 s alone), both
    allocated half: round 1 ties (priority 0.5 / 180 s each) and goes to a (earlier); round 2 to
    b (0.5/180 > 0.5/540); round 3 ties again (a); round 4 b. a ends with round 3 (1080 s), b
    with round 4 (1440 s)."""
    run = api.replay(doc([job("a", 1440), job("b", 1440)],
                         mechanism={"name": "rounds", "round_s": 360}))
    assert run.jobs["finish"].tolist() == pytest.approx([1080.0, 1440.0])
    assert run.jobs["start"].tolist() == [0.0, 360.0]
    assert run.jobs["queueing"].tolist() == [0.0, 360.0]


def test_rounds_arrival_waits_for_the_round_end():
    """A job arriving mid-round starts at the round's end (Gavel adds jobs between rounds)."""
    run = api.replay(doc([job("a", 7200), job("b", 100, arrival=100.0)],
                         workers={"v100": 2}, mechanism={"name": "rounds", "round_s": 360}))
    assert run.jobs["start"].tolist() == [0.0, 360.0]
    assert run.jobs["finish"][1] == pytest.approx(360.0 + 50.0)


def test_rounds_job_waiting_for_an_allocation_at_the_trace_end_is_not_stranded():
    """a (first at 10 s) is allocated at 10 s and done at 60 s; b arrives at 500 s, before
    the next reset may happen (10 + 1920 s): as in Gavel it is picked idle; no arrival is to
    come, so time moves to the reset at 1930 s, where b is allocated and runs."""
    run = api.replay(doc([job("a", 100, arrival=10.0), job("b", 100, arrival=500.0)],
                         mechanism={"name": "rounds", "round_s": 360, "reset_s": 1920}))
    assert run.status == "done"
    assert run.jobs["start"].tolist() == [10.0, 1930.0]
    assert run.jobs["finish"].tolist() == pytest.approx([60.0, 1980.0])


def test_work_conservation_on_one_type():
    """Six equal jobs on two GPUs of one type: every GPU-second of the run is a job's second
    (the busy integral equals the work over the throughput) and no GPU idles while a job
    waits: the makespan is the work over the two GPUs."""
    jobs = [job(f"j{i}", 1440) for i in range(6)]            # 720 s alone each
    for mechanism in ({"name": "ideal"}, {"name": "rounds", "round_s": 360}):
        run = api.replay(doc(jobs, workers={"v100": 2}, mechanism=mechanism))
        busy = run.summary["utilization"]["v100"] * run.summary["makespan_s"] * 2
        assert busy == pytest.approx(6 * 720.0)
        assert run.summary["makespan_s"] == pytest.approx(6 * 720.0 / 2)


def gavel_doc(seed: int, mechanism: str = "rounds") -> dict:
    return {"replay": "g", "kind": "hetero",
            "cluster": {"workers": {"v100": 4, "p100": 4, "k80": 4}},
            "trace": {"generator": "gavel", "seed": seed, "jobs": 40, "rate": 3.0},
            "policy": {"method": "agnostic-max-min"},
            "mechanism": {"name": mechanism, "seed": seed} if mechanism == "rounds"
            else {"name": mechanism},
            "measure": {"finish_time_fairness": True}}


@pytest.mark.slow
def test_same_seed_same_rows():
    first, again = api.replay(gavel_doc(3)), api.replay(gavel_doc(3))
    for column in first.jobs:
        np.testing.assert_array_equal(first.jobs[column], again.jobs[column])
    other = api.replay(gavel_doc(4))
    assert not np.array_equal(first.jobs["finish"], other.jobs["finish"])


def test_generator_is_gavels():
    """Gavel's distributions: 26 job types at scale factor 1, durations 60 * 10^U(1.5, 3) or
    60 * 10^U(3, 4) s (about 20% long), steps = duration x V100 throughput, Poisson arrivals
    at the rate, Philly's scale factors, 20% of jobs at priority 5."""
    trace = replay.generate(7, 20_000, rate=2.0, multi_gpu=True, priorities=True)
    d = trace.columns["duration"]
    assert d.min() >= 60 * 10**1.5 and d.max() <= 60 * 10**4
    assert np.mean(d > 60 * 1000) == pytest.approx(0.2, abs=0.01)
    gaps = np.diff(trace.arrival)
    assert gaps.mean() == pytest.approx(1800.0, rel=0.03)
    scale = trace.columns["scale_factor"]
    for s, share in ((1, 0.7), (2, 0.1), (4, 0.15), (8, 0.05)):
        assert np.mean(scale == s) == pytest.approx(share, abs=0.015)
    assert np.mean(trace.columns["weight"] == 5.0) == pytest.approx(0.2, abs=0.015)
    single = replay.generate(7, 5000, rate=1.0)
    assert len(set(single.columns["model"])) == 26
    assert (single.columns["scale_factor"] == 1).all()
    static = replay.static(7, 10)
    assert (static.arrival == 0).all()


def test_rho_of_a_job_alone_is_one_under_ideal():
    """A job alone under a policy that gives it its isolated share (agnostic max-min,
    proportional: all of its time, spread as the GPUs are) finishes as under the isolated
    policy: rho = 1."""
    one = [job("a", 1000, v100=4.0, p100=2.0, k80=1.0)]
    for policy in ("agnostic-max-min", "proportional"):
        run = api.replay(doc(one, workers={"v100": 1, "p100": 1, "k80": 1}, policy=policy,
                             finish_time_fairness=True))
        assert run.jobs["rho"].tolist() == pytest.approx([1.0])
        assert run.summary["sharing_incentive"]["verdict"] == "holds"


def test_sharing_incentive_over_time_names_the_worst_job():
    """FIFO makes the short job b wait for the long job a: b ends at 1440 + 360 s, where
    half the V100 (the isolated policy) ends it at 720 s: rho 2.5, the witness."""
    run = api.replay(doc([job("a", 2880), job("b", 720)], policy="fifo-aware",
                         finish_time_fairness=True))
    verdict = run.summary["sharing_incentive"]
    assert verdict["verdict"] == "fails"
    assert verdict["witness"]["job"] == "b"
    assert run.summary["worst_rho"] == pytest.approx(1800 / 720)
    assert run.jobs["rho"][0] == pytest.approx(1440 / 1800)


def test_checks_over_time_are_counted():
    run = api.replay(doc([job("a", 720), job("b", 1440, arrival=10.0)],
                         checks={"every": 1, "names": ["feasibility", "sharing_incentive"]}))
    assert run.verdicts["feasibility"]["holds"] == run.summary["allocations"]
    assert run.verdicts["feasibility"]["passed"] is True


def test_policy_failing_mid_run_is_an_error_with_the_time():
    found = Violations()
    c = replay.cluster({"workers": {"v100": 1}}, found)
    trace = load(doc([job("a", 720), job("b", 720, arrival=100.0)])).trace
    jobs = replay.jobs(c, trace, found)
    calls = []

    def flaky(p):
        calls.append(p.n)
        if len(calls) > 1:
            raise SolverError("HiGHS says numerical trouble")
        return HETERO.methods["max-min"](p)

    policy = engine.Policy(HETERO, c, jobs, "flaky", flaky, {}, engine.Checking())
    timeline = engine.run(trace, replay.work(jobs), engine.Ideal(HETERO.replay, policy),
                          policy, 1)
    assert timeline.status == "error"
    assert timeline.error.startswith("at 100.0 s: flaky: SolverError: HiGHS says")
    assert timeline.finish[0] != timeline.finish[0]      # NaN: a was not done at 100 s


BAD = [
    ({"kind": "etf"}, "kind: no kind 'etf' with a replay"),
    ({"trace": {"generator": "poisson", "jobs": 3}}, "trace.generator: unknown generator"),
    ({"trace": {"generator": "gavel", "jobs": 3}}, "trace.rate: gavel needs 'rate'"),
    ({"trace": {"generator": "gavel", "jobs": 3, "rate": 1, "burst": 2}},
     "trace.burst: gavel takes no parameter"),
    ({"policy": {"method": "max-min", "gamma": 1}}, "policy.gamma: max-min takes no option"),
    ({"policy": {"method": "lottery"}}, "policy.method: unknown policy 'lottery'"),
    ({"mechanism": {"name": "slots"}}, "mechanism.name: unknown mechanism 'slots'"),
    ({"cluster": {"workers": {"v100": -1}}}, "cluster.workers.v100"),
    ({"trace": {"jobs": [{"id": "x", "steps": 5, "throughput": {"v100": 0}}]}},
     "job x can run nowhere"),
    ({"measure": {"checks": {"names": ["envy"]}}}, "measure.checks.names[0]: no check 'envy'"),
    ({"extra": 1}, "extra"),
]


@pytest.mark.parametrize(("edit", "line"), BAD, ids=[line.split(":")[0] for _, line in BAD])
def test_bad_documents_exit_2_naming_the_path(tmp_path, capsys, edit, line):
    data = {**doc([job("a", 720)]), **edit}
    with pytest.raises(SpecError):
        load(data)
    code, out, err = cli(capsys, "replay", write(tmp_path, data))
    assert code == 2, err
    assert line in err and "Traceback" not in err


def test_cli_formats(tmp_path, capsys):
    path = write(tmp_path, doc([job("a", 720), job("b", 1440)], finish_time_fairness=True))
    code, out, err = cli(capsys, "replay", path, "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["summary"]["status"] == "done" and len(data["jobs"]) == 2
    code, out, _ = cli(capsys, "replay", path, "--format", "csv")
    assert out.splitlines()[0] == "id,arrival,start,finish,jct,queueing,isolated_jct,rho"
    code, out, _ = cli(capsys, "replay", path)
    assert code == 0 and "average JCT" in out


@pytest.mark.slow
def test_template_runs(tmp_path, capsys):
    target = tmp_path / "r.jsonc"
    assert cli(capsys, "new", "replay", "-o", str(target))[0] == 0
    run = api.replay(str(target))
    assert run.status == "done"
    jobs, summary, utilization = run.to_pandas()
    assert len(jobs) == 600 and summary["status"][0] == "done"
    assert not run.summary["arrivals_ended_first"]


@pytest.mark.parametrize("policy", [*HETERO.methods, *HETERO.replay.policies])
@pytest.mark.parametrize("mechanism", ["ideal", "rounds"])
def test_every_policy_replays(policy, mechanism):
    """Every hetero method and replay policy finishes a small trace of Gavel's jobs, with the
    feasibility check holding on every allocation."""
    data = {"replay": "p", "kind": "hetero",
            "cluster": {"workers": {"v100": 2, "p100": 2, "k80": 2}},
            "trace": {"generator": "gavel", "seed": 1, "jobs": 12, "rate": 4.0},
            "policy": {"method": policy}, "mechanism": {"name": mechanism},
            "measure": {"finish_time_fairness": False,
                        "checks": {"every": 1, "names": ["feasibility"]}}}
    run = api.replay(data)
    assert run.status == "done", run.summary["error"]
    assert run.summary["finished"] == 12
    assert run.verdicts["feasibility"]["passed"] is True


@pytest.mark.slow
def test_ctrl_c_in_a_replay_exits_130_without_a_traceback(tmp_path):
    """SIGINT while a long replay runs: one line and exit 130, as a study's Ctrl-C."""
    import signal
    import subprocess
    import sys
    import time

    path = str(ROOT / "specs" / "replay" / "fig8-base.json")
    proc = subprocess.Popen([sys.executable, "-m", "fairalloc.cli", "replay", path, "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)           # in the event loop by then (the document loads in under a second)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err


@pytest.mark.parametrize("fast, slow", [("v100", "p100"), ("fast", "slow")])
def test_an_aware_policy_in_rounds_visits_the_fastest_type_first(fast, slow):
    """Each job alone in the cluster runs on the type visited first. Most jobs here run
    faster on ``fast`` (on average 97% of their best speed there, 95% on ``slow``), yet the
    median steps per second is higher on ``slow`` (11 against 10: a's steps are not c's);
    Gavel's order (v100 first) and the average relative speed both say ``fast``."""
    speeds = [(10.0, 11.0), (1.0, 0.9), (12.0, 11.5)]     # (fast, slow) steps/s
    jobs = [{"id": name, "arrival": 10_000.0 * i, "steps": 100.0,
             "throughput": {fast: f, slow: s}}
            for i, (name, (f, s)) in enumerate(zip("abc", speeds))]
    run = api.replay(doc(jobs, {fast: 1, slow: 1}, mechanism={"name": "rounds"}))
    assert run.status == "done"
    assert run.summary["utilization"][fast] > 0 and run.summary["utilization"][slow] == 0
    assert run.jobs["jct"].tolist() == pytest.approx([100 / f for f, _ in speeds])

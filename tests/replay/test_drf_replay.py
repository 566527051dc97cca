"""DRF online (fairalloc/replay/drf.py): hand-computed replays under each policy, work
conservation, determinism, the generator's distributions and bad documents."""

from __future__ import annotations

import numpy as np
import pytest
from clitools import cli, write

from fairalloc import api
from fairalloc.errors import SpecError
from fairalloc.replay import drf as replay
from fairalloc.replay.document import load

GHODSI = {"cpu": 9, "mem": 18}        # Ghodsi et al.'s example: A <1 CPU, 4 GB>, B <3 CPU, 1 GB>


def job(name, cpu, mem, tasks, duration=600.0, arrival=0.0, **more):
    return {"id": name, "arrival": arrival, "demand": {"cpu": cpu, "mem": mem},
            "max_tasks": tasks, "duration": duration, **more}


def doc(jobs, policy="progressive-filling", capacity=None, divisible=True, **measure) -> dict:
    measure.setdefault("finish_time_fairness", False)
    return {"replay": "t", "kind": "drf",
            "cluster": {"capacity": dict(capacity or GHODSI), "divisible": divisible},
            "trace": {"jobs": jobs}, "policy": {"method": policy},
            "mechanism": {"name": "ideal"}, "measure": measure}


AB = [job("A", 1, 4, 6), job("B", 3, 1, 2)]


@pytest.mark.parametrize("method", ["progressive-filling", "lp"])
def test_ghodsi_jobs_by_hand(method):
    """DRF gives A 3 tasks and B 2 (dominant shares 2/3 each; B at its max_tasks, CPU full):
    B runs at 2/2 and ends at 600 s; A at 3/6 has done 300 s of its 600. Alone, A gets
    min(9/1, 18/4) = 4.5 tasks: rate 0.75, the last 300 s take 400 s: A ends at 1000 s."""
    run = api.replay(doc(AB, method))
    assert run.status == "done"
    assert run.jobs["finish"].tolist() == pytest.approx([1000.0, 600.0])


def test_whole_tasks_by_hand():
    """Whole tasks: alone, A gets 4 tasks (18 GB / 4), rate 2/3: its last 300 s take 450 s."""
    run = api.replay(doc(AB, divisible=False))
    assert run.jobs["finish"].tolist() == pytest.approx([1050.0, 600.0])


def test_fifo_by_hand():
    """FIFO: A (first) takes min(6, 9/1, 18/4) = 4 whole tasks, its 5th does not fit, so B
    waits: A ends at 600 * 6/4 = 900 s, then B runs 2 tasks for 600 s."""
    run = api.replay(doc(AB, "fifo"))
    assert run.jobs["start"].tolist() == [0.0, 900.0]
    assert run.jobs["finish"].tolist() == pytest.approx([900.0, 1500.0])
    assert run.jobs["queueing"].tolist() == [0.0, 900.0]


def test_rho_against_the_isolated_share_by_hand():
    """Isolated: half of each resource, A min(4.5/1, 9/4) = 2.25 tasks (rate 0.375), B
    min(4.5/3, 9/1) = 1.5 (rate 0.75): B ends at 800 s, A has 300 s left, alone at 0.75: 1200 s.
    rho = JCT under DRF / JCT isolated: A 1000/1200, B 600/800."""
    run = api.replay(doc(AB, finish_time_fairness=True))
    assert run.jobs["rho"].tolist() == pytest.approx([1000 / 1200, 600 / 800])
    assert run.summary["sharing_incentive"]["verdict"] == "holds"


def test_a_job_alone_has_rho_1():
    run = api.replay(doc([job("A", 1, 4, 6)], finish_time_fairness=True))
    assert run.jobs["rho"].tolist() == pytest.approx([1.0])


@pytest.mark.parametrize("divisible", [True, False])
@pytest.mark.parametrize("policy", ["progressive-filling", "fifo", "fair-share"])
def test_work_conservation(policy, divisible):
    """Every job finishes and the resource-seconds used are exactly the work: per resource,
    sum_j duration_j x max_tasks_j x demand_jr / capacity_r (a job holding x tasks runs at
    x / max_tasks for duration / rate seconds)."""
    d = {"replay": "w", "kind": "drf",
         "cluster": {"capacity": {"cpu": 64, "mem": 512, "gpu": 8}, "divisible": divisible},
         "trace": {"generator": "poisson", "seed": 3, "jobs": 30, "rate": 30.0},
         "policy": {"method": policy}, "measure": {"finish_time_fairness": False}}
    run = api.replay(d)
    assert run.summary["finished"] == 30
    document = load(d)
    j = document.jobs
    work = (j.duration * j.tasks) @ j.demand / document.cluster.capacity
    span = run.utilization["to"][-1] - run.utilization["from"][0]
    used = np.array([run.summary["utilization"][r] for r in ("cpu", "mem", "gpu")]) * span
    assert used == pytest.approx(work, rel=1e-9)


def test_lp_and_progressive_filling_agree_on_a_trace():
    runs = [api.replay({"replay": "a", "kind": "drf",
                        "cluster": {"capacity": {"cpu": 64, "mem": 512, "gpu": 8}},
                        "trace": {"generator": "poisson", "seed": 1, "jobs": 25, "rate": 20.0},
                        "policy": {"method": m}, "measure": {"finish_time_fairness": False}})
            for m in ("progressive-filling", "lp")]
    assert runs[0].jobs["finish"] == pytest.approx(runs[1].jobs["finish"], rel=1e-7)


def test_the_same_seed_gives_the_same_rows():
    d = {"replay": "s", "kind": "drf", "cluster": {"capacity": {"cpu": 32, "mem": 256, "gpu": 4}},
         "trace": {"generator": "poisson", "seed": 7, "jobs": 20, "rate": 10.0}}
    first, again = api.replay(d), api.replay(d)
    for column in ("finish", "rho"):
        np.testing.assert_array_equal(first.jobs[column], again.jobs[column])
    d["trace"]["seed"] = 8
    assert not np.array_equal(api.replay(d).jobs["finish"], first.jobs["finish"])


def test_the_generator_draws_what_its_docstring_says():
    t = replay.poisson(0, 2000, rate=60.0, tenants=3)
    c = t.columns
    assert set(np.unique(c["demand.cpu"])) == {1, 2, 4, 8}
    per_core = c["demand.mem"] / c["demand.cpu"]
    assert per_core.min() >= 1 and per_core.max() <= 8
    assert set(np.unique(c["demand.gpu"])) == {0, 1}
    assert 0.45 < c["demand.gpu"].mean() < 0.55
    assert set(np.unique(c["max_tasks"])) == {1, 2, 4, 8, 16}
    assert c["duration"].min() >= 100 and c["duration"].max() <= 10_000
    assert set(c["tenant"]) == {"t0", "t1", "t2"}
    gaps = np.diff(t.arrival)
    assert t.arrival[0] == 0 and gaps.mean() == pytest.approx(60.0, rel=0.1)
    assert (replay.static(0, 5).arrival == 0).all()


@pytest.mark.parametrize("change, path", [
    (lambda d: d["trace"]["jobs"][0]["demand"].update(cpu=10), "trace.jobs.A.demand"),
    (lambda d: [j["demand"].update(gpu=g) for j, g in zip(d["trace"]["jobs"], (0, 1))],
     "trace.jobs.B.demand.gpu"),
    (lambda d: d["trace"]["jobs"][0].update(max_tasks=0), "trace.jobs[0].max_tasks"),
    (lambda d: d["trace"]["jobs"][0].update(duration=-1), "trace.jobs.A.duration"),
    (lambda d: d["cluster"]["capacity"].update(cpu=0), "cluster.capacity.cpu"),
    (lambda d: d["cluster"].update(divisible="yes"), "cluster.divisible"),
    (lambda d: d["cluster"].update(workers={"v100": 1}), "cluster.workers"),
])
def test_bad_documents_name_the_path(change, path):
    d = doc([job("A", 1, 4, 6), job("B", 3, 1, 2)])
    change(d)
    with pytest.raises(SpecError) as caught:
        load(d)
    assert path in str(caught.value)


def test_a_fractional_task_count_needs_divisible_tasks():
    with pytest.raises(SpecError, match="trace.jobs.A.max_tasks"):
        load(doc([job("A", 1, 4, 2.5)], divisible=False))
    assert load(doc([job("A", 1, 4, 2.5)])).jobs.tasks.tolist() == [2.5]


def test_the_command_line_refuses_a_job_that_fits_nowhere(tmp_path, capsys):
    path = write(tmp_path, doc([job("A", 20, 4, 1)]), "replay.json")
    code, _, err = cli(capsys, "replay", path)
    assert code == 2
    assert "trace.jobs.A.demand" in err and "Traceback" not in err


@pytest.mark.parametrize("policy", [{"method": "lp"}, {"method": "fair-share", "base": "lp"}])
def test_lp_on_whole_tasks_is_a_bad_document(policy, tmp_path, capsys):
    """The drf spec's rule: lp needs divisible tasks; a replay says so when it is read, not
    as an error at 0 s."""
    d = doc(AB, divisible=False)
    d["policy"] = policy
    with pytest.raises(SpecError, match="policy.method: lp cannot serve this cluster: .*"
                                        "needs divisible: true"):
        load(d)
    code, _, err = cli(capsys, "replay", write(tmp_path, d, "replay.json"))
    assert code == 2 and "policy.method" in err

"""Decayed-usage fair share (fairalloc/replay/fairshare.py) for drf and hetero: hand-computed
ledgers and replays, half-life 0 is the plain policy, more usage gives a lower weight,
determinism; and policies with memory keep it apart from the checks' probes."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from clitools import cli, write

from fairalloc import api
from fairalloc.errors import SpecError
from fairalloc.registry import KINDS
from fairalloc.replay import fairshare
from fairalloc.replay.document import load

LN2 = math.log(2)


def test_decayed_usage_by_hand():
    assert fairshare.decayed(4.0, 1.0, 10.0, 0.0) == 0.0
    assert fairshare.decayed(4.0, 1.0, 10.0, math.inf) == 14.0
    # half of 4 kept, and the integral of 1 over 10 s decayed with h = 10 s: (10/ln 2)(1 - 1/2)
    assert fairshare.decayed(4.0, 1.0, 10.0, 10.0) == pytest.approx(2.0 + 5.0 / LN2)
    # over a time much shorter than h, nothing is forgotten yet
    assert fairshare.decayed(4.0, 1.0, 1e-3, 1e9) == pytest.approx(4.0 + 1e-3)


def test_two_tenant_ledger_by_hand():
    """x (code 0) holds the whole of one resource for 10 s (h = 10 s): D_x = 5/ln 2, D_y = 0,
    so U_x = 1 and, with two tenants (S = 1/2), F_x = 2^-2, F_y = 1. Then both hold half for
    10 s: D_x = (5/ln 2)/2 + 0.5 (10/ln 2)/2 = 5/ln 2, D_y = 2.5/ln 2: U = 2/3 and 1/3,
    F_x = 2^(-4/3), F_y = 2^(-2/3)."""
    both = np.array([0, 1])
    ledger = fairshare.Ledger()
    ledger.advance(0.0, 10.0)
    assert ledger.factors(both).tolist() == [1.0, 1.0]
    ledger.holding(both, np.array([[1.0], [0.0]]))
    ledger.advance(10.0, 10.0)
    assert ledger.usage.tolist() == pytest.approx([5.0 / LN2, 0.0])
    assert ledger.factors(both).tolist() == pytest.approx([0.25, 1.0])
    ledger.holding(both, np.array([[0.5], [0.5]]))
    ledger.advance(20.0, 10.0)
    assert ledger.usage.tolist() == pytest.approx([5.0 / LN2, 2.5 / LN2])
    # y has no job now but was seen: still one of T = 2
    assert ledger.factors(np.array([0])).tolist() == pytest.approx([2 ** (-4 / 3),
                                                                    2 ** (-2 / 3)])


def test_a_tenant_that_used_more_gets_a_lower_weight():
    rng = np.random.default_rng(0)
    tenants = np.arange(4)
    for _ in range(20):
        ledger = fairshare.Ledger()
        ledger.advance(0.0, 100.0)
        ledger.factors(tenants)
        for step in range(1, 4):
            ledger.holding(tenants, rng.random((4, 3)))
            ledger.advance(step * 30.0, 100.0)
        factor = ledger.factors(tenants)
        order = np.argsort(ledger.usage)
        assert (np.diff(factor[order]) <= 0).all()
        assert ((0 < factor) & (factor <= 1)).all()


def two_tenants(half_life_s: float, policy: str = "fair-share") -> dict:
    """One 2-CPU pool; a (tenant x) holds both CPUs from 0 s, b (tenant y) arrives at 50 s;
    each wants 2 one-CPU tasks for 100 s."""
    jobs = [{"id": "a", "tenant": "x", "demand": {"cpu": 1}, "max_tasks": 2, "duration": 100},
            {"id": "b", "tenant": "y", "arrival": 50, "demand": {"cpu": 1}, "max_tasks": 2,
             "duration": 100}]
    options = {"half_life_s": half_life_s} if policy == "fair-share" else {}
    return {"replay": "two", "kind": "drf", "cluster": {"capacity": {"cpu": 2}},
            "trace": {"jobs": jobs}, "policy": {"method": policy, **options},
            "measure": {"finish_time_fairness": False}}


def test_two_tenant_drf_replay_by_hand():
    """At 50 s only x has used anything: U_x = 1, S = 1/2, so a's weight is 2^-2 = 1/4 and
    DRF gives b 4 times a's tasks: a 0.4 (rate 0.2), b 1.6 (rate 0.8). b ends at
    50 + 100/0.8 = 175 s; a has 50 - 0.2 x 125 = 25 s left, alone at rate 1: 200 s. Plain DRF
    (half-life 0) shares 1 and 1: a ends at 150 s, b at 200 s."""
    fair = api.replay(two_tenants(3600.0))
    assert fair.jobs["finish"].tolist() == pytest.approx([200.0, 175.0])
    plain = api.replay(two_tenants(0.0))
    assert plain.jobs["finish"].tolist() == pytest.approx([150.0, 200.0])


def multi_tenant(kind: str, policy: str, **options) -> dict:
    if kind == "drf":
        cluster = {"capacity": {"cpu": 32, "mem": 256, "gpu": 4}}
        trace = {"generator": "poisson", "seed": 2, "jobs": 30, "rate": 20.0, "tenants": 3}
    else:
        cluster = {"workers": {"v100": 2, "p100": 2, "k80": 2}}
        trace = {"generator": "gavel", "seed": 2, "jobs": 20, "rate": 6.0}
    return {"replay": "m", "kind": kind, "cluster": cluster, "trace": trace,
            "policy": {"method": policy, **options}, "measure": {"finish_time_fairness": False}}


@pytest.mark.parametrize("kind, plain", [("drf", "progressive-filling"), ("hetero", "max-min")])
def test_half_life_0_is_the_plain_policy(kind, plain):
    base = api.replay(multi_tenant(kind, plain))
    now = api.replay(multi_tenant(kind, "fair-share", half_life_s=0))
    np.testing.assert_array_equal(now.jobs["finish"], base.jobs["finish"])
    week = api.replay(multi_tenant(kind, "fair-share", half_life_s=7 * 24 * 3600))
    assert not np.allclose(week.jobs["finish"], base.jobs["finish"])


def test_half_life_0_is_the_plain_policy_under_gavels_rounds():
    """The rounds place a wrapper's jobs as its base method's: max-min (aware of
    heterogeneity, fastest type first) here, agnostic-max-min (types in a seeded random
    order) as the base."""
    for plain in ("max-min", "agnostic-max-min"):
        rounds = {"name": "rounds", "round_s": 360}
        base = api.replay({**multi_tenant("hetero", plain), "mechanism": rounds})
        now = api.replay({**multi_tenant("hetero", "fair-share", half_life_s=0, base=plain),
                          "mechanism": rounds})
        np.testing.assert_array_equal(now.jobs["finish"], base.jobs["finish"])


@pytest.mark.parametrize("kind", ["drf", "hetero"])
def test_fair_share_is_deterministic(kind):
    d = multi_tenant(kind, "fair-share", half_life_s=3600)
    np.testing.assert_array_equal(api.replay(d).jobs["finish"], api.replay(d).jobs["finish"])


def test_base_picks_the_method():
    lp = api.replay(multi_tenant("drf", "fair-share", half_life_s=3600, base="lp"))
    pf = api.replay(multi_tenant("drf", "fair-share", half_life_s=3600))
    assert lp.jobs["finish"] == pytest.approx(pf.jobs["finish"], rel=1e-6)


@pytest.mark.parametrize("options, message", [
    ({"base": "nope"}, 'policy.base: one of progressive-filling, lp, not "nope"'),
    ({"half_life_s": -1}, "policy.half_life_s: a number of seconds from 0 to 1e+09 (a replay's "
                          "clock ends there), not -1"),
    ({"half_life_s": "week"}, 'policy.half_life_s: a number of seconds from 0 to 1e+09 (a '
                              'replay\'s clock ends there), not "week"'),
])
def test_bad_options_are_a_bad_document(tmp_path, capsys, options, message):
    d = multi_tenant("drf", "fair-share", **options)
    with pytest.raises(SpecError, match=re.escape(message)):
        load(d)
    code, _, err = cli(capsys, "replay", write(tmp_path, d, "replay.json"))
    assert code == 2 and message in err and "Traceback" not in err


def test_the_factor_shows_in_the_solution():
    """The wrapper called directly, as the engine calls it, on the two-tenant case at 50 s."""
    document = load(two_tenants(3600.0))
    drf = KINDS["drf"].replay
    run = drf.policies["fair-share"]
    memory = {"seed": 0, "tenants": document.trace.columns["tenant"]}
    first = drf.problem(document.cluster, document.jobs, np.array([0]), None, None)
    memory.update(now=0.0, active=np.array([0]))
    run(first, memory, half_life_s=3600.0)
    both = drf.problem(document.cluster, document.jobs, np.array([0, 1]), None, None)
    memory.update(now=50.0, active=np.array([0, 1]))
    solution = run(both, memory, half_life_s=3600.0)
    assert solution.solver["fair_share_factor"] == pytest.approx({"x": 0.25, "y": 1.0})
    assert solution.allocation.column("tasks").tolist() == pytest.approx([0.4, 1.6])


@pytest.mark.slow
def test_checks_do_not_change_a_policy_with_memory():
    """A check's probes re-run the policy on changed problems: on a copy of its memory, so a
    run with checks is the run without (the fair share's ledger would otherwise charge the
    tenants what a probe's allocation gives)."""
    for kind in ("drf", "hetero"):
        d = multi_tenant(kind, "fair-share", half_life_s=3600)
        quiet = api.replay(d)
        d["measure"]["checks"] = {"every": 1, "names": ["strategy_proofness"]}
        judged = api.replay(d)
        np.testing.assert_array_equal(judged.jobs["finish"], quiet.jobs["finish"])

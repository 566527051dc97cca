"""ETF asks "same energy?" (or "same time?") one way: the kind's ``models.etf.TIE``. A probe's
gain of one whole slice is a gain however many slices the app already has."""

from __future__ import annotations

import dataclasses

import numpy as np

import fairalloc
from fairalloc.checks.etf import strategy_proofness
from fairalloc.models.etf import TIE

SLICES = 2 * 10**9        # one slice more is a relative gain of 5e-10: above TIE, below 1e-9


def test_one_more_slice_at_two_billion_is_a_gain():
    apps = [{"id": i, "power": 2, "demand": 2 * SLICES} for i in "ab"]
    spec = fairalloc.load_spec({"problem": "etf", "quantum": 2 * SLICES, "phi": 0,
                                "apps": apps})
    truthful = fairalloc.solve(spec, "waterfill", validate=False)
    t = np.asarray(truthful.allocation.column("time"), dtype=float)
    assert t.tolist() == [SLICES, SLICES] and 1 / SLICES > TIE

    def mechanism(liar):
        """The liar loses a slice to the other app by a lie about its power, wins one by a lie
        about its demand."""
        true = spec.problem
        power_lie = np.flatnonzero(liar.power != true.power)
        i = int(power_lie[0]) if power_lie.size else int(np.flatnonzero(
            liar.demand != true.demand)[0])
        moved = np.full(2, -1 if power_lie.size else 1)
        moved[1 - i] *= -1
        shifted = liar.allocation(SLICES + moved)
        return dataclasses.replace(truthful, allocation=shifted)

    found = strategy_proofness(spec.problem, truthful.allocation, mechanism=mechanism)
    assert found.holds is False and found.witness["misreport"].startswith("demand")
    assert found.witness["time"] == [SLICES, SLICES + 1]

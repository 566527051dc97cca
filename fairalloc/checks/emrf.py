"""The check particular to EMRF allocations: delta-fairness (the others are the Leontief
axioms of ``checks/leontief.py``, shared with drf)."""

from __future__ import annotations

import numpy as np

from fairalloc.allocation import Allocation
from fairalloc.checks.leontief import exceeds
from fairalloc.models.emrf import delta_bound, share_ratio
from fairalloc.models.leontief import Leontief
from fairalloc.result import Finding


def delta_fairness(problem, allocation: Allocation, **_) -> Finding:
    """delta-fairness (eq. 9 of the EMRF paper): max_i F_i/S_i - min_j F_j/S_j is at most the
    guarantee: Theorem 1's bound at the spec's knob, or the spec's ``max_unfairness``."""
    m: Leontief = problem.market
    ratio = share_ratio(m, m.units(allocation))
    observed = float(ratio.max() - ratio.min())
    knob = problem.effective_knob()
    if knob <= 1:
        limit, source = delta_bound(m, knob), f"Theorem 1 bound at knob {knob:.6g}"
    else:
        limit, source = float(problem.max_unfairness), "max_unfairness (no knob reaches it)"
    hi, lo = int(np.argmax(ratio)), int(np.argmin(ratio))
    detail = f"observed {observed:.6g} vs {source} {limit:.6g}"
    if exceeds(np.array(observed), np.array(limit)):
        return Finding("delta_fairness", False, detail,
                       {"most": m.ids[hi], "most_ratio": ratio[hi], "least": m.ids[lo],
                        "least_ratio": ratio[lo], "observed": observed, "bound": limit})
    return Finding("delta_fairness", True, detail)

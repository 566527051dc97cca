"""Scale invariance: a spec whose every quantity of time is multiplied by a factor is the same
problem in another unit. Shared by the kinds' scaling tests (imported by name)."""

from __future__ import annotations

import pytest

from fairalloc.result import Result


def verdicts(result: Result) -> dict[str, object]:
    """Each check's verdict, by check name."""
    return {f.check: f.verdict for f in result.validation}


def assert_alike(base: Result | str, scaled: Result | str, factor: float, rel: float,
                 objective_scales: bool = True) -> None:
    """``scaled`` is ``base`` in another unit: the same status and verdicts, and the objective
    times ``factor`` (when it is a time; else the same) to a relative ``rel``; or the same
    refusal (``compare``'s reason why a method does not apply)."""
    if isinstance(base, str) or isinstance(scaled, str):
        assert scaled == base
        return
    assert scaled.status == base.status, (base.method, base.status, scaled.status)
    assert verdicts(scaled) == verdicts(base), base.method
    if base.objective is None:
        assert scaled.objective is None
        return
    expected = base.objective * (factor if objective_scales else 1.0)
    assert scaled.objective == pytest.approx(expected, rel=rel), base.method

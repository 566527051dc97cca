"""fairalloc: fair and efficient sharing of heterogeneous compute.

A JSON spec goes in; fairalloc builds the model, solves it exactly or with the papers'
heuristics, and reports from the definitions which fairness axioms and bounds hold.

>>> import fairalloc
>>> r = fairalloc.solve({"problem": "drf", "capacity": {"cpu": 9, "mem": 18},
...     "users": [{"id": "A", "demand": {"cpu": 1, "mem": 4}},
...               {"id": "B", "demand": {"cpu": 3, "mem": 1}}]})
>>> r.status, round(r.allocation["A"]["tasks"], 6), round(r.allocation["B"]["tasks"], 6)
('optimal', 3.0, 2.0)
>>> for f in r.validation: print(f.check, f.verdict)  # a probe finds no lie pays: unrefuted
feasibility holds
sharing_incentive holds
envy_freeness holds
pareto_efficiency holds
strategy_proofness unrefuted
"""

from fairalloc import render  # noqa: F401  (fills result.NOTEBOOK: results show in notebooks)
from fairalloc.allocation import Allocation
from fairalloc.api import (
    compare,
    experiment,
    import_table,
    run_study,
    simulate,
    solve,
    study_frame,
    summary,
    sweep,
    validate,
)
from fairalloc.contract import MethodDoesNotApply
from fairalloc.errors import ArgumentError, SolverError, SpecError, StoreError
from fairalloc.registry import register_method
from fairalloc.result import Finding, Result
from fairalloc.spec import load_spec
from fairalloc.version import __version__

__all__ = [
    "Allocation", "ArgumentError", "Finding", "MethodDoesNotApply", "Result", "SolverError",
    "SpecError", "StoreError", "__version__", "compare", "experiment", "import_table",
    "load_spec", "register_method", "run_study", "simulate", "solve", "study_frame", "summary",
    "sweep", "validate",
]

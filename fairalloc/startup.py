"""One-off start-up costs of a process, timed apart from the methods.

The first Pyomo model in a process pays for importing Pyomo and for setting up its HiGHS
interface: 1-4 s on a busy machine, where the next model of the same size takes 0.05 s. That
is a cost of the process, not of the method, and a paper's time column must not hold it.
:func:`pyomo` pays it once, building and solving a one-variable model, and :func:`spent` says
how long every start-up so far took, so that a caller timing a method leaves out what was paid
inside it (``engine.solve`` reports it apart as ``solver.extra.start_up_s``).
:func:`duckdb` imports DuckDB, which commands need only once they read a table or a store.
"""

from __future__ import annotations

import functools
import importlib
import signal
import threading
import time
from types import ModuleType

import highspy

_SPENT = [0.0]     # seconds of one-off start-up paid in this process


def spent() -> float:
    """Seconds this process has spent on one-off start-ups so far."""
    return _SPENT[0]


@functools.cache
def pyomo() -> ModuleType:
    """``pyomo.environ``, with Pyomo's HiGHS interface warmed by one trivial solve (once per
    process, timed into :func:`spent`); every Pyomo formulation gets Pyomo from here."""
    start = time.perf_counter()
    try:
        # lazy: heavy (1-4 s), only methods with a Pyomo model need it: timed here
        import pyomo.environ as pyo
        from pyomo.contrib.solver.common.factory import SolverFactory

        model = pyo.ConcreteModel(name="start-up")
        model.x = pyo.Var(bounds=(0, 1))
        model.objective = pyo.Objective(expr=model.x, sense=pyo.maximize)
        solver = SolverFactory("highs")
        if solver.available():       # else the first real solve says so (solvers.highs)
            solver.solve(model, load_solutions=False, raise_exception_on_nonoptimal_result=False)
            # HiGHS sizes its thread pool on the first run: leave that to the first real one
            # (which may ask for a number of threads)
            highspy.Highs.resetGlobalScheduler(True)
        return pyo
    finally:
        _SPENT[0] += time.perf_counter() - start


def duckdb() -> ModuleType:
    """The ``duckdb`` module, imported with Ctrl-C held until the import is done and then
    given to the SIGINT handler in place at the call. DuckDB's start-up (0.1-0.7 s, lazy: only
    commands with a table or a store need it) swallows a SIGINT that lands in it (the import
    succeeds and the Ctrl-C is lost: a study then ran on for minutes) or turns it into
    ``ImportError: Encountered an error while initializing the extension``, which is raised
    as it is if that handler only notes the Ctrl-C (a study's store being written)."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        return importlib.import_module("duckdb")    # no Ctrl-C here, or none Python handles
    came: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        module, failed = importlib.import_module("duckdb"), None
    except ImportError as exc:
        module, failed = None, exc
    finally:
        signal.signal(signal.SIGINT, previous)
    if came:
        previous(signal.SIGINT, None)       # the Ctrl-C, as the handler in place takes it
    if failed is not None:
        raise failed
    return module

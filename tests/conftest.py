"""Shared by every test folder: pytest puts this folder on ``sys.path`` (its rootdir-based
"prepend" import mode), so tests in ``tests/<kind>/`` import the helpers here (``clitools``,
``conformance``) by name."""

import os

from hypothesis import settings

# No example has a deadline: a deadline is a timed assert, and with the tests spread over
# every core (make test, make test-all) an example's time says more of the machine's load
# than of the code. CI replays the same examples every run (a test that fails on some runs
# only is a red CI waiting to happen); a local run keeps exploring new ones. A test's own
# settings win.
settings.register_profile("suite", deadline=None)
settings.register_profile("ci", settings.get_profile("suite"), derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "suite")

# pytest-xdist's worker processes start with COLUMNS=80 and LINES=24 set, as if on a terminal;
# tables follow COLUMNS, so each test would be laid out 80 wide in a worker and 150 (piped)
# in one process. A worker drops them: every test sees the environment of a piped run.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)

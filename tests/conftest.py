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

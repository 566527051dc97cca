"""Shared by every test folder: pytest puts this folder on ``sys.path`` (its rootdir-based
"prepend" import mode), so tests in ``tests/<kind>/`` import the helpers here (``clitools``,
``conformance``) by name."""

import os

from hypothesis import settings

# CI replays the same examples every run (a test that fails on some runs only is a red CI
# waiting to happen); a local run keeps exploring new ones. A test's own settings win.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

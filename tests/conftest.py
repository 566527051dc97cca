"""Shared by every test folder: pytest puts this folder on ``sys.path`` (its rootdir-based
"prepend" import mode), so tests in ``tests/<kind>/`` import the helpers here (``clitools``,
``conformance``) by name."""

"""The ``fairalloc`` console script: :func:`fairalloc.cli.main` with Ctrl-C handled from the
first moment to the last.

Importing fairalloc takes about a second (numpy, HiGHS, Pyomo, DuckDB, rich), and until it
ends ``main`` cannot catch anything: a Ctrl-C then ended the command with a traceback. This
module stands outside the package so that importing it imports nothing heavy: it makes SIGINT
end the process at once with exit 130 and one line while fairalloc is imported (nothing has
started that needs undoing), then leaves Ctrl-C to ``main``, which each command handles
(a study stores what arrived), and takes it again once ``main`` returns.
"""

import os
import signal
import sys

INTERRUPTED = 130


def _interrupted(signum, frame) -> None:
    """Exit 130 now, with one line (what was printed is flushed first)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):      # a closed or broken stream: nothing to keep
            pass
    os.write(2, b"fairalloc: interrupted\n")
    os._exit(INTERRUPTED)


signal.signal(signal.SIGINT, _interrupted)
from fairalloc.cli import main as _command  # noqa: E402  (after the handler: a slow import)

signal.signal(signal.SIGINT, signal.default_int_handler)


def main() -> int:
    """Run the command line; its exit code. Ctrl-C before a command handles it (while the
    parser is built) or after ``main`` returns (shutting down) exits 130 with one line."""
    try:
        code = _command()
    except KeyboardInterrupt:
        _interrupted(signal.SIGINT, None)
    signal.signal(signal.SIGINT, _interrupted)
    return code

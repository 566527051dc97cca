"""``python -m fairalloc.cli``: the command line."""

import sys

from fairalloc.cli import main

sys.exit(main())

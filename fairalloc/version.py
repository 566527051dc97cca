"""fairalloc's version, in a module of its own so that the store, reports and the command line
can name it without importing the package's public API (``fairalloc/__init__``)."""

__version__ = "0.1.0"

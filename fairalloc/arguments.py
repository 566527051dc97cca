"""Command-line argument types and mistakes, shared by the command line and the kinds'
capabilities (a study's parameters are command-line flags): each type checks a value before any
work starts, and a mistake names its option (exit 2)."""

from __future__ import annotations

import argparse
from pathlib import Path

from fairalloc.render import LATEX_LENGTH


class UsageError(Exception):
    """A command-line mistake (an option's value): exit 2 naming the option, never reported
    as an invalid spec."""

    def __init__(self, option: str, rule: str):
        super().__init__(f"{option}: {rule}")


def whole(low: int, high: int | None = None):
    """An argparse type: a whole number in low..high."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            span = f"{low}..{high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"{value} is out of range ({span})")
        return value
    return parse


def fraction(text: str) -> float:
    """An argparse type: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:                   # NaN fails this too
        raise argparse.ArgumentTypeError(f"{text} is not in [0, 1]")
    return value


def gap(text: str) -> float:
    """An argparse type: a relative MIP gap, a number in [0, 1)."""
    value = fraction(text)
    if value == 1:
        raise argparse.ArgumentTypeError("a gap of 1 proves nothing: use a number below 1")
    return value


def positive(text: str) -> float:
    """An argparse type: a finite number above 0 (seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):          # NaN fails this too
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def table_file(text: str) -> str:
    """An argparse type: a file to write a table to, ``.parquet`` or ``.csv``."""
    if Path(text).suffix.lower() not in (".parquet", ".csv"):
        raise argparse.ArgumentTypeError(f"{text}: the extension must be .parquet or .csv")
    return writable(text)


def names(text: str) -> list[str]:
    """An argparse type: a comma-separated list of non-empty names."""
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"{text!r} has an empty name")
    return parts


def name(text: str) -> str:
    """An argparse type: a non-empty name."""
    if not text.strip():
        raise argparse.ArgumentTypeError("a name must not be empty")
    return text.strip()


def writable(text: str) -> str:
    """An argparse type: a file to write (its folder exists, it is not a folder)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; name a file in it")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"folder {path.parent} does not exist")
    return text


def folder_to_make(text: str) -> str:
    """An argparse type: a folder that exists or can be made (not a file)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; name a folder")
    return text


def figure(text: str) -> str:
    """An argparse type: a plot file whose extension matplotlib writes, in a folder that
    exists; checked before anything is computed."""
    from matplotlib.backend_bases import FigureCanvasBase  # lazy: heavy, only --plot needs it

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(text).suffix.lstrip(".").lower()
    if suffix not in formats:
        raise argparse.ArgumentTypeError(f"{text}: the extension must be one of "
                                          f"{', '.join(sorted(formats))}")
    return writable(text)


def latex_length(text: str) -> str:
    """An argparse type: a LaTeX length tables are fitted to (``\\linewidth``,
    ``0.8\\textwidth``, ``12cm``)."""
    if not LATEX_LENGTH.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a LaTeX length: a length command "
                                          "(\\linewidth), a multiple of one (0.8\\textwidth) "
                                          "or a number with a unit (12cm, 300pt)")
    return text.strip()

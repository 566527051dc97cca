"""The file edge of every command: inputs are read only from files that can end, and within a
stated size; outputs are written through a temporary file renamed into place, so that a
failed write leaves the old file as it was, and never over one of the command's inputs."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from fairalloc.errors import InputRefused

MAX_INPUT_BYTES = 1 << 30
"""The most an input (a spec, an allocation, a study, a table, standard input) may hold: a
spec of a million users is about 100 MB, and parsing 1 GiB of JSON already takes gigabytes."""


def limit_text() -> str:
    """The input limit as people read it (``1 GiB``)."""
    size, unit = MAX_INPUT_BYTES, "bytes"
    for name in ("KiB", "MiB", "GiB"):
        if size % 1024:
            break
        size, unit = size // 1024, name
    return f"{size:,} {unit}"


_FILE_TYPES = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_input(path: str | Path, pipes: bool = True) -> None:
    """Refuse (``InputRefused``) an input that could be read forever or would not fit: a
    device (``/dev/zero``), a folder or a socket, or a file above ``MAX_INPUT_BYTES``. Pipes
    pass when ``pipes`` (``<(...)``; ``read_bytes`` stops at the limit); a missing file raises
    ``OSError``."""
    mode = os.stat(path)
    refused = _FILE_TYPES if pipes else (*_FILE_TYPES, (stat.S_ISFIFO, "a pipe"))
    for is_type, name in refused:
        if is_type(mode.st_mode):
            raise InputRefused(str(path), f"is {name}, not a file")
    if stat.S_ISREG(mode.st_mode) and mode.st_size > MAX_INPUT_BYTES:
        raise InputRefused(str(path), _too_large())


def _too_large() -> str:
    return f"larger than the {limit_text()} an input may hold"


def read_bytes(source: str | Path) -> bytes:
    """The bytes of the file ``source``, or of standard input for ``-``, refused
    (``InputRefused``) when ``check_input`` refuses the file or it holds more than
    ``MAX_INPUT_BYTES`` (reading stops there: a pipe that never ends is not read to the end of
    memory)."""
    if str(source) == "-":
        stream = getattr(sys.stdin, "buffer", None)
        data = stream.read(MAX_INPUT_BYTES + 1) if stream is not None \
            else sys.stdin.read(MAX_INPUT_BYTES + 1).encode("utf-8")
    else:
        check_input(source)
        with open(source, "rb") as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise InputRefused("<stdin>" if str(source) == "-" else str(source), _too_large())
    return data


def read_text(source: str | Path) -> str:
    """``read_bytes`` as UTF-8 text with universal newlines (as ``open`` reads text):
    ``UnicodeDecodeError`` when it is not UTF-8."""
    text = read_bytes(source).decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text

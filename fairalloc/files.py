"""The file edge of every command: inputs are read only from files that can end, and within a
stated size; outputs are written through a temporary file renamed into place, so that a
failed write leaves the old file as it was, and never over one of the command's inputs."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from fairalloc.errors import InputRefused, OutputError

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
_PIPE = (stat.S_ISFIFO, "a named pipe (FIFO)")


def check_input(path: str | Path, pipes: bool = True) -> None:
    """Refuse (``InputRefused``) an input that could be read forever or would not fit, saying
    what it is without opening it (a pipe with no writer would block): a device
    (``/dev/zero``), a folder, a socket, a symbolic-link loop, or a file above
    ``MAX_INPUT_BYTES``. Pipes pass when ``pipes`` (``<(...)``; ``read_bytes`` stops at the
    limit); a missing file raises ``OSError``."""
    try:
        mode = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputRefused(str(path), "is a symbolic-link loop, not a file") from None
        raise
    refused = _FILE_TYPES if pipes else (*_FILE_TYPES, _PIPE)
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


def digest(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex), read in blocks; ``InputRefused`` for what
    ``check_input`` refuses (a pipe too: it would be read away), ``OSError`` when it is gone."""
    check_input(path, pipes=False)
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def as_text(data: bytes) -> str:
    """Bytes (``read_bytes``) as UTF-8 text with universal newlines (as ``open`` reads text):
    ``UnicodeDecodeError`` when they are not UTF-8."""
    text = data.decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file: the same file through a symbolic or hard link, or the
    same resolved path when one of them does not exist yet."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


@contextlib.contextmanager
def replacing(path: str | Path, failures: tuple[type[BaseException], ...] = (OSError,)
              ) -> Iterator[str]:
    """A temporary path to write ``path``'s new content to (in the same folder, with the same
    suffix, so that writers that go by the extension still do); on leaving the block it is
    flushed to disk and renamed over ``path`` (through a link: over the file it points to), and
    on any failure it is removed and the old file left as it was. A failure among ``failures``
    (``OSError``: a full disk, a read-only folder) is an ``OutputError`` naming ``path``.
    A ``path`` that exists and is not a regular file (``/dev/stdout``, a pipe) is written
    directly: there is nothing to rename over."""
    target = os.path.realpath(path)
    if os.path.exists(target) and not os.path.isfile(target):
        with _failure_named(path, failures):
            yield target
        return
    folder, name = os.path.split(target)
    with _failure_named(path, failures):
        handle, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=Path(name).suffix,
                                             dir=folder)
        os.close(handle)
        try:
            os.chmod(temporary, _mode_for(target))
            yield temporary
            _flush_to_disk(temporary)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise


@contextlib.contextmanager
def _failure_named(path: str | Path, failures: tuple[type[BaseException], ...]
                   ) -> Iterator[None]:
    try:
        yield
    except failures as exc:
        reason = getattr(exc, "strerror", None) or " ".join(str(exc).split()) or type(exc).__name__
        raise OutputError(str(path), reason) from None


def _mode_for(target: str) -> int:
    """The permissions the written file gets: the old file's, else what ``open`` would give
    a new one (``0o666`` less the umask; a temporary file starts private)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _flush_to_disk(path: str) -> None:
    """The file's bytes on disk before it is renamed into place (a crash then leaves the old
    file or the whole new one, and a full disk shows here, not later)."""
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def make_folder(path: str | Path) -> None:
    """Make the folder ``path`` and its parents unless they exist; ``OutputError`` when it
    cannot be made."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(str(path), exc.strerror or str(exc)) from None


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (``replacing``)."""
    with replacing(path) as temporary, open(temporary, "wb") as fh:
        fh.write(data)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` as UTF-8 to ``path`` whole or not at all (``replacing``)."""
    write_bytes(path, text.encode("utf-8"))

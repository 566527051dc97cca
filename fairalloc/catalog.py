"""The example specs, studies and traces shipped inside the package (``fairalloc examples``).

They live in ``fairalloc/examples/`` (the repository's ``specs/`` points there), one folder per
problem kind, ``studies/`` for study specs, ``replay/`` for replay documents and ``traces/``
for tables to import, so an
installed fairalloc has them wherever it was installed from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fairalloc.documents import sort_of
from fairalloc.files import make_folder, write_bytes

EXAMPLES = Path(__file__).parent / "examples"
SUFFIXES = (".json", ".jsonc", ".csv", ".parquet")


@dataclass(frozen=True)
class Example:
    """One shipped file: its path under the examples folder, what it is and its name."""

    path: str
    kind: str
    name: str


def _describe(path: Path) -> tuple[str, str]:
    """(kind, name) of an example: a spec's ``problem`` and ``name``, a study's ``kind`` and
    ``study``, a table's folder."""
    if path.suffix != ".json":
        return path.parent.name, path.stem
    data = json.loads(path.read_text(encoding="utf-8"))
    key = sort_of(data)
    if key in ("study", "replay"):
        return f"{key} ({data.get('kind', '?')})", str(data[key])
    return str(data.get("problem", path.parent.name)), str(data.get("name", path.stem))


def examples(kind: str | None = None) -> list[Example]:
    """Every shipped example (of ``kind``: a problem kind, ``study`` or a folder name),
    sorted by path.

    >>> found = examples("moldable")
    >>> "moldable/example1.json" in [e.path for e in found], {e.kind for e in found}
    (True, {'moldable'})
    """
    out = []
    for path in sorted(EXAMPLES.rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        what, name = _describe(path)
        relative = path.relative_to(EXAMPLES).as_posix()
        if kind is None or kind in (what, relative.split("/")[0], what.split(" ")[0]):
            out.append(Example(relative, what, name))
    return out


def copy_examples(destination: str | Path, chosen: list[Example], force: bool = False
                  ) -> list[Path]:
    """Copy the ``chosen`` examples into ``destination`` keeping their folders (created as
    needed). Without ``force`` nothing is copied when a file there would be overwritten:
    ``FileExistsError`` names every such file."""
    destination = Path(destination)
    targets = [(EXAMPLES / e.path, destination / e.path) for e in chosen]
    clash = [str(t) for _, t in targets if t.exists()]
    if clash and not force:
        raise FileExistsError(clash)
    for source, target in targets:
        make_folder(target.parent)
        write_bytes(target, source.read_bytes())
    return [t for _, t in targets]

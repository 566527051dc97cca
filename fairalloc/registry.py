"""The registry: kind name -> its record (``fairalloc/kinds/<kind>.py``, the contract in
``fairalloc.contract``), loaded the first time the kind is looked up — a command that solves a
drf spec does not pay for importing the other kinds — with the methods users add:
``register_method`` from Python, and installed packages through the entry-point group
``fairalloc.methods`` (name ``<kind>.<method>``, value ``module:function``).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import json
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from importlib.metadata import entry_points

from fairalloc import kinds
from fairalloc.contract import COMMON_OPTIONS, Kind, method_options

__all__ = ["KINDS", "Kind", "Kinds", "kind_schema", "register_kind", "register_method",
           "shipped_kinds"]

ENTRY_POINTS = "fairalloc.methods"


class Kinds(Mapping):
    """Kind name -> Kind, each imported from ``fairalloc.kinds.<name>`` on first use, with the
    methods installed packages add (entry points) and those registered from Python.
    ``generation`` counts the registrations, so that what is derived from the records (the
    schemas of ``fairalloc.spec``) can be cached by it."""

    def __init__(self, names: tuple[str, ...]):
        self._names = names
        self._built: dict[str, Kind] = {}
        self.generation = 0

    def __getitem__(self, name: str) -> Kind:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._built:
            kind = importlib.import_module(f"fairalloc.kinds.{name}").KIND
            added = {m: f for m, f in _entry_point_methods(name).items() if m not in kind.methods}
            self._built[name] = dataclasses.replace(kind, methods={**kind.methods, **added})
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def add_kind(self, kind: Kind) -> None:
        if kind.name in self._names:
            raise ValueError(f"a kind named {kind.name!r} exists")
        if kind.schema is None or kind.template is None:
            raise ValueError("a kind registered from outside fairalloc brings its schema and "
                             "template (Kind.schema, Kind.template)")
        self._names = (*self._names, kind.name)
        self._built[kind.name] = kind
        self.generation += 1

    def add_method(self, kind: str, name: str, function: Callable,
                   options: dict | None = None) -> None:
        if kind not in self._names:
            raise KeyError(f"unknown problem kind {kind!r} (known: {', '.join(self._names)})")
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a method name must be a non-empty string")
        if not callable(function):
            raise TypeError(f"a method must be callable, not {type(function).__name__}")
        built = self[kind]
        if name in built.methods:
            raise ValueError(f"{kind} already has a method {name!r}")
        known = {*kind_schema(built)["properties"]["options"]["properties"], *COMMON_OPTIONS,
                 *(built.options or {}), *(options or {})}
        undocumented = [o for o in method_options(function) if o not in known]
        if undocumented:
            raise ValueError(f"{name} takes {', '.join(undocumented)}: give each a JSON Schema "
                             "in options= (a spec option needs a schema rule)")
        self._built[kind] = dataclasses.replace(
            built, methods={**built.methods, name: function},
            options={**(built.options or {}), **(options or {})})
        self.generation += 1


def _entry_point_methods(kind: str) -> dict[str, Callable]:
    """Methods installed packages declare for ``kind`` (entry points ``<kind>.<method>``)."""
    out: dict[str, Callable] = {}
    for point in entry_points(group=ENTRY_POINTS):
        owner, _, method = point.name.partition(".")
        if owner == kind and method:
            out.setdefault(method, point.load())
    return out


def kind_schema(record: Kind) -> dict:
    """The kind's own JSON Schema (a fresh copy): its record's, else the one shipped in
    ``fairalloc/schemas`` (``fairalloc.spec.schema`` adds the methods and common options)."""
    if record.schema is not None:
        return copy.deepcopy(record.schema)
    name = f"{record.name}.schema.json"
    return json.loads(resources.files("fairalloc.schemas").joinpath(name).read_text())


def shipped_kinds() -> tuple[str, ...]:
    """The kinds fairalloc ships: one a module in ``fairalloc/kinds/``, found without importing
    it, in the order of ``fairalloc.kinds.ORDER`` and then by name (a new kind needs no edit
    here to be registered)."""
    found = [m.name for m in pkgutil.iter_modules(kinds.__path__) if not m.ispkg]
    listed = {name: i for i, name in enumerate(kinds.ORDER)}
    return tuple(sorted(found, key=lambda name: (listed.get(name, len(listed)), name)))


KINDS: Kinds = Kinds(shipped_kinds())


def register_kind(kind: Kind) -> None:
    """Add a problem kind from outside fairalloc: its record (``fairalloc.contract.Kind``) with
    its schema and template. It then works like the shipped kinds in the API and the command
    line of this process (CONTRIBUTING.md)."""
    KINDS.add_kind(kind)


def register_method(kind: str, name: str, function: Callable,
                    options: dict | None = None) -> None:
    """Add a method (your own scheduler) to a kind without touching fairalloc. ``function``
    follows the method contract, ``f(problem, *, <options>) -> Solution``; it then gets every
    check of the kind, the strategy-proofness probe included, in ``solve``, ``compare`` and
    ``validate --method NAME``. Its spec options are its keyword parameters; ``options`` gives
    the JSON Schema of each one the kind's schema does not already have (``{"tie": {"enum":
    ["first", "last"]}}``)."""
    KINDS.add_method(kind, name, function, options)

"""The registry: kind name -> its record (``fairalloc/kinds/<kind>.py``, the contract in
``fairalloc.contract``), loaded the first time the kind is looked up — a command that solves a
drf spec does not pay for importing the other kinds — with the methods users add:
``register_method`` from Python, and installed packages through the entry-point group
``fairalloc.methods`` (name ``<kind>.<method>``, value ``module:function``).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterator, Mapping
from importlib.metadata import entry_points

from fairalloc.contract import Kind

__all__ = ["KINDS", "Kind", "Kinds", "register_kind", "register_method"]

ENTRY_POINTS = "fairalloc.methods"


class Kinds(Mapping):
    """Kind name -> Kind, each imported from ``fairalloc.kinds.<name>`` on first use, with the
    methods registered for it."""

    def __init__(self, names: tuple[str, ...]):
        self._names = names
        self._built: dict[str, Kind] = {}
        self._added: dict[str, dict[str, Callable]] = {name: {} for name in names}
        self._plugins_loaded: set[str] = set()

    def __getitem__(self, name: str) -> Kind:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._built:
            kind = importlib.import_module(f"fairalloc.kinds.{name}").KIND
            self._load_plugins(name)
            added = {m: f for m, f in self._added[name].items() if m not in kind.methods}
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
        self._added[kind.name] = {}
        self._plugins_loaded.add(kind.name)
        self._built[kind.name] = kind

    def add_method(self, kind: str, name: str, function: Callable) -> None:
        if kind not in self._names:
            raise KeyError(f"unknown problem kind {kind!r} (known: {', '.join(self._names)})")
        if not isinstance(name, str) or not name.strip():
            raise ValueError("a method name must be a non-empty string")
        if not callable(function):
            raise TypeError(f"a method must be callable, not {type(function).__name__}")
        if name in self[kind].methods:
            raise ValueError(f"{kind} already has a method {name!r}")
        self._added[kind][name] = function
        if kind in self._built:
            built = self._built[kind]
            self._built[kind] = dataclasses.replace(built, methods={**built.methods,
                                                                    name: function})
        from fairalloc.spec import forget_schemas  # options.method names the new method

        forget_schemas()

    def _load_plugins(self, kind: str) -> None:
        if kind in self._plugins_loaded:
            return
        self._plugins_loaded.add(kind)
        for point in entry_points(group=ENTRY_POINTS):
            owner, _, method = point.name.partition(".")
            if owner == kind and method:
                self._added[kind].setdefault(method, point.load())


KINDS: Kinds = Kinds(("drf", "emrf", "etf", "moldable", "accelos", "token"))


def register_kind(kind: Kind) -> None:
    """Add a problem kind from outside fairalloc: its record (``fairalloc.contract.Kind``) with
    its schema and template. It then works like the shipped kinds in the API and the command
    line of this process (CONTRIBUTING.md)."""
    KINDS.add_kind(kind)
    from fairalloc.spec import forget_schemas

    forget_schemas()


def register_method(kind: str, name: str, function: Callable) -> None:
    """Add a method (your own scheduler) to a kind without touching fairalloc. ``function``
    follows the method contract, ``f(problem, *, <options>) -> Solution``; it then gets every
    check of the kind, the strategy-proofness probe included, in ``solve``, ``compare`` and
    ``validate --method NAME``. Its spec options are its keyword parameters."""
    KINDS.add_method(kind, name, function)

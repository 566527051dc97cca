"""Read a JSON spec strictly, check it against its kind's JSON Schema, and build the problem.

A spec is checked in three stages and every problem found in a stage is reported together, each
with its JSON path and the rule it breaks:

1. parsing: JSON syntax, no ``NaN``/``Infinity`` (nor numbers too large for a float), no key given
   twice in one object; ``// ...`` and ``/* ... */`` outside strings are comments (as
   ``fairalloc new`` writes them), and a top-level ``$schema`` (a string: the JSON Schema an
   editor completes from, ``fairalloc schema KIND``) is allowed and otherwise ignored;
2. the kind's JSON Schema (``schemas/<kind>.schema.json``, draft 2020-12, unknown keys rejected);
3. the model's preconditions (fractions summing to 1, unique ids, names that exist, ...).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from math import isfinite
from pathlib import Path
from typing import Any

import jsonschema_rs
import numpy as np
import orjson

from fairalloc.documents import refuse_other_sort
from fairalloc.errors import InputRefused, SpecError, Violation, Violations, is_unicode, json_path
from fairalloc.files import as_text, read_bytes
from fairalloc.registry import KINDS, kind_schema

# a string (kept), a // comment or a /* */ comment (dropped; a block keeps its line breaks)
_TOKEN_OR_COMMENT = re.compile(r'("(?:[^"\\\n]|\\.)*")|//[^\n]*|/\*[\s\S]*?\*/')


def strip_comments(text: str) -> str:
    r"""JSON text without its comments, line numbers kept.

    >>> strip_comments('{"a": "http://x", // note\n "b": /* 2 */ 3}')
    '{"a": "http://x", \n "b":  3}'
    """
    if "//" not in text and "/*" not in text:
        return text
    return _TOKEN_OR_COMMENT.sub(
        lambda m: m.group(1) or "\n" * m.group(0).count("\n"), text)


def without_schema_key(data: Any, found: Violations) -> Any:
    """An object's data without its top-level ``$schema`` (a string, for editors)."""
    if not isinstance(data, dict) or "$schema" not in data:
        return data
    if not isinstance(data["$schema"], str):
        found.add(["$schema"], "must be a string (the JSON Schema's path or URL, for editors)")
    return {k: v for k, v in data.items() if k != "$schema"}


@dataclass(frozen=True)
class Spec:
    """A checked spec: its kind, the built problem object and the raw JSON it came from."""

    kind: str
    problem: Any
    options: dict
    raw: dict
    name: str | None = None
    source: str | None = None


class _NonFinite:
    """Stands where the text had NaN, Infinity or an overflowing number, until it is reported."""

    def __init__(self, text: str):
        self.text = text


class _DuplicateKeys(dict):
    """An object in which some key appeared twice; remembers which."""

    duplicates: list[str] = []


def parse_text(text: str, source: str | None, what: str = "spec") -> Any:
    """Strict JSON, comments dropped: orjson's parse where it is sure to read the text as the
    strict parse does (``_quick_parse``), else the strict parse (``strict_parse``)."""
    text = strip_comments(text)
    data = _quick_parse(text)
    return strict_parse(text, source, what) if data is _UNSURE else data


def strict_parse(text: str, source: str | None, what: str = "spec") -> Any:
    """Strict JSON (without comments): what the parse can flag (non-finite numbers, repeated
    keys) is flagged by hooks; the whole ``plain_json`` walk runs only when something was
    flagged or the text may hold a lone surrogate or nest too deep."""
    flagged: list[bool] = []

    def constant(name: str) -> _NonFinite:
        flagged.append(True)
        return _NonFinite(name)

    def number(literal: str) -> float | int | _NonFinite:
        try:
            if "." in literal or "e" in literal or "E" in literal:
                value = float(literal)
                if math.isinf(value):
                    raise OverflowError
            else:
                # past 309 digits an integer is beyond a float, and past 4,300 int() refuses
                # it (Python's limit on converting long digit strings): never convert those
                if len(literal.lstrip("-")) > FLOAT_DIGITS:
                    raise OverflowError
                value = int(literal)
                if len(literal) > 300:
                    float(value)  # raises OverflowError beyond the float range
        except OverflowError:
            flagged.append(True)
            return _NonFinite(literal if len(literal) < 20 else literal[:12] + "…")
        return value

    def pairs(items: list[tuple[str, Any]]) -> dict:
        obj = dict(items)
        if len(obj) != len(items):
            flagged.append(True)
            seen: set[str] = set()
            obj = _DuplicateKeys(items)
            obj.duplicates = [k for k, _ in items if k in seen or seen.add(k)]
        return obj

    raw = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    hooks = {"parse_float": number, "parse_int": number} if _may_overflow(text, raw) else {}
    try:
        data = json.loads(text, parse_constant=constant, object_pairs_hook=pairs, **hooks)
    except json.JSONDecodeError as exc:
        raise SpecError(
            [Violation("$", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}")],
            source, what,
        ) from None
    except RecursionError:
        raise SpecError([Violation("$", f"nested deeper than {MAX_DEPTH} levels")],
                        source, what) from None
    if flagged or _SURROGATE_ESCAPE.search(text) or _depth_bound(raw) > MAX_DEPTH:
        return plain(data, source, what)
    return data


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_UNSURE = object()      # what ``_quick_parse`` returns when only the strict parse can tell
_DIGIT_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_LONG_DIGITS = b"0" * 19     # 19 digits or more: an integer orjson may read as a float


def _quick_parse(doc: bytes | str) -> Any:
    """``doc`` (JSON without comments) parsed by orjson, or ``_UNSURE`` when the strict parse
    could read it otherwise: orjson refuses NaN, infinities, numbers beyond a float, lone
    surrogates and invalid UTF-8 itself, but keeps the last of a repeated key and reads an
    integer beyond 64 bits as a float. So the strict parse takes over when orjson refuses the
    text, when it has a run of 19 digits or more, when its brackets could nest deeper than
    ``MAX_DEPTH``, or when it has more pairs (colons) than the data orjson made of it (a key
    given twice; a ``\\u`` escape could spell a colon, so text with one goes there too).
    Each test is a pass in C over the bytes: several times faster than the strict parse, and exact
    where it answers."""
    try:
        raw = doc if isinstance(doc, bytes) else doc.encode("utf-8")
    except UnicodeEncodeError:          # a lone surrogate in a str
        return _UNSURE
    brackets = np.frombuffer(raw.translate(None, _NOT_BRACKET), np.uint8)
    if (b"\\u" in raw or _LONG_DIGITS in raw.translate(_DIGIT_AS_ZERO)
            or _depth_bound(brackets) > MAX_DEPTH):
        return _UNSURE
    try:
        with paused_gc():
            data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _UNSURE
    if raw.count(b":") != orjson.dumps(data).count(b":"):
        return _UNSURE
    return data


@contextlib.contextmanager
def paused_gc():
    """The cyclic garbage collector off for a block that builds millions of objects and no
    cycles (a parse, a model's arrays): it would otherwise walk them again and again as they
    are made (a third of a large spec's parse). On leaving, the objects go straight to the
    oldest generation (``freeze`` then ``unfreeze``: no walk), as if they had survived the
    young ones, rather than be walked by the next two young collections."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _depth_bound(raw: np.ndarray) -> int:
    """The deepest nesting of brackets in JSON bytes, counting brackets inside strings too (so
    at least the true depth)."""
    opens = (raw == 91) | (raw == 123)
    at = np.flatnonzero(opens | (raw == 93) | (raw == 125))
    return int(np.cumsum(np.where(opens[at], 1, -1)).max(initial=0))


def plain(data: Any, source: str | None = None, what: str = "spec") -> Any:
    """``plain_json`` that raises :class:`SpecError` with every violation it found."""
    found = Violations()
    data = plain_json(data, found)
    if found:
        raise SpecError(found.items, source, what)
    return data


MAX_DEPTH = 64           # nesting levels a spec may have (the deepest real spec has 5)
_FLOAT_MAX = sys.float_info.max
FLOAT_DIGITS = 309       # digits of the largest whole number a float holds (1.8e308)


def plain_json(data: Any, found: Violations) -> Any:
    """``data`` as plain JSON values, with a violation (at its JSON path) for everything a
    spec cannot hold: NaN, infinities and numbers beyond a 64-bit float, a key given twice,
    a key that is not a string, text that is not Unicode (a lone surrogate), nesting deeper
    than ``MAX_DEPTH``, and values that are not JSON at all. numpy scalars become Python
    numbers and tuples lists. Iterative: no input depth can exhaust the stack.

    >>> found = Violations()
    >>> plain_json({"a": (1, np.int64(2)), "b": True}, found), found.items
    ({'a': [1, 2], 'b': True}, [])
    >>> _ = plain_json({"a": float("nan"), 3: [10**400]}, found)
    >>> for v in found.items: print(v)
    a: nan is not a finite number (numbers must fit a 64-bit float)
    $: key 3 is not a string (JSON object keys are text)
    """
    if not isinstance(data, (Mapping, list, tuple)):
        return data                     # the caller says a spec must be an object
    root: list = [None]
    stack: list[tuple[Any, tuple, Any, Any]] = [(data, (), root, 0)]
    while stack:
        node, path, parent, slot = stack.pop()
        if len(path) >= MAX_DEPTH:
            found.add(list(path), f"nested deeper than {MAX_DEPTH} levels")
            continue
        if type(node) is dict or (type(node) is not list and isinstance(node, Mapping)):
            for key in getattr(node, "duplicates", ()):
                found.add([*path, key], "key appears more than once in this object")
            out: dict = {}
            for key, value in node.items():
                if type(key) is not str:
                    found.add(list(path), f"key {_shown(key)} is not a string (JSON object "
                              "keys are text)")
                    continue
                if not key.isascii() and not is_unicode(key):
                    found.add([*path, key], "key is not valid Unicode (it holds a lone "
                              "surrogate)")
                kind = type(value)     # the common plain values inline: specs can be large
                if ((kind is str and value.isascii()) or (kind is float and isfinite(value))
                        or kind is bool or value is None):
                    out[key] = value
                else:
                    out[key] = _scalar(value, path, key, out, stack, found)
        else:
            out = list(node)
            for i, value in enumerate(out):
                kind = type(value)
                if not ((kind is str and value.isascii()) or (kind is float and isfinite(value))
                        or kind is bool or value is None):
                    out[i] = _scalar(value, path, i, out, stack, found)
        parent[slot] = out
    return root[0]


def _scalar(value: Any, path: tuple, key: Any, out: dict | list, stack: list,
            found: Violations) -> Any:
    """One value of a container ``out``: checked and returned if it is a scalar; a container
    is queued on ``stack``, to be put at ``out[key]`` once walked."""
    kind = type(value)
    if kind is str:
        if not value.isascii() and not is_unicode(value):
            found.add([*path, key], "text is not valid Unicode (it holds a lone surrogate)")
        return value
    if kind is float:
        if not math.isfinite(value):
            found.add([*path, key], f"{value!r} is not a finite number (numbers must fit a "
                      "64-bit float)")
        return value
    if kind is bool or value is None:
        return value
    if kind is int:
        if not -_FLOAT_MAX <= value <= _FLOAT_MAX:
            found.add([*path, key], "a number beyond 1.8e308 is not a finite number (numbers "
                      "must fit a 64-bit float)")
        return value
    if kind is dict or kind is list or isinstance(value, (Mapping, tuple)):
        stack.append((value, (*path, key), out, key))
        return None
    if isinstance(value, (np.bool_, np.integer, np.floating)):
        return _scalar(value.item(), path, key, out, stack, found)
    if isinstance(value, (int, float)):                     # a subclass: its plain value
        return _scalar(float(value) if isinstance(value, float) else int(value),
                       path, key, out, stack, found)
    if isinstance(value, _NonFinite):
        found.add([*path, key], f"{value.text} is not a finite number (numbers must fit a "
                  "64-bit float)")
        return None
    found.add([*path, key], f"a {kind.__name__} is not a JSON value")
    return None


def _shown(value: Any) -> str:
    """A value for an error message, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


_BIG_EXPONENT = re.compile(r"[eE]\+?0*[1-9]\d\d")


def _may_overflow(text: str, raw: np.ndarray) -> bool:
    """Could a number in ``text`` be too large for a float? Only with a three-digit exponent or
    a run of 300+ digits; checking that first spares the per-number hooks (a third of the
    parse time on large specs). Digit runs are measured with numpy over the bytes."""
    if _BIG_EXPONENT.search(text):
        return True
    digit = np.concatenate([[False], (raw >= 48) & (raw <= 57), [False]])
    edges = np.flatnonzero(digit[1:] != digit[:-1])
    return bool(len(edges) and (edges[1::2] - edges[::2]).max() >= 300)


def read_json(source: str | Path, what: str = "spec") -> tuple[Any, str]:
    """Read and strictly parse JSON from a path or ``-`` (standard input); return (data, label).
    ``what`` names the input in error messages ("spec", "allocation")."""
    label = "<stdin>" if str(source) == "-" else str(source)
    try:
        raw = read_bytes(source)
    except OSError as exc:
        problem = Violation("$", f"cannot read file: {exc.strerror or exc}")
        raise SpecError([problem], label, what) from None
    except InputRefused as exc:
        raise SpecError([Violation("$", exc.rule)], label, what) from None
    parse = parse_text
    if not (b"//" in raw or b"/*" in raw or b"\r" in raw):     # no comment, one kind of newline
        data = _quick_parse(raw)         # the bytes as they are: no decoded copy
        if data is not _UNSURE:
            return data, label
        parse = strict_parse
    try:
        text = as_text(raw)
    except UnicodeDecodeError:
        raise SpecError([Violation("$", "file is not UTF-8 text")], label, what) from None
    return parse(text, label, what), label


TIME_LIMIT_RULE = {"type": "number", "exclusiveMinimum": 0,
                   "description": "seconds, for a method that takes a limit (ignored by others)"}


def schema(kind: str) -> dict:
    """The JSON Schema of a problem kind, as shipped in ``fairalloc/schemas``, with
    ``options.method`` naming the kind's methods as its record has them (registered ones too)
    and ``options.time_limit`` allowed in every kind (its own rule where it states one).
    """
    return _schema(kind, KINDS.generation)


@cache
def _schema(kind: str, generation: int) -> dict:
    # ``generation`` counts registrations: a method or kind added since is in a fresh schema
    record = KINDS[kind]
    data = kind_schema(record)
    options = data["properties"]["options"]["properties"]
    options["method"]["enum"] = list(record.methods)
    options.setdefault("time_limit", TIME_LIMIT_RULE)
    options.update(record.options or {})
    return data


def template(kind: str) -> str:
    """The commented template spec of a kind, a study or a replay (what ``fairalloc new``
    prints)."""
    if kind in ("study", "replay"):
        return resources.files("fairalloc.templates").joinpath(f"{kind}.jsonc").read_text()
    record = KINDS[kind]
    if record.template is not None:
        return record.template
    return resources.files("fairalloc.templates").joinpath(f"{kind}.jsonc").read_text()


def paper_notes(kind: str) -> str:
    """What fairalloc found checking the kind's paper, as Markdown (the record's ``notes``,
    else ``fairalloc/notes/<kind>.md``, else nothing)."""
    record = KINDS[kind]
    if record.notes is not None:
        return record.notes
    path = resources.files("fairalloc").joinpath("notes", f"{kind}.md")
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def forget_schemas() -> None:
    """Drop the cached schemas and validators (the registry was changed by hand, as a test
    does; a registration makes fresh ones by itself)."""
    _schema.cache_clear()
    _validator.cache_clear()


@cache
def _validator(kind: str, generation: int):
    # jsonschema-rs: 0.06 s for a 1e5-user spec where the pure-Python jsonschema takes 10 s
    return jsonschema_rs.validator_for(schema(kind))


def _at(node: Any, path: list) -> Any:
    for part in path:
        node = node[part]
    return node


def _schema_violations(rules: dict, data: Any, error) -> list[tuple[list, str]]:
    """Paths and short rule texts for an error of schema ``rules``, never echoing the (maybe
    huge) instance."""
    path = list(error.instance_path)
    where = list(error.schema_path)
    kw, value, instance = where[-1], _at(rules, where), _at(data, path)
    if kw == "required":
        return [(path + [error.kind.property], "required key is missing")]
    if kw == "additionalProperties":
        allowed = sorted(_at(rules, where[:-1]).get("properties", {}))
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return [(path + [k], f"unknown key{hint}") for k in instance if k not in allowed]
    if kw == "oneOf" and all(set(branch) == {"required"} for branch in value):
        names = ", ".join(k for branch in value for k in branch["required"])
        return [(path, f"exactly one of {names} is required")]
    rules = {
        "type": lambda: f"must be of type {value}",
        "minimum": lambda: f"must be >= {_limit(value)}",
        "exclusiveMinimum": lambda: f"must be > {_limit(value)}",
        "maximum": lambda: f"must be <= {_limit(value)}",
        "exclusiveMaximum": lambda: f"must be < {_limit(value)}",
        "enum": lambda: f"must be one of {', '.join(map(json.dumps, value))}",
        "const": lambda: f"must be {json.dumps(value)}",
        "minItems": lambda: f"must have at least {value} item{'s' if value != 1 else ''}",
        "maxItems": lambda: f"must have at most {value} items",
        "minProperties": lambda: f"must have at least {value} key{'s' if value != 1 else ''}",
        "minLength": lambda: "must not be empty",
        "maxLength": lambda: f"must be at most {value} characters long",
        "multipleOf": lambda: f"must be a multiple of {value}",
        "uniqueItems": lambda: "must not list an item twice",
        "dependentRequired": lambda: "needs " + " and ".join(
            f"{json.dumps(k)} beside {json.dumps(key)}" for key, needs in value.items()
            if key in instance for k in needs if k not in instance),
    }
    if kw in ("oneOf", "anyOf") and all(isinstance(branch, dict) for branch in value):
        return [(path, "must be " + " or ".join(_described(branch) for branch in value))]
    rule = rules[kw]() if kw in rules else f"breaks schema rule '{kw}'"
    return [(path, rule)]


TYPE_WORDS = {"number": "a number", "integer": "a whole number", "string": "text",
              "boolean": "true or false", "object": "an object", "array": "a list",
              "null": "null"}


def _described(branch: dict) -> str:
    """A schema branch in words: ``a number > 0 and <= 1e+15``, ``a list of numbers > 0``.

    >>> _described({"type": "array", "minItems": 1, "items": {"type": "number",
    ...             "exclusiveMinimum": 0}})
    'a non-empty list of (a number > 0)'
    """
    words = TYPE_WORDS.get(branch.get("type"), "a value")
    if branch.get("type") == "array" and branch.get("minItems", 0) >= 1:
        words = "a non-empty list"
    bounds = [f"{op} {_limit(branch[key])}" for key, op in
              (("exclusiveMinimum", ">"), ("minimum", ">="), ("maximum", "<="),
               ("exclusiveMaximum", "<")) if key in branch]
    if bounds:
        words += " " + " and ".join(bounds)
    if isinstance(branch.get("items"), dict):
        words += f" of ({_described(branch['items'])})"
    return words


def _limit(value: float) -> str:
    """A schema bound as users read it: whole numbers exactly, others short (1e-06, 0.5)."""
    return str(value) if isinstance(value, int) else f"{value:g}"


def check_schema(kind: str, data: dict, found: Violations) -> None:
    """Add a violation for every place where ``data`` breaks the kind's JSON Schema."""
    check_against(schema(kind), _validator(kind, KINDS.generation), data, found)


def check_against(rules: dict, validator, data: Any, found: Violations) -> None:
    """Add a violation for every place where ``data`` breaks the JSON Schema ``rules``
    (``validator``: its compiled jsonschema-rs validator); problem specs and study specs alike."""
    if validator.is_valid(data):
        return
    errors = list(validator.iter_errors(data))
    errors.sort(key=lambda e: list(map(str, e.instance_path)))
    for error in errors:
        for path, rule in _schema_violations(rules, data, error):
            found.add(path, rule)


def build(data: Any, source: str | None = None) -> Spec:
    """Check parsed spec data (schema, then preconditions) and build its problem object."""
    found = Violations()
    if not isinstance(data, dict):
        found.add("$", "a spec must be a JSON object")
        found.raise_if_any(source)
    refuse_other_sort(data, ("problem",), source)
    raw, data = data, without_schema_key(data, found)
    kind = data.get("problem")
    if not isinstance(kind, str) or kind not in KINDS:
        known = ", ".join(sorted(KINDS))
        rule = ("required key is missing" if kind is None
                else f"unknown problem kind (known: {known})")
        found.add(["problem"], rule)
        found.raise_if_any(source)
    check_schema(kind, data, found)
    if found:
        # Report precondition problems too where the structure allows; where it does not, the
        # schema violations already say why, so the failure of this stage adds nothing. Values
        # out of the schema's range may overflow here (1e308 registers per thread times the
        # group size): that ends the stage too, rather than warn or report an inf.
        try:
            with np.errstate(over="raise", divide="raise", invalid="raise"):
                KINDS[kind].from_spec(data, found)
        except (KeyError, TypeError, AttributeError, ValueError, IndexError, ArithmeticError):
            pass
        found.raise_if_any(source)
    with paused_gc():
        problem = KINDS[kind].from_spec(data, found)
    found.raise_if_any(source)
    return Spec(
        kind=kind,
        problem=problem,
        options=dict(data.get("options", {})),
        raw=raw,
        name=data.get("name"),
        source=source,
    )


def load_spec(source: str | Path | dict) -> Spec:
    """Load a spec from a file path, ``-`` (stdin) or an already parsed dict, and check it.

    Raises :class:`~fairalloc.errors.SpecError` listing every problem found.
    """
    return build(*parsed(source))


def parsed(source: str | Path | dict) -> tuple[Any, str | None]:
    """A document's data and its label, not yet checked: a dict made plain (no label), a
    file path or ``-`` (standard input) read once (``read_json``)."""
    if isinstance(source, dict):
        return plain(source), None
    if not isinstance(source, (str, Path)):
        raise TypeError(f"a spec is a dict, a file path or '-' (standard input), not "
                        f"{type(source).__name__}")
    return read_json(source)


_PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def set_path(data: dict, path: str, value: Any) -> dict:
    """A copy of ``data`` with the value at a path such as ``users[0].weight`` replaced.

    >>> set_path({"knob": 0.5, "users": [{"weight": 1}]}, "users[0].weight", 3)
    {'knob': 0.5, 'users': [{'weight': 3}]}
    """
    tokens = [int(i) if i else name for name, i in _PATH_TOKEN.findall(path)]
    if not tokens:
        raise SpecError([Violation(path or "$", "empty key path")])
    out = copy.deepcopy(data)
    node = out
    for depth, token in enumerate(tokens):
        fits = (isinstance(node, dict) and isinstance(token, str)) or \
            (isinstance(node, list) and isinstance(token, int) and -len(node) <= token < len(node))
        last = depth == len(tokens) - 1
        if not fits or (not last and token not in node if isinstance(node, dict) else False):
            raise SpecError([Violation(json_path(tokens[: depth + 1]), "no such key in the spec")])
        if last:
            node[token] = value
        else:
            node = node[token]
    return out

"""The quick paths of a large spec's command (issue 24): orjson parses a spec only where it
reads the text exactly as the strict parse does, the model's arrays are read a column at a
time with the same numbers and violations, and the allocation is written in pieces that join
to the text one id per line."""

from __future__ import annotations

import gc
import json
import random

import numpy as np
import orjson
import pytest

import fairalloc
from fairalloc.allocation import Allocation
from fairalloc.errors import SpecError, Violations
from fairalloc.preconditions import check_at_least, check_field_at_least, numbers_of
from fairalloc.registry import KINDS
from fairalloc.spec import (
    _UNSURE,
    _quick_parse,
    load_spec,
    parse_text,
    paused_gc,
    read_json,
    strict_parse,
)

# texts where orjson alone would read something else than the strict parse, or refuse
HOSTILE = [
    '{"a": 1, "a": 2}',                                   # a key twice: orjson keeps the last
    '{"a": 1, "a": "\\u003a"}',                           # ... and an escaped colon to hide it
    '{"a": {"b": 1, "b": 1}}',
    '[-11111111111111111111]',                            # below -2**63: orjson makes a float
    '[18446744073709551616]',                             # above 2**64
    '[9223372036854775808, 123456789012345678901234567890]',
    '[1e400]', '[-1e400]', '[NaN]', '[Infinity]', '[-Infinity]', '[1' + '0' * 400 + ']',
    '"\\ud800"', '{"\\udc00": 1}', '"\\ud83d\\ude00"',
    '[' * 64 + ']' * 64, '[' * 65 + ']' * 65, '{"a": ' * 70 + '1' + '}' * 70,
    '[' * 2000 + ']' * 2000,
    '\ufeff{}', '{"a": 1,}', '[01]', '{"a" 1}', '', '{"a": "tab\there"}',
    '{"url": "http://x", "a": 1}', '{"a": "\\"", "b": "\\\\", "c": "\\n"}',
    '{"a": 1.0, "b": -0, "c": -0.0, "d": 1E2, "e": 5e-324, "f": 1e-400}',
]


def outcome(parse, text: str):
    """What a parse gives: ("data", value with the types of every number) or ("refused",
    the violations)."""
    try:
        data = parse(text)
    except SpecError as exc:
        return "refused", [str(v) for v in exc.violations]
    return "data", typed(data)


def typed(value):
    """A parsed value with each number's type beside it (1 and 1.0 differ here)."""
    if isinstance(value, dict):
        return ("dict", [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    return (type(value).__name__, repr(value))


@pytest.mark.parametrize("text", HOSTILE)
def test_the_quick_parse_reads_a_text_as_the_strict_parse_or_leaves_it(text):
    quick = _quick_parse(text)
    if quick is not _UNSURE:
        assert ("data", typed(quick)) == outcome(lambda t: strict_parse(t, None), text)
    assert outcome(lambda t: parse_text(t, None), text) == \
        outcome(lambda t: strict_parse(t, None), text)


@pytest.mark.parametrize("text", ['{"a": 1, "a": 2}', '{"a": 1, "a": "\\u003a"}',
                                  '[-11111111111111111111]', '[' * 65 + ']' * 65])
def test_the_quick_parse_leaves_what_orjson_would_misread(text):
    assert _quick_parse(text) is _UNSURE


def test_random_numbers_read_alike():
    """Floats with up to 18 significant digits, every exponent, and integers up to 18 digits:
    orjson and the strict parse give the same numbers, bit for bit."""
    rng = random.Random(24)
    numbers = []
    for _ in range(3000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 18)))
        form = rng.randrange(3)
        numbers.append(digits.lstrip("0") or "0" if form == 0 else
                       f"0.{digits}" if form == 1 else f"{digits[0]}.{digits[1:] or 0}e"
                       f"{rng.randint(-320, 300)}")
    text = "[" + ", ".join(("-" if rng.random() < 0.5 else "") + n for n in numbers) + "]"
    quick = _quick_parse(text)
    assert quick is not _UNSURE
    assert typed(quick) == typed(strict_parse(text, None))


@pytest.mark.parametrize("kind", ["drf", "emrf", "etf", "moldable", "hetero", "accelos"])
def test_a_plain_spec_takes_the_quick_parse(kind, tmp_path):
    data = KINDS[kind].random_spec(7, **({"users": 50} if kind in ("drf", "emrf") else {}))
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data, indent=1))
    assert _quick_parse(path.read_bytes()) == data
    assert read_json(path)[0] == data


def test_a_spec_file_with_a_repeated_key_is_still_refused(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text('{"problem": "drf", "users": [], "users": []}')
    with pytest.raises(SpecError, match="users: key appears more than once"):
        read_json(path)


def reference_lines(allocation: Allocation, indent: str) -> str:
    """The allocation one id per line, written row by row: the ids and keys by ``json.dumps``,
    each number as orjson writes it (NaN as null), as ``to_json`` always has."""
    def text(value) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f"{json.dumps(k)}: {text(v)}" for k, v in value.items()) + "}"
        if isinstance(value, (float, int)) and not isinstance(value, bool):
            return orjson.dumps(value).decode()
        return json.dumps(value, allow_nan=False)

    lines = [f"{indent}  {json.dumps(uid)}: {text(row)}" for uid, row in allocation.rows()]
    return "{\n" + ",\n".join(lines) + f"\n{indent}}}" if lines else "{}"


def odd_allocation() -> Allocation:
    ids = ["u1", 'quote"d', "back\\slash", "café", "tab\t", "", "x" * 30]
    rng = np.random.default_rng(3)
    return Allocation(ids, {
        ("a",): rng.random(len(ids)) * 1e6,
        ("nested", "z"): np.array([np.nan, 1.0, -0.0, 1e-300, 3, 4, np.inf]),
        ("b",): np.arange(len(ids)),
        ("nested", "y"): np.array([True, False] * 3 + [True]),
        ("label",): np.array(["p", "q", "r", "s", "t", "u", "v"], dtype=object),
    })


@pytest.mark.parametrize("rows", [1, 2, 3, 20_000])
def test_allocation_pieces_join_to_one_id_per_line(rows):
    allocation = odd_allocation()
    pieces = list(allocation.json_chunks("  ", rows=rows))
    assert "".join(pieces) == reference_lines(allocation, "  ")
    assert json.loads("".join(pieces)) == allocation.to_dict()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kinds_result_writes_as_before(kind):
    spec = fairalloc.load_spec(KINDS[kind].random_spec(5))
    result = fairalloc.solve(spec, validate=False)
    text = result.to_json()
    head = json.loads(text)
    assert head["allocation"] == result.allocation.to_dict()
    start = text.index('"allocation": ') + len('"allocation": ')
    lines = reference_lines(result.allocation, "  ")
    assert text[start:start + len(lines)] == lines


def test_empty_allocation():
    assert "".join(Allocation([], {}).json_chunks("  ")) == "{}"


MIXED = [1.0, 1e-9, 0, -1e-9, 5e-7, True, False, None, "1e-9", "abc", [1e-9], {"a": 1}, 2]


@pytest.mark.parametrize("values", [MIXED, [1.0, 1e-9, 3, 5e-7], [1e-9], ["1e-9", 1e-9]])
def test_a_floor_on_a_field_reports_as_the_floor_on_each_value(values):
    by_value, by_field = Violations(), Violations()
    check_at_least(((["users", i, "weight"], v) for i, v in enumerate(values)), 1e-6, by_value)
    check_field_at_least("users", "weight", values, 1e-6, by_field)
    assert [str(v) for v in by_field.items] == [str(v) for v in by_value.items]


@pytest.mark.parametrize("values", [[1, 2.5, True], [1.0, None], ["1.5", 2], [2**70, -0.0]])
def test_numbers_of_reads_values_as_numpy_reads_a_list(values):
    items = [{"x": v} for v in values] + [{}]
    expected = np.array([*values, 7.0], dtype=float)
    np.testing.assert_array_equal(numbers_of(items, "x", 7.0), expected)


def test_numbers_of_refuses_what_numpy_refuses():
    with pytest.raises(ValueError):
        numbers_of([{"x": "abc"}], "x", 0.0)


@pytest.mark.parametrize("kind, field", [("drf", "demand"), ("emrf", "split")])
def test_leontief_arrays_are_each_users_numbers(kind, field):
    data = KINDS[kind].random_spec(11, users=40)
    market = load_spec(data).problem.market
    names = tuple(data["capacity"])
    users = data["users"]
    np.testing.assert_array_equal(
        market.demand, np.array([[u[field].get(r, 0.0) for r in names] for u in users]))
    assert market.demand.flags.c_contiguous
    np.testing.assert_array_equal(market.weights, [u.get("weight", 1.0) for u in users])
    assert market.ids == tuple(u["id"] for u in users)


def test_what_a_paused_collector_saw_made_goes_to_the_oldest_generation():
    """The next young collections need not walk a parsed spec: it is among the old objects."""
    with paused_gc():
        assert not gc.isenabled()
        made = [{"i": i} for i in range(1000)]
    assert gc.isenabled()
    assert not any(o is made for o in gc.get_objects(generation=0))
    assert any(o is made for o in gc.get_objects(generation=2))


def test_a_paused_collector_stays_off_when_it_was_off():
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()

"""The hot-path encoder is RFC 8785 on every value shape the ledger stores (docs/adr/0004)."""

from __future__ import annotations

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from ledger_engine.storage.rows import canonical_rows
from ledger_engine.canonical import MAX_SAFE_INTEGER, canonical_bytes
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import DELTA_FAMILIES

# Any Unicode scalar value: control characters, non-ASCII, non-BMP. (JSON text cannot carry lone surrogates.)
any_text = st.text(st.characters(exclude_categories=["Cs"]))
ascii_text = st.text(st.characters(max_codepoint=0x7F))
safe_integers = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
scalars = st.none() | st.booleans() | safe_integers | any_text | ascii_text


def containers(children):
    return st.lists(children, max_size=6) | st.dictionaries(any_text | ascii_text, children, max_size=6)


stored_values = st.recursive(scalars, containers, max_leaves=40)
unsafe_integers = st.integers(MAX_SAFE_INTEGER + 1) | st.integers(max_value=-MAX_SAFE_INTEGER - 1)


@given(stored_values)
def test_canonical_bytes_equal_rfc8785(value):
    assert canonical_bytes(value) == rfc8785.dumps(value)


@given(st.dictionaries(any_text, stored_values, min_size=2, max_size=8))
def test_objects_with_non_ascii_keys_sort_as_rfc8785(value):
    assert canonical_bytes(value) == rfc8785.dumps(value)


def test_key_order_follows_utf16_code_units_not_code_points():
    # By code point U+FF61 comes first; by UTF-16 code units, which RFC 8785 uses, U+1F600 (0xD83D 0xDE00) does.
    value = {"\uff61": 1, "\U0001f600": 2, "a": 3}
    assert canonical_bytes(value) == rfc8785.dumps(value)
    assert canonical_bytes(value).index("\U0001f600".encode()) < canonical_bytes(value).index("\uff61".encode())


@given(st.recursive(st.floats(allow_nan=False) | unsafe_integers,
                    lambda children: st.lists(children, min_size=1, max_size=3)
                    | st.dictionaries(ascii_text, children, min_size=1, max_size=3), max_leaves=5),
       stored_values)
def test_floats_and_unsafe_integers_are_refused_wherever_they_sit(bad, neighbour):
    for value in (bad, [neighbour, bad], {"a": neighbour, "z": bad}, {"\u00e9": bad}):
        with pytest.raises(LedgerError) as raised:
            canonical_bytes(value)
        assert raised.value.code == ErrorCode.INVALID_NUMBER


@pytest.mark.parametrize("value", [0.0, 1.5, float("inf"), float("nan"), -0.0, 2**53, -(2**53), 2**64])
def test_each_refused_number(value):
    with pytest.raises(LedgerError) as raised:
        canonical_bytes({"amount": value})
    assert raised.value.code == ErrorCode.INVALID_NUMBER


@pytest.mark.parametrize("value", [MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 0])
def test_safe_range_edges_are_accepted(value):
    assert canonical_bytes([value]) == rfc8785.dumps([value])


delta_rows = st.lists(
    st.tuples(st.sampled_from(DELTA_FAMILIES), any_text, st.none() | stored_values),
    max_size=8,
)


@given(delta_rows)
def test_canonical_rows_joined_equal_rfc8785_of_the_row_objects(rows):
    encoded = [(family, key, None if value is None else canonical_bytes(value)) for family, key, value in rows]
    expected = rfc8785.dumps([{"column_family": family, "key": key, "value": value} for family, key, value in rows])
    assert b"".join(canonical_rows(encoded)) == expected

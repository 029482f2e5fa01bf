"""The amount codec: canonical u64 decimal strings in, ints in code, the same strings out."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from ledger_engine.amounts import U64_MAX, Amount, format_amount, parse_amount
from ledger_engine.errors import ErrorCode, LedgerError

AMOUNT = TypeAdapter(Amount)
u64s = st.integers(0, U64_MAX)

NOT_CANONICAL = [
    "", " ", "-1", "+1", "-0", "1e3", "1E3", "1.0", "1.", ".5", "0.5", " 1", "1 ", "\t1", "1\n", "1_000",
    "1,000", "01", "00", "007", "0x10", "\u0661", "\uff11", "18446744073709551616", "99999999999999999999",
    "100000000000000000000", "NaN", "Infinity",
]
NOT_STRINGS = [1, 0, 1.0, 0.5, -1, True, None, b"1", ["1"], {"amount": "1"}]


@pytest.mark.parametrize("text", NOT_CANONICAL + NOT_STRINGS)
def test_parse_amount_refuses(text):
    with pytest.raises(LedgerError) as raised:
        parse_amount(text)
    assert raised.value.code == ErrorCode.INVALID_AMOUNT


@pytest.mark.parametrize("value", NOT_CANONICAL + NOT_STRINGS)
def test_amount_field_refuses_with_the_invalid_amount_type(value):
    with pytest.raises(ValidationError) as raised:
        AMOUNT.validate_python(value)
    assert raised.value.errors()[0]["type"] == "invalid_amount"


@given(u64s)
def test_every_u64_round_trips(number):
    text = format_amount(number)
    assert text == str(number)
    assert parse_amount(text) == number
    assert AMOUNT.validate_python(text) == number
    assert AMOUNT.dump_python(number, mode="json") == text


@given(st.text())
def test_only_canonical_strings_are_accepted(text):
    try:
        number = parse_amount(text)
    except LedgerError as error:
        assert error.code == ErrorCode.INVALID_AMOUNT
    else:
        assert format_amount(number) == text


@pytest.mark.parametrize("value", [-1, U64_MAX + 1, 1.0, True])
def test_format_amount_refuses_values_outside_u64(value):
    with pytest.raises(LedgerError) as raised:
        format_amount(value)
    assert raised.value.code == ErrorCode.AMOUNT_OVERFLOW


def test_the_edges_of_u64():
    assert parse_amount("0") == 0
    assert parse_amount(str(U64_MAX)) == U64_MAX

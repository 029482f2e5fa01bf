"""Money amounts: unsigned 64-bit integers in an asset's minor unit.

On the wire and on disk an amount is a canonical decimal string: digits only,
no sign, exponent, point, whitespace or leading zero. In code it is an ``int``.
"""

from __future__ import annotations

import re
from typing import Annotated, Iterable

from pydantic import BeforeValidator, PlainSerializer
from pydantic_core import PydanticCustomError

from ledger_engine.errors import ErrorCode, LedgerError

U64_MAX = 2**64 - 1
_CANONICAL = re.compile(r"0|[1-9][0-9]{0,19}")


def parse_amount(text: object) -> int:
    """Decode a canonical amount string, refusing anything else."""
    # The common case without the regex, which was most of this function's cost: ASCII digits only (an ASCII
    # string's isdigit admits nothing else), no leading zero, at most 20 of them.
    if type(text) is str and text.isascii() and text.isdigit() and len(text) <= 20 and (
            text[0] != "0" or len(text) == 1):
        value = int(text)
        if value <= U64_MAX:
            return value
    if type(text) is not str or not _CANONICAL.fullmatch(text):
        raise LedgerError(ErrorCode.INVALID_AMOUNT, f"not a canonical unsigned decimal string: {text!r}")
    value = int(text)
    if value > U64_MAX:
        raise LedgerError(ErrorCode.INVALID_AMOUNT, "amount exceeds u64")
    return value


def format_amount(value: int) -> str:
    """Encode an amount, asserting it fits u64."""
    if type(value) is not int or not 0 <= value <= U64_MAX:
        raise LedgerError(ErrorCode.AMOUNT_OVERFLOW, f"amount outside u64: {value!r}")
    return str(value)


_CANONICAL_TOTAL = re.compile(r"0|[1-9][0-9]*")


def parse_total(text: object) -> int:
    """Decode a running total of amounts (a balance projection's debits or credits), which may outgrow u64."""
    if type(text) is not str or not _CANONICAL_TOTAL.fullmatch(text):
        raise LedgerError(ErrorCode.INVALID_AMOUNT, f"not a canonical unsigned decimal string: {text!r}")
    return int(text)


def format_total(value: int) -> str:
    """Encode a running total of amounts: any unsigned integer. Every amount in it fitted u64; their sum need not."""
    if type(value) is not int or value < 0:
        raise LedgerError(ErrorCode.AMOUNT_OVERFLOW, f"not an unsigned total: {value!r}")
    return str(value)


def checked_sum(values: Iterable[int]) -> int:
    total = 0
    for value in values:
        total += value
        if total > U64_MAX:
            raise LedgerError(ErrorCode.AMOUNT_OVERFLOW, "sum exceeds u64")
    return total


def _validate(value: object) -> int:
    try:
        return parse_amount(value)
    except LedgerError as error:
        raise PydanticCustomError("invalid_amount", error.detail) from None


Amount = Annotated[int, BeforeValidator(_validate), PlainSerializer(format_amount, return_type=str)]
"""A payload field holding an amount: validated from its string form, an ``int`` in code."""

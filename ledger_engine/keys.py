"""Canonical keys: ASCII paths, 20-digit integers, at most 512 bytes."""

from __future__ import annotations

import re

from ledger_engine.errors import ErrorCode, LedgerError

MAX_KEY_BYTES = 512
_COMPONENT = re.compile(r"^[A-Za-z0-9._:@+=-]{1,200}$")


def seq20(number: int) -> str:
    """A u64 as 20 zero-padded digits, so byte order equals numeric order."""
    if type(number) is not int or not 0 <= number < 10**20:
        raise LedgerError(ErrorCode.INVALID_KEY, f"not a u64 key integer: {number!r}")
    return f"{number:020d}"


# Components already found valid. Validity is a pure function of the string, so a remembered
# component needs no second regex match; rules build the same few IDs into many keys per command.
_VALID_COMPONENTS: set[str] = set()
_MAX_REMEMBERED = 1 << 16


def component(value: str) -> str:
    if value in _VALID_COMPONENTS:
        return value
    if not _COMPONENT.fullmatch(value):
        raise LedgerError(ErrorCode.INVALID_KEY, f"invalid key component: {value!r}")
    if len(_VALID_COMPONENTS) >= _MAX_REMEMBERED:
        _VALID_COMPONENTS.clear()
    _VALID_COMPONENTS.add(value)
    return value


def key(*components: str) -> str:
    """Join validated components with ``/``."""
    if not _VALID_COMPONENTS.issuperset(components):
        for part in components:
            component(part)
    path = "/".join(components)
    if len(path) > MAX_KEY_BYTES:
        raise LedgerError(ErrorCode.INVALID_KEY, "key longer than 512 bytes")
    return path


IDENTIFIER_PATTERN = _COMPONENT.pattern

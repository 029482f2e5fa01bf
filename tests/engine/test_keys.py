"""Key components: remembering valid ones never lets an invalid one through."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger_engine import keys
from ledger_engine.errors import ErrorCode, LedgerError

REFERENCE = re.compile(r"^[A-Za-z0-9._:@+=-]{1,200}$")
candidates = st.text(st.sampled_from("aZ09._:@+=-/ \n\u00e9"), max_size=8) | st.text(max_size=210)


@given(st.lists(candidates, min_size=1, max_size=4))
def test_key_accepts_exactly_what_the_pattern_accepts_seen_before_or_not(parts):
    for _ in range(2):  # the second pass meets remembered components
        if all(REFERENCE.fullmatch(part) for part in parts) and len("/".join(parts)) <= keys.MAX_KEY_BYTES:
            assert keys.key(*parts) == "/".join(parts)
        else:
            with pytest.raises(LedgerError) as raised:
                keys.key(*parts)
            assert raised.value.code == ErrorCode.INVALID_KEY


def test_an_invalid_component_is_refused_every_time():
    for _ in range(3):
        with pytest.raises(LedgerError):
            keys.component("a/b")
    assert "a/b" not in keys._VALID_COMPONENTS


def test_the_memory_of_valid_components_stays_bounded(monkeypatch):
    monkeypatch.setattr(keys, "_MAX_REMEMBERED", 8)
    for number in range(50):
        keys.component(f"id-{number}")
    assert len(keys._VALID_COMPONENTS) <= 8
    assert keys.key("id-0", "id-49") == "id-0/id-49"

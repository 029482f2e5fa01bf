"""Assertions on what a submission did to the ledger, row by row."""

from __future__ import annotations

from typing import Any

import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.errors import ErrorCode, LedgerError
from tests.support.store import changed_keys, consistency_problems, owner_dump, rejection_footprint


def assert_refused(owner: LedgerOwner, document: Any, code: ErrorCode) -> None:
    """Refused before admission with ``code``: not a byte of the ledger changes."""
    before, head = owner_dump(owner), owner.head()
    with pytest.raises(LedgerError) as raised:
        owner.submit(document)
    assert raised.value.code == code, raised.value.detail
    assert owner.head() == head
    assert owner_dump(owner) == before


def assert_rejected(owner: LedgerOwner, envelope: dict[str, Any], code: str) -> CommandOutcome:
    """Journalled as a rejection with ``code``: only its result, its journal entry and the head change."""
    before = owner_dump(owner)
    outcome = owner.submit(envelope)
    assert (outcome.outcome, outcome.code) == ("rejected", code), outcome.result
    after = owner_dump(owner)
    assert changed_keys(before, after) == rejection_footprint(envelope["command_id"], outcome.sequence)
    assert consistency_problems(after) == []
    return outcome


def assert_accepted(owner: LedgerOwner, envelope: dict[str, Any]) -> CommandOutcome:
    outcome = owner.submit(envelope)
    assert (outcome.outcome, outcome.code) == ("accepted", "OK"), outcome.result
    return outcome

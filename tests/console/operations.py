"""Helpers for the operations tests: a halted console owner, a scrape parsed into samples."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.errors import ErrorCode, LedgerError
from tests.conftest import EnvelopeFactory

DISK_FAULT = "disk said no"


def halt_with_a_disk_fault(ledger: LedgerOwner, monkeypatch) -> None:
    """A synchronous write that fails, as a full disk does: the executor halts admission."""
    def failing_write(ops):
        raise OSError(DISK_FAULT)

    monkeypatch.setattr(ledger.store, "write", failing_write)
    envelopes = EnvelopeFactory()
    envelopes.advance_to(ledger.admission_floor_ms())
    with pytest.raises(LedgerError) as halted:
        ledger.submit(envelopes.account("halt-probe"))
    assert halted.value.code == ErrorCode.LEDGER_HALTED


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape by (name, sorted labels)."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def families(text: str) -> set[str]:
    return {family.name for family in text_string_to_metric_families(text)}

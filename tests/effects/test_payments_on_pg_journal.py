"""The whole effects stack with the signed-payment journal and the quarantine in PostgreSQL.

Real Celery workers on two hosts' worth of processes (two workers sharing
nothing but the database, the broker and the console), every message
delivered many times and one worker's pool killed mid-effect: each approved
payment is paid exactly once and journalled once, and no journal file is
written.
"""

from __future__ import annotations

import gc
import os
import signal

import pytest

from porto_console.effects.pg_journal import PostgresPaymentJournal
from porto_console.effects.pg_quarantine import PostgresQuarantine
from tests.effects import journal_adapters
from tests.effects.stack import Stack, wait_until
from tests.effects.test_faults import approve_payout_run, assert_paid_exactly_once

pytestmark = [pytest.mark.slow, pytest.mark.fault_case]


class PostgresJournalStack(Stack):
    """A stack whose workers keep their journal and quarantine in the signer database at ``signer_journal_url``."""

    def __init__(self, tmp_path, chain_url: str, broker_url: str, signer_journal_url: str) -> None:
        super().__init__(tmp_path, chain_url, broker_url)
        self.signer_journal_url = signer_journal_url
        self.pg_journal = PostgresPaymentJournal(signer_journal_url)

    def worker_env(self, name: str) -> dict[str, str]:
        return {**super().worker_env(name), "PORTO_SIGNER_JOURNAL_URL": self.signer_journal_url}


@pytest.fixture
def stack(tmp_path, chain_server, broker_url, chain, funded, envelopes, postgres_database_url):
    url = journal_adapters.emptied("postgres", tmp_path, postgres_database_url)
    stack = PostgresJournalStack(tmp_path, chain_server.url, broker_url, url)
    stack.approved = approve_payout_run(stack, envelopes)
    gc.collect()  # the closed owner's database handles go with its last reference, and with them the LOCK
    stack.issue_credential("payments-1")
    stack.issue_credential("payments-2")
    stack.start_console()
    yield stack
    stack.stop_all()


def test_two_workers_on_the_postgres_journal_pay_every_payment_once(stack, chain):
    for effect in stack.open_effects("payments-1"):
        for _ in range(10):
            stack.send_effect(effect)
    stack.start_worker("payments-1", concurrency=2)
    stack.start_worker("payments-2", concurrency=2)
    stack.start_beat("payments-1")
    wait_until(lambda: list(stack.pg_journal.records()), "the first signed transfer")
    for child in stack.pool_children("payments-1"):
        os.kill(child, signal.SIGKILL)
    assert_paid_exactly_once(chain, stack)
    records = list(stack.pg_journal.records())
    assert sorted(r.payment_id for r in records) == sorted(p["payment_id"] for p in stack.approved)
    assert len({(r.sender, r.sequence_number) for r in records}) == len(records)
    assert not stack.journal.path.exists()
    assert PostgresQuarantine(stack.signer_journal_url).entries() == []

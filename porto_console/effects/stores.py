"""Which adapter of each signer store this process uses (``journal_port``): the files, or PostgreSQL.

``PORTO_SIGNER_JOURNAL_URL`` set: the signed-payment and signed-commitment
journals and the quarantine are tables in that database, shared by signers
on any host. Unset (``make run``, one host): the journal files and the
quarantine directory.
"""

from __future__ import annotations

from pathlib import Path

from porto_console.effects.commitment_journal import SignedCommitmentJournal
from porto_console.effects.config import EffectsConfig
from porto_console.effects.journal_port import JournalPort, QuarantinePort
from porto_console.effects.payment_journal import PaymentJournal, SignedPaymentJournal
from porto_console.effects.pg_journal import PostgresCommitmentJournal, PostgresPaymentJournal
from porto_console.effects.pg_quarantine import PostgresQuarantine
from porto_console.effects.quarantine import Quarantine


def payment_journal(config: EffectsConfig) -> PaymentJournal:
    if config.signer_journal_url:
        return PostgresPaymentJournal(config.signer_journal_url)
    return SignedPaymentJournal(config.payment_journal)


def commitment_journal(config: EffectsConfig) -> JournalPort:
    if config.signer_journal_url:
        return PostgresCommitmentJournal(config.signer_journal_url)
    return SignedCommitmentJournal(config.commitment_journal)


def quarantine(directory: Path, signer_journal_url: str | None) -> QuarantinePort:
    """The quarantine the workers and the console share: the directory, or the signer database."""
    if signer_journal_url:
        return PostgresQuarantine(signer_journal_url)
    return Quarantine(directory)

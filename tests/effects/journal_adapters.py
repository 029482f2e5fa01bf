"""Both adapters of each signer store (``journal_port``), built from a kind and a location, in any process.

A test names an adapter as ``("file", directory)`` or ``("postgres", url)``
so another process can open the same store again.
"""

from __future__ import annotations

from pathlib import Path

import psycopg

from porto_console.effects import stores
from porto_console.effects.config import EffectsConfig
from porto_console.effects.payment_journal import SignedPaymentRecord
from porto_console.effects.pg_schema import QUARANTINE_TABLE, SIGNED_TABLES
from tests.effects.conftest import terms

KINDS = ("file", "postgres")


def config_for(kind: str, location: str) -> EffectsConfig:
    env = {"PORTO_VAR_DIR": location} if kind == "file" else {"PORTO_SIGNER_JOURNAL_URL": location}
    return EffectsConfig.from_env(env)


def payment_journal(kind: str, location: str):
    return stores.payment_journal(config_for(kind, location))


def commitment_journal(kind: str, location: str):
    return stores.commitment_journal(config_for(kind, location))


def quarantine(kind: str, location: str):
    config = config_for(kind, location)
    return stores.quarantine(config.quarantine_dir, config.signer_journal_url)


def emptied(kind: str, tmp_path: Path, database_url: str) -> str:
    """A location with nothing in it yet: a fresh directory, or the session database with its tables emptied."""
    if kind == "file":
        return str(tmp_path)
    payment_journal(kind, database_url).last_for("none")  # the schema, on the session's first use
    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute(f"TRUNCATE {', '.join((*SIGNED_TABLES, QUARANTINE_TABLE))} RESTART IDENTITY")
    return database_url


def signed_record(signer, payment_id: str, sequence: int, **changes) -> SignedPaymentRecord:
    """A journal record of a real signature by ``signer`` at ``sequence`` (``terms`` takes the changes)."""
    return SignedPaymentRecord.of(payment_id, f"effect-{payment_id}", "worker-1",
                                  signer.sign(terms(signer, sequence, **changes)), 1_000)

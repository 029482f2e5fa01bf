"""The signer's PostgreSQL schema and connection: plain SQL through psycopg, never Django's database layer.

The adapters create the schema themselves on their first connection, every
statement ``IF NOT EXISTS`` under one advisory lock, so any number of
signers starting at once create it once. It can also be created ahead of
time (a role without the right to create tables can then run the signers)::

    PORTO_SIGNER_JOURNAL_URL=postgresql://... python -m porto_console.effects.pg_schema

``--import-payments FILE`` / ``--import-commitments FILE`` copy a file
journal's records in (each transaction once, however often it is run), for
a deployment moving from the file to PostgreSQL.

The tables (``docs/effects.md``, ADR 0029):

- ``porto_signed_payments`` and ``porto_signed_commitments``: one row per
  signed transaction, ``UNIQUE (transaction_hash)``; an exclusion constraint
  (``btree_gist``) that no two rows of one sender at one sequence are live
  at once, a row being live from the chain time its sequence was allocated
  at until its expiry; ``UNIQUE (sender, previous_hash)``, so each sender's
  hash chain cannot fork;
- ``porto_quarantine``: one row per parked effect.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, TypeVar
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

from porto_console.effects.config import EffectsConfig
from porto_console.effects.journal_port import JournalPort
from porto_console.effects.signed_journal import SignedRecord

R = TypeVar("R", bound=SignedRecord)

SIGNED_TABLES = ("porto_signed_payments", "porto_signed_commitments")
QUARANTINE_TABLE = "porto_quarantine"
SCHEMA_LOCK = "porto-signer-schema"
# A signer that stops answering mid-transaction (a partitioned host) would hold its sender's lock; the server
# ends such a session after this long and every other signer of that payer moves on.
IDLE_IN_TRANSACTION_TIMEOUT = "60s"

SIGNED_TABLE = """
CREATE TABLE IF NOT EXISTS {table} (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subject text NOT NULL,
    sender text NOT NULL,
    sequence_number bigint NOT NULL CHECK (sequence_number >= 0),
    expiration_secs bigint NOT NULL,
    live_from_secs bigint,
    transaction_hash text NOT NULL,
    record jsonb NOT NULL,
    previous_hash text NOT NULL,
    record_hash text NOT NULL,
    CONSTRAINT {transaction_once} UNIQUE (transaction_hash),
    CONSTRAINT {chain_linear} UNIQUE (sender, previous_hash),
    CONSTRAINT {one_live} EXCLUDE USING gist (
        sender WITH =,
        sequence_number WITH =,
        int8range(live_from_secs, GREATEST(live_from_secs, expiration_secs)) WITH &&
    ) WHERE (live_from_secs IS NOT NULL)
)"""
SIGNED_INDEXES = (
    "CREATE INDEX IF NOT EXISTS {subject_index} ON {table} (subject, id)",
    "CREATE INDEX IF NOT EXISTS {expiry_index} ON {table} (sender, expiration_secs)",
)
QUARANTINE = """
CREATE TABLE IF NOT EXISTS {table} (
    effect_id text PRIMARY KEY,
    entry jsonb NOT NULL,
    quarantined_at_ms bigint NOT NULL
)"""


def constraint(table: str, name: str) -> str:
    return f"{table}_{name}"


def _signed_table_statements(table: str) -> list[sql.Composed]:
    names = {name: sql.Identifier(constraint(table, name))
             for name in ("transaction_once", "chain_linear", "one_live", "subject_index", "expiry_index")}
    return [sql.SQL(statement).format(table=sql.Identifier(table), **names)
            for statement in (SIGNED_TABLE, *SIGNED_INDEXES)]


def ensure_schema(connection: psycopg.Connection) -> None:
    """Create every table the signer uses, if missing; safe to run from many processes at once."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (SCHEMA_LOCK,))
        connection.execute("CREATE EXTENSION IF NOT EXISTS btree_gist")
        for table in SIGNED_TABLES:
            for statement in _signed_table_statements(table):
                connection.execute(statement)
        connection.execute(sql.SQL(QUARANTINE).format(table=sql.Identifier(QUARANTINE_TABLE)))


class Database:
    """This process's connections to the signer database, one per thread, opened on first use and after a break.

    Every call runs in its own transaction. A connection inherited across
    ``fork`` is never used: the child opens its own.
    """

    _schema_ready: set[str] = set()

    def __init__(self, url: str) -> None:
        self.url = url
        self._local = threading.local()

    @property
    def name(self) -> str:
        """Host, port and database, without any credential."""
        parts = urlsplit(self.url)
        return f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path}"

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection]:
        connection = self._open()
        try:
            with connection.transaction():
                yield connection
        except psycopg.OperationalError:
            self.close()
            raise

    def close(self) -> None:
        connection = self._current()
        if connection is not None:
            connection.close()
        self._local.connection = None

    def _current(self) -> psycopg.Connection | None:
        if getattr(self._local, "pid", None) != os.getpid():
            return None
        return getattr(self._local, "connection", None)

    def _open(self) -> psycopg.Connection:
        current = self._current()
        if current is not None and not current.closed and not current.broken:
            return current
        connection = psycopg.connect(self.url, autocommit=True, connect_timeout=10,
                                     options=f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_TIMEOUT}")
        self._local.connection, self._local.pid = connection, os.getpid()
        if self.url not in Database._schema_ready:
            ensure_schema(connection)
            Database._schema_ready.add(self.url)
        return connection


def import_file_journals(url: str, payments: Path | None, commitments: Path | None) -> dict[str, int]:
    """Copy file journals' records into the signer database, each once; how many of each were new."""
    from porto_console.effects.commitment_journal import SignedCommitmentJournal
    from porto_console.effects.payment_journal import SignedPaymentJournal
    from porto_console.effects.pg_journal import PostgresCommitmentJournal, PostgresPaymentJournal

    imported = {}
    if payments is not None:
        imported["payments"] = _copy_new(PostgresPaymentJournal(url), SignedPaymentJournal(payments).records())
    if commitments is not None:
        imported["commitments"] = _copy_new(PostgresCommitmentJournal(url),
                                            SignedCommitmentJournal(commitments).records())
    return imported


def _copy_new(target: JournalPort[R], records: Iterable[R]) -> int:
    """Append to ``target`` each record it does not hold yet; how many."""
    fresh = [record for record in records if target.by_hash(record.transaction_hash) is None]
    for record in fresh:
        target.append(record)
    return len(fresh)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m porto_console.effects.pg_schema",
                                     description="Create the signer schema; optionally import file journals.")
    parser.add_argument("--import-payments", type=Path, help="a signed-payment journal file to copy in")
    parser.add_argument("--import-commitments", type=Path, help="a signed-commitment journal file to copy in")
    arguments = parser.parse_args(argv)
    url = EffectsConfig.from_env().signer_journal_url
    if not url:
        print("set PORTO_SIGNER_JOURNAL_URL (or PORTO_SIGNER_JOURNAL_URL_FILE) to the signer database's URL",
              file=sys.stderr)
        return 2
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as connection:
        ensure_schema(connection)
    print(f"signer schema ready: {', '.join((*SIGNED_TABLES, QUARANTINE_TABLE))} at {Database(url).name}")
    for name, count in import_file_journals(url, arguments.import_payments, arguments.import_commitments).items():
        print(f"imported {count} signed {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

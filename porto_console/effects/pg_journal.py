"""The signed-transaction journal in PostgreSQL: signers on any number of hosts share one payer safely.

The PostgreSQL adapter of ``journal_port.JournalPort`` (the file adapter is
``signed_journal``), selected by ``PORTO_SIGNER_JOURNAL_URL``. A row is
committed before ``sign_batch_for`` returns it, so before anything can
broadcast it. ``sign_batch_for`` runs in one transaction holding
transaction-scoped advisory locks, always in this order: each subject's, in
name order (so concurrent deliveries of one payment agree on one
transaction), then the sender's (so allocating sequences and inserting their
rows happen as one step for that sender on every host). The constraints hold the same rules
whatever a client does (ADR 0029): a transaction hash once; never two rows
of one sender at one sequence that are live at the same time, a row being
live from the chain time its sequence was allocated at until its expiry;
each sender's hash chain linear. A signer killed mid-transaction leaves
nothing: the server rolls it back and releases its locks.

Records are hash-chained per sender, with the same record hashes as the file
journal. ``records`` checks every link; the other reads check each row's own
hash and columns.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Callable, ClassVar, Iterator, Sequence, TypeVar

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from ledger_engine.canonical import domain_hash
from porto_console.effects.commitment_journal import COMMITMENT_DOMAIN, SignedCommitmentRecord
from porto_console.effects.payment_journal import PAYMENT_DOMAIN, PaymentJournal, SignedPaymentRecord
from porto_console.effects.pg_schema import Database, constraint
from porto_console.effects.signed_journal import (
    GENESIS, SEQUENCE_LIVE, TRANSACTION_JOURNALLED, Allocation, JournalConflict, JournalCorrupt, SignedRecord,
    SignRequest, SignsOneAtATime, sign_or_reuse,
)

R = TypeVar("R", bound=SignedRecord)

COLUMNS = "id, record, previous_hash, record_hash, subject, sender, sequence_number, expiration_secs, transaction_hash"


class PostgresSignedJournal(SignsOneAtATime[R]):
    """One table of ``record_type`` rows in the signer database at ``url``."""

    domain: ClassVar[str]
    record_type: ClassVar[type]
    table: ClassVar[str]

    def __init__(self, url: str) -> None:
        self.database = Database(url)

    @property
    def location(self) -> str:
        return f"PostgreSQL table {self.table} at {self.database.name}"

    def sign_batch_for(self, requests: Sequence[SignRequest[R]], *, sender: str, chain_sequence: int,
                       chain_time_secs: int, reuse: Callable[[R], bool],
                       window: int) -> list[tuple[R, bool] | None]:
        """As the file journal decides (``signed_journal.sign_or_reuse``), in one committed transaction that
        holds the subjects' locks (in name order) and then the sender's."""
        with self.database.transaction() as connection:
            for subject in sorted({request.subject for request in requests}):
                self._lock(connection, "subject", subject)
            self._lock(connection, "sender", sender)
            held = self._held_sequences(connection, sender, chain_sequence, chain_time_secs)
            return sign_or_reuse(
                requests, lambda subject: self._one(connection, "WHERE subject = %s ORDER BY id DESC LIMIT 1",
                                                    (subject,)),
                reuse, Allocation(chain_sequence, held.__contains__, window),
                lambda record: self._insert(connection, record, live_from_secs=chain_time_secs))

    def last_for(self, subject: str) -> R | None:
        with self.database.transaction() as connection:
            return self._one(connection, "WHERE subject = %s ORDER BY id DESC LIMIT 1", (subject,))

    def append(self, record: R) -> None:
        """Journal a record signed elsewhere (an import); with no allocation time it is checked by hash only."""
        with self.database.transaction() as connection:
            self._lock(connection, "sender", record.sender)
            self._insert(connection, record, live_from_secs=None)

    def records(self) -> Iterator[R]:
        """Every record in the order it was journalled, each sender's chain checked link by link."""
        with self.database.transaction() as connection:
            rows = connection.execute(self._select("ORDER BY id")).fetchall()
        last_hash: dict[str, str] = {}
        for row in rows:
            record = self._verified(row)
            if row[2] != last_hash.get(record.sender, GENESIS):
                raise JournalCorrupt(f"{self.table} row {row[0]}: the hash chain is broken")
            last_hash[record.sender] = row[3]
            yield record

    def for_subject(self, subject: str) -> list[R]:
        return self._many("WHERE subject = %s ORDER BY id", (subject,))

    def at_sequence(self, sender: str, sequence: int) -> list[R]:
        return self._many("WHERE sender = %s AND sequence_number = %s ORDER BY id", (sender, sequence))

    def expiring_after(self, sender: str, expiration_secs: int) -> list[R]:
        """The sender's records that expire after ``expiration_secs``: the ones that may still need settling."""
        return self._many("WHERE sender = %s AND expiration_secs > %s ORDER BY id", (sender, expiration_secs))

    def live_from(self, sender: str, sequence: int, chain_time_secs: int) -> list[R]:
        """The sender's records at ``sequence`` and above that can still land by chain time, in journal order."""
        return self._many("WHERE sender = %s AND sequence_number >= %s AND expiration_secs > %s ORDER BY id",
                          (sender, sequence, chain_time_secs))

    def by_hash(self, transaction_hash: str) -> R | None:
        with self.database.transaction() as connection:
            return self._one(connection, "WHERE transaction_hash = %s", (transaction_hash,))

    def _lock(self, connection: psycopg.Connection, kind: str, name: str) -> None:
        connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{self.table}:{kind}:{name}",))

    def _held_sequences(self, connection: psycopg.Connection, sender: str, chain_sequence: int,
                        chain_time_secs: int) -> set[int]:
        """The sender's sequences from ``chain_sequence`` up at which a journalled transaction can still land."""
        rows = connection.execute(
            sql.SQL("SELECT DISTINCT sequence_number FROM {} WHERE sender = %s AND sequence_number >= %s "
                    "AND expiration_secs > %s").format(sql.Identifier(self.table)),
            (sender, chain_sequence, chain_time_secs)).fetchall()
        return {sequence for (sequence,) in rows}

    def _insert(self, connection: psycopg.Connection, record: R, *, live_from_secs: int | None) -> None:
        previous = connection.execute(
            sql.SQL("SELECT record_hash FROM {} WHERE sender = %s ORDER BY id DESC LIMIT 1").format(
                sql.Identifier(self.table)), (record.sender,)).fetchone()
        body = asdict(record)
        previous_hash = previous[0] if previous else GENESIS
        record_hash = domain_hash(self.domain, {**body, "previous_hash": previous_hash})
        try:
            with connection.transaction():
                connection.execute(
                    sql.SQL("INSERT INTO {} (subject, sender, sequence_number, expiration_secs, live_from_secs, "
                            "transaction_hash, record, previous_hash, record_hash) "
                            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)").format(sql.Identifier(self.table)),
                    (record.subject, record.sender, record.sequence_number, record.expiration_secs, live_from_secs,
                     record.transaction_hash, Jsonb(body), previous_hash, record_hash))
        except psycopg.errors.IntegrityError as error:
            raise self._conflict(record, error) from None

    def _conflict(self, record: R, error: psycopg.errors.IntegrityError) -> Exception:
        name = error.diag.constraint_name
        if name == constraint(self.table, "transaction_once"):
            return JournalConflict(TRANSACTION_JOURNALLED, f"{record.transaction_hash} is in {self.table} already")
        if name == constraint(self.table, "one_live"):
            return JournalConflict(SEQUENCE_LIVE, f"{record.sender} sequence {record.sequence_number} is held by a "
                                                  "transaction that can still land")
        return error

    def _select(self, where: str) -> sql.Composed:
        return sql.SQL(f"SELECT {COLUMNS} FROM {{}} {where}").format(sql.Identifier(self.table))

    def _one(self, connection: psycopg.Connection, where: str, parameters: tuple) -> R | None:
        row = connection.execute(self._select(where), parameters).fetchone()
        return None if row is None else self._verified(row)

    def _many(self, where: str, parameters: tuple) -> list[R]:
        with self.database.transaction() as connection:
            return [self._verified(row) for row in connection.execute(self._select(where), parameters)]

    def _verified(self, row: tuple[Any, ...]) -> R:
        """The row's record, if its hash and its searchable columns agree with what was signed."""
        row_id, body, previous_hash, record_hash, *columns = row
        if domain_hash(self.domain, {**body, "previous_hash": previous_hash}) != record_hash:
            raise JournalCorrupt(f"{self.table} row {row_id}: the record does not match its hash")
        record = self.record_type(**body)
        stated = (record.subject, record.sender, record.sequence_number, record.expiration_secs,
                  record.transaction_hash)
        if tuple(columns) != stated:
            raise JournalCorrupt(f"{self.table} row {row_id}: its columns disagree with its record")
        return record


class PostgresPaymentJournal(PostgresSignedJournal[SignedPaymentRecord], PaymentJournal):
    domain = PAYMENT_DOMAIN
    record_type = SignedPaymentRecord
    table = "porto_signed_payments"


class PostgresCommitmentJournal(PostgresSignedJournal[SignedCommitmentRecord]):
    domain = COMMITMENT_DOMAIN
    record_type = SignedCommitmentRecord
    table = "porto_signed_commitments"

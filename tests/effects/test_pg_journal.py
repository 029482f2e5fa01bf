"""What only the PostgreSQL adapters do: constraints that hold without the allocator, tamper evidence, reconnects."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest

from porto_console.effects.journal_port import JournalCorrupt
from porto_console.effects.payment_journal import SignedPaymentRecord
from porto_console.effects.pg_journal import PostgresPaymentJournal
from tests.effects import journal_adapters
from tests.effects.journal_adapters import signed_record
from tests.effects.conftest import terms

TABLE = PostgresPaymentJournal.table
CHAIN_TIME = 1_000_000


@pytest.fixture
def database(tmp_path, postgres_database_url) -> str:
    return journal_adapters.emptied("postgres", tmp_path, postgres_database_url)


@pytest.fixture
def journal(database) -> PostgresPaymentJournal:
    return PostgresPaymentJournal(database)


def _signed(journal, signer, payment_id: str, *, chain_time: int = CHAIN_TIME, reuse=lambda last: True):
    record, _ = journal.sign_next(
        payment_id=payment_id, effect_id=f"effect-{payment_id}", worker_id="worker-1", sender=signer.address,
        chain_sequence=0, chain_time_secs=chain_time, reuse=reuse,
        sign=lambda sequence: signer.sign(terms(signer, sequence, expiration_secs=chain_time + 120)), now_ms=1_000)
    return record


def _copy_at_same_sequence(database: str, record: SignedPaymentRecord, *, live_from: int) -> None:
    """A second row at the record's sender and sequence, written by hand, bypassing the allocator and its locks."""
    with psycopg.connect(database, autocommit=True) as connection:
        connection.execute(
            f"INSERT INTO {TABLE} (subject, sender, sequence_number, expiration_secs, live_from_secs, "
            "transaction_hash, record, previous_hash, record_hash) "
            f"SELECT 'other', sender, sequence_number, %s, %s, 'tx-by-hand', record, 'by-hand', 'by-hand' "
            f"FROM {TABLE} WHERE transaction_hash = %s", (live_from + 120, live_from, record.transaction_hash))


def test_the_database_refuses_a_second_live_transaction_at_one_sequence(database, journal, signer):
    record = _signed(journal, signer, "p-1")
    with pytest.raises(psycopg.errors.ExclusionViolation):
        _copy_at_same_sequence(database, record, live_from=record.expiration_secs - 1)
    assert len(list(journal.records())) == 1


def test_the_database_lets_a_sequence_be_used_again_once_its_transaction_expired(database, journal, signer):
    record = _signed(journal, signer, "p-1")
    _copy_at_same_sequence(database, record, live_from=record.expiration_secs)
    with psycopg.connect(database) as connection:
        rows = connection.execute(f"SELECT sequence_number FROM {TABLE} ORDER BY id").fetchall()
    assert rows == [(0,), (0,)]


def test_an_edited_row_is_detected(database, journal, signer):
    record = _signed(journal, signer, "p-1")
    with psycopg.connect(database, autocommit=True) as connection:
        connection.execute(f"UPDATE {TABLE} SET record = jsonb_set(record, '{{amount}}', '\"250001\"')")
    with pytest.raises(JournalCorrupt, match="does not match its hash"):
        journal.by_hash(record.transaction_hash)


def test_a_column_changed_behind_the_records_back_is_detected(database, journal, signer):
    record = _signed(journal, signer, "p-1")
    with psycopg.connect(database, autocommit=True) as connection:
        connection.execute(f"UPDATE {TABLE} SET sequence_number = 5")
    with pytest.raises(JournalCorrupt, match="columns disagree"):
        journal.last_for(record.payment_id)


def test_a_removed_row_breaks_the_senders_chain(database, journal, signer):
    for number in range(3):
        _signed(journal, signer, f"p-{number}")
    with psycopg.connect(database, autocommit=True) as connection:
        connection.execute(f"DELETE FROM {TABLE} WHERE subject = 'p-1'")
    with pytest.raises(JournalCorrupt, match="hash chain is broken"):
        list(journal.records())


def test_a_lost_connection_fails_one_call_and_the_next_one_reconnects(database, journal, signer):
    record = _signed(journal, signer, "p-1")
    with psycopg.connect(database, autocommit=True) as connection:
        connection.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    with pytest.raises(psycopg.OperationalError):
        journal.last_for("p-1")
    assert journal.last_for("p-1") == record


def test_a_signer_gone_quiet_mid_transaction_is_ended_by_the_server(journal):
    with journal.database.transaction() as connection:
        assert connection.execute("SHOW idle_in_transaction_session_timeout").fetchone() == ("1min",)


def _schema_command(env: dict[str, str], *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "porto_console.effects.pg_schema", *arguments], capture_output=True,
                          text=True, timeout=60, env={**os.environ, **env})


def test_the_schema_command_creates_the_tables_idempotently(postgres_server_url, tmp_path):
    from tests.support.postgres import temporary_database
    with temporary_database(postgres_server_url, prefix="porto_schema") as url:
        first, second = _schema_command({"PORTO_SIGNER_JOURNAL_URL": url}), _schema_command(
            {"PORTO_SIGNER_JOURNAL_URL": url})
        assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
        assert "porto_signed_payments" in second.stdout
        with psycopg.connect(url) as connection:
            tables = {name for (name,) in connection.execute(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'porto_%'")}
        assert tables == {"porto_signed_payments", "porto_signed_commitments", "porto_quarantine"}


def test_the_schema_command_without_a_url_changes_nothing_and_says_why():
    done = _schema_command({"PORTO_SIGNER_JOURNAL_URL": ""})
    assert done.returncode == 2 and "PORTO_SIGNER_JOURNAL_URL" in done.stderr


def test_the_schema_command_imports_a_file_journal_once(database, journal, signer, tmp_path):
    from porto_console.effects.payment_journal import SignedPaymentJournal
    file_journal = SignedPaymentJournal(tmp_path / "signed-payments.jsonl")
    for number in range(3):
        file_journal.append(signed_record(signer, f"p-{number}", number))
    env = {"PORTO_SIGNER_JOURNAL_URL": database}
    first = _schema_command(env, "--import-payments", str(file_journal.path))
    second = _schema_command(env, "--import-payments", str(file_journal.path))
    assert "imported 3 signed payments" in first.stdout, first.stderr
    assert "imported 0 signed payments" in second.stdout, second.stderr
    assert list(journal.records()) == list(file_journal.records())

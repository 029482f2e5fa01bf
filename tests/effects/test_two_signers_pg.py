"""Two signer processes on one payer through the PostgreSQL journal, killed (SIGKILL) at random while signing.

Neither knows of the other; they share only the database. However often
one dies mid-transaction, no sender sequence is held by two transactions
that could both land, no transaction hash is journalled twice, and every
payment ends up signed exactly once.
"""

from __future__ import annotations

import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from porto_console.effects.pg_journal import PostgresPaymentJournal
from tests.effects import journal_adapters
from tests.effects.pg_signer_process import payment_ids

ROOT = Path(__file__).resolve().parents[2]
PAYMENTS = 40
KILLS = 12
LEAST_KILLS = 6  # the signers may finish every payment before all KILLS land
LONG_TTL_SECS = 3600
SHORT_TTL_SECS = 1
WAIT_SECS = 120
SIGNING_WAIT_SECS = 3.0  # how long a kill waits for its victim to start signing before it lands anyway
TABLE = PostgresPaymentJournal.table


class SignerProcesses:
    """Two signer processes kept running: each one killed is started again at once, with a new order."""

    def __init__(self, url: str, ttl_secs: int, seed: int) -> None:
        self.url, self.ttl_secs = url, ttl_secs
        self.random = random.Random(seed)
        self.running: list[subprocess.Popen] = []
        self.kills = 0
        self.kills_mid_signing = 0
        self.stderr: list[str] = []

    def start(self) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.effects.pg_signer_process", self.url, str(PAYMENTS), str(self.ttl_secs),
             str(self.random.randrange(1 << 30))],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._wait_ready(process)
        return process

    def kill_at_random(self, kills: int) -> None:
        """Up to ``kills`` kills while work is left: every other one waits for its victim to say it is signing, the
        rest land at a random moment."""
        self.running = [self.start(), self.start()]
        while self.kills < kills:
            victim = self.random.randrange(len(self.running))
            process = self.running[victim]
            said = self._signing_said(process) if self.kills % 2 == 0 else ""
            if not said:
                time.sleep(self.random.uniform(0.0, 0.15))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                self.kills += 1
            elif all(signer.poll() is not None for signer in self.running):
                return  # every payment is signed: nothing is left to interrupt
            self.kills_mid_signing += f"{said}\n{self._reap(process)}".strip().endswith("signing")
            self.running[victim] = self.start()

    def finish(self) -> list[int]:
        """Let the running signers complete their pass; their exit codes."""
        codes = [process.wait(timeout=WAIT_SECS) for process in self.running]
        for process in self.running:
            self._reap(process)
        return codes

    def stop(self) -> None:
        for process in self.running:
            if process.poll() is None:
                process.kill()
            process.wait()

    def _reap(self, process: subprocess.Popen) -> str:
        """Collect a finished signer; the last thing it said."""
        process.wait(timeout=WAIT_SECS)
        said = process.stdout.read().strip()
        self.stderr.append(process.stderr.read())
        process.stdout.close()
        process.stderr.close()
        return said

    @staticmethod
    def _signing_said(process: subprocess.Popen) -> str:
        """"signing" once the signer says it is about to sign; "" if it says nothing more for a while."""
        deadline = time.monotonic() + SIGNING_WAIT_SECS
        while (left := deadline - time.monotonic()) > 0 and select.select([process.stdout], [], [], left)[0]:
            line = process.stdout.readline()
            if not line:
                return ""
            if line.strip() == "signing":
                return "signing"
        return ""

    @staticmethod
    def _wait_ready(process: subprocess.Popen) -> None:
        ready, _, _ = select.select([process.stdout], [], [], WAIT_SECS)
        line = process.stdout.readline() if ready else ""
        if line.strip() != "ready":
            process.kill()
            raise AssertionError(f"a signer did not start: {line!r} {process.stderr.read()}")


@pytest.fixture
def database(tmp_path, postgres_database_url) -> str:
    return journal_adapters.emptied("postgres", tmp_path, postgres_database_url)


def _rows(url: str) -> list[tuple]:
    with psycopg.connect(url) as connection:
        return connection.execute(
            f"SELECT subject, sender, sequence_number, live_from_secs, expiration_secs, transaction_hash "
            f"FROM {TABLE} ORDER BY id").fetchall()


def _overlapping_live_pairs(rows: list[tuple]) -> list[tuple]:
    """Pairs of rows at one sender and sequence whose windows [allocated at, expiry) overlap: both could land."""
    by_sequence: dict[tuple, list[tuple]] = {}
    for row in rows:
        by_sequence.setdefault((row[1], row[2]), []).append(row)
    return [(first, second) for held in by_sequence.values() for index, first in enumerate(held)
            for second in held[index + 1:] if max(first[3], second[3]) < min(first[4], second[4])]


def _run(url: str, ttl_secs: int, seed: int) -> SignerProcesses:
    signers = SignerProcesses(url, ttl_secs, seed)
    try:
        signers.kill_at_random(KILLS)
        assert signers.finish() == [0, 0], signers.stderr
    finally:
        signers.stop()
    return signers


@pytest.mark.slow
def test_two_killed_signers_sign_every_payment_once_at_distinct_sequences(database):
    signers = _run(database, LONG_TTL_SECS, 1301)
    rows = _rows(database)
    journal = PostgresPaymentJournal(database)
    assert signers.kills >= LEAST_KILLS and signers.kills_mid_signing >= 1, (signers.kills, signers.kills_mid_signing)
    assert [len(journal.for_payment(payment_id)) for payment_id in payment_ids(PAYMENTS)] == [1] * PAYMENTS
    assert len({row[5] for row in rows}) == len(rows) == PAYMENTS
    assert sorted(row[2] for row in rows) == list(range(PAYMENTS))  # a killed signer's sequence is not lost
    assert _overlapping_live_pairs(rows) == []
    assert len(list(journal.records())) == PAYMENTS  # each sender's chain links up
    assert not [text for text in signers.stderr if text.strip()]


@pytest.mark.slow
def test_two_killed_signers_reuse_expired_sequences_and_never_two_live_ones(database):
    first = _run(database, SHORT_TTL_SECS, 1303)
    time.sleep(SHORT_TTL_SECS + 1)  # every transaction journalled so far has expired by now
    second = _run(database, SHORT_TTL_SECS, 1304)
    rows = _rows(database)
    reused = [row for row in rows if sum(other[1:3] == row[1:3] for other in rows) > 1]
    assert reused, "no expired sequence was used again"
    assert _overlapping_live_pairs(rows) == []
    assert len({row[5] for row in rows}) == len(rows)
    assert {row[0] for row in rows} == set(payment_ids(PAYMENTS))
    assert not [text for text in first.stderr + second.stderr if text.strip()]

"""SIGKILL a submitting owner at random points: nothing acknowledged is lost, nothing is half-applied.

A client submits the stream to ``porto-ledger submit`` and, after each kill,
submits again everything it holds no answer for (some of it committed all the
same: a lost response). After every kill the ledger is reopened and checked;
when a run gets to the end the whole stream is submitted once more and the
head must equal an uninterrupted run's. Epochs on fresh ledgers repeat until
there have been enough kill points.
"""

from __future__ import annotations

import os
import random
import secrets
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from ledger_engine.domain.schema.staff import account_key
from ledger_engine.keys import seq20
from ledger_engine.storage.rocks import RocksStore
from tests.support import cli, seed000
from tests.support.store import Dump, consistency_problems, dump

pytestmark = [pytest.mark.durable]

KILL_POINTS = 50
EXPORT_EVERY = 10  # kills between full export + verify-export checks
STREAM_LINES = 4_000  # a prefix of the demo scenario keeps the test's cost bounded as the scenario grows
STARTUP_KILL_SHARE = 0.1  # rounds killed by time alone, often before the first answer
RETRY_SHARE = 0.05  # how often the client sends an earlier envelope again
Acknowledged = dict[str, tuple[int, str]]


def with_retries(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    """The stream as a client that retries would send it: now and then an earlier line again."""
    stream = []
    for number, line in enumerate(lines):
        stream.append(line)
        if number and rng.random() < RETRY_SHARE:
            stream.append(lines[rng.randrange(number)])
    return stream


def kill_somewhere(rng: random.Random, data: Path, stream: Path, span: int) -> cli.InterruptedRun:
    """Kill while starting up, or a little after some answer within the next ``span`` lines."""
    if rng.random() < STARTUP_KILL_SHARE:
        return cli.kill_during("submit", stream, data=data, after_lines=0, delay_s=rng.uniform(0, 0.4))
    return cli.kill_during("submit", stream, data=data, after_lines=rng.randrange(span),
                           delay_s=rng.uniform(0, 0.005))


def remember(acknowledged: Acknowledged, lines: list[dict[str, Any]]) -> None:
    """Every answered command; an answer given again must be the same one."""
    for line in lines:
        if "sequence" in line:
            answer = (line["sequence"], line["entry_hash"])
            assert acknowledged.setdefault(line["command_id"], answer) == answer, line


def reopened_rows(data: Path) -> Dump:
    """Every row of the killed ledger, opened as recovery would find it; nothing may be half-applied."""
    with RocksStore(data, read_only=True) as store:
        rows = dump(store)
    assert consistency_problems(rows) == []
    return rows


def assert_acknowledged_present(rows: Dump, acknowledged: Acknowledged) -> None:
    for command_id, (sequence, entry_hash) in acknowledged.items():
        assert command_id.encode() in rows["command_result"], f"acknowledged command {command_id} is missing"
        assert orjson.loads(rows["journal"][seq20(sequence).encode()])["entry_hash"] == entry_hash, sequence


class JournalWitness:
    """Entry hashes seen so far: they never change, and each new entry extends the chain per docs/spec/engine-and-journal.md §7."""

    def __init__(self) -> None:
        self.hashes: list[str] = []

    def check(self, rows: Dump) -> None:
        entries = [orjson.loads(value) for _, value in sorted(rows["journal"].items())]
        assert [entry["entry_hash"] for entry in entries[:len(self.hashes)]] == self.hashes
        for entry in entries[len(self.hashes):]:
            previous = self.hashes[-1] if self.hashes else seed000.GENESIS_PREVIOUS_HASH
            assert entry["previous_entry_hash"] == previous, entry["sequence"]
            assert entry["entry_hash"] == seed000.entry_hash(entry), entry["sequence"]
            self.hashes.append(entry["entry_hash"])


def exporter_provisioned(rows: Dump) -> bool:
    """An export is journalled as its actor's access, so it needs the auditor the stream registers early on;
    a kill before that line leaves a ledger nobody may export yet (the epoch's last export still runs)."""
    return account_key(cli.EXPORTER).encode() in rows["state"]


def verify_through_export(data: Path, scratch: Path) -> None:
    """Reopen read-write (``export`` recovers the database) and verify the exported chain."""
    cli.export(data, scratch / "export")
    cli.succeeded(cli.porto_ledger("verify-export", scratch / "export"))
    shutil.rmtree(scratch / "export")


def crash_epoch(rng: random.Random, lines: list[bytes], stream: Path, workdir: Path, kills_before: int) -> int:
    """Kill and resubmit until a run gets through (or enough kills), checking the ledger after each kill.

    Ends by submitting the whole stream; returns the kills.
    """
    data = workdir / "ledger"
    cli.init_demo(data)
    acknowledged: Acknowledged = {}
    witness = JournalWitness()
    kills = answered = 0
    span = max(8, 2 * len(lines) // KILL_POINTS)
    while answered < len(lines) and kills_before + kills < KILL_POINTS:
        unanswered = cli.write_stream(workdir / "unanswered.jsonl", lines[answered:])
        run = kill_somewhere(rng, data, unanswered, span)
        assert run.killed or run.status == 0, f"exit {run.status}: {run.stderr[-2000:]}"
        kills += run.killed
        answered += len(run.lines)
        remember(acknowledged, run.lines)
        rows = reopened_rows(data)
        assert_acknowledged_present(rows, acknowledged)
        witness.check(rows)
        if run.killed and (kills_before + kills) % EXPORT_EVERY == 0 and exporter_provisioned(rows):
            verify_through_export(data, workdir)
    remember(acknowledged, cli.submit(data, stream))
    rows = reopened_rows(data)
    assert_acknowledged_present(rows, acknowledged)
    assert exporter_provisioned(rows)
    verify_through_export(data, workdir)
    return kills


@pytest.mark.slow_kill
def test_sigkill_at_random_points_loses_nothing_acknowledged(tmp_path):
    seed = int(os.environ.get("PORTO_CRASH_SEED") or secrets.randbits(32))
    print(f"crash test seed: {seed} (rerun with PORTO_CRASH_SEED={seed})")
    rng = random.Random(seed)
    lines = with_retries(rng, cli.demo_lines(seed % 1000, listeners=30, days=3)[:STREAM_LINES])
    stream = cli.write_stream(tmp_path / "stream.jsonl", lines)
    cli.init_demo(tmp_path / "uninterrupted")
    cli.submit(tmp_path / "uninterrupted", stream)
    uninterrupted_head = cli.head(tmp_path / "uninterrupted")

    kills = epochs = 0
    while kills < KILL_POINTS:
        workdir = tmp_path / f"epoch-{epochs}"
        workdir.mkdir()
        kills += crash_epoch(rng, lines, stream, workdir, kills)
        assert cli.head(workdir / "ledger") == uninterrupted_head, f"epoch {epochs}"
        epochs += 1
    print(f"{kills} kill points over {epochs} epochs of {len(lines)} lines")

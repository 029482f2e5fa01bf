"""The SIMULATED chain's committed log: nothing is answered before it is on disk, and answers given together share
their fsyncs."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from porto_console.effects import chain_state
from porto_console.effects.chain_state import AppendLog
from porto_console.effects.simulated_chain import SimulatedChain
from tests.effects.conftest import CHAIN_ID, USDC, terms

REAL_FSYNC = os.fsync


class CountedSyncs:
    """``os.fsync`` for the log, counted, recording how much of the file each one covered; the first one waits for
    ``go_on``, so other callers queue behind it."""

    def __init__(self, path, go_on: threading.Event | None = None) -> None:
        self.path, self.go_on, self.covered = path, go_on, []
        self.started = threading.Event()

    def __call__(self, descriptor: int) -> None:
        size = os.fstat(descriptor).st_size
        self.started.set()
        if self.go_on is not None and not self.covered:
            assert self.go_on.wait(10)
        REAL_FSYNC(descriptor)
        self.covered.append(size)


def test_callers_waiting_on_a_sync_share_the_next_one(tmp_path, monkeypatch):
    path = tmp_path / "committed.log"
    appended = AppendLog(path)
    syncs = CountedSyncs(path, go_on=threading.Event())
    monkeypatch.setattr(chain_state.os, "fsync", syncs)
    appended.append(b"first\n")
    with ThreadPoolExecutor(5) as pool:
        leading = pool.submit(appended.sync_through, appended.written)
        assert syncs.started.wait(10)  # the first fsync runs and holds on
        waiting = []
        for number in range(4):
            appended.append(f"line {number}\n".encode())
            waiting.append(pool.submit(appended.sync_through, appended.written))
        syncs.go_on.set()
        for call in [leading, *waiting]:
            call.result(10)
    assert syncs.covered == [len(b"first\n"), path.stat().st_size]  # four callers, one more fsync


def test_a_submission_and_every_read_answer_only_once_their_commits_are_on_disk(tmp_path, monkeypatch, funded):
    chain = SimulatedChain(chain_id=CHAIN_ID, state_path=tmp_path / "chain.json")
    log_path = chain_state.log_path(tmp_path / "chain.json")
    syncs = CountedSyncs(log_path)
    monkeypatch.setattr(chain_state.os, "fsync", syncs)
    chain.fund(USDC, funded.address, 1_000_000)
    assert syncs.covered[-1] == log_path.stat().st_size
    later = funded.sign(terms(funded, 1))
    chain.submit(later.signed_bytes)  # waits in the mempool for sequence 0: nothing committed, nothing to sync
    synced = len(syncs.covered)
    assert chain.lookup(later.transaction_hash)["type"] == "pending_transaction" and len(syncs.covered) == synced
    chain.submit(funded.sign(terms(funded, 0)).signed_bytes)  # both commit, in sequence order
    assert syncs.covered[-1] == log_path.stat().st_size and len(syncs.covered) == synced + 1
    assert chain.lookup(later.transaction_hash)["type"] == "user_transaction"
    chain.close()
    again = SimulatedChain(chain_id=CHAIN_ID, state_path=tmp_path / "chain.json")
    assert again.sequence_number(funded.address) == 2
    again.close()

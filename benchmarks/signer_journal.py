"""Signer journal: signatures per second through sign_next, file journal against PostgreSQL, 1 and 2 processes."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

from benchmarks.report import Report
from tests.effects import journal_adapters
from tests.effects.conftest import PAYER_KEY, terms
from tests.support.postgres import postgres_server, temporary_database

SIGNATURES = 300
CHAIN_TIME = 1_000_000


def _sign(kind: str, location: str, worker: int, count: int, start, took) -> None:
    from aptos_sdk.ed25519 import PrivateKey

    from porto_console.effects.signer import Signer
    signer = Signer(PrivateKey.from_str(PAYER_KEY, strict=False))
    journal = journal_adapters.payment_journal(kind, location)
    journal.last_for("none")  # connected, the schema made: only signing is timed
    start.wait()
    started = time.perf_counter()
    for number in range(count):
        payment_id = f"p-{worker}-{number}"
        journal.sign_next(payment_id=payment_id, effect_id=f"{payment_id}.effect", worker_id="bench",
                          sender=signer.address, chain_sequence=0, chain_time_secs=CHAIN_TIME,
                          reuse=lambda last: True, now_ms=0,
                          sign=lambda sequence: signer.sign(terms(signer, sequence, expiration_secs=CHAIN_TIME + 120)))
    took.put(time.perf_counter() - started)


def _rate(kind: str, location: str, processes: int) -> tuple[float, int]:
    """Signatures per second with ``processes`` signers at once; how many distinct sequences they took."""
    context = multiprocessing.get_context("fork")
    each = SIGNATURES // processes
    start, took = context.Barrier(processes), context.Queue()
    workers = [context.Process(target=_sign, args=(kind, location, worker, each, start, took))
               for worker in range(processes)]
    for worker in workers:
        worker.start()
    elapsed = max(took.get(timeout=600) for _ in workers)
    for worker in workers:
        worker.join()
    records = list(journal_adapters.payment_journal(kind, location).records())
    return len(records) / elapsed, len({record.sequence_number for record in records})


def run(report: Report, workdir: Path) -> None:
    with postgres_server(durable=True) as server:
        for processes in (1, 2):
            with temporary_database(server, prefix="porto_bench") as url:
                locations = {"file": str(workdir / f"file-{processes}"), "postgres": url}
                for kind, location in locations.items():
                    rate, sequences = _rate(kind, location, processes)
                    expected = SIGNATURES // processes * processes
                    report.check(sequences == expected,
                                 f"{kind}, {processes} process(es): {expected} signatures at distinct sequences")
                    report.metric(f"{kind}_{processes}p_signatures_per_s",
                                  f"{kind} journal, {processes} signer process(es) at once, fsync on",
                                  rate, "sig/s")

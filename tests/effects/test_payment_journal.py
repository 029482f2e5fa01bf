"""The independent signed-payment journal: durable, ordered, shared by processes, tamper-evident."""

from __future__ import annotations

import multiprocessing

import pytest

from porto_console.effects.payment_journal import JournalCorrupt, SignedPaymentJournal, SignedPaymentRecord
from tests.effects.conftest import terms


def _record(signer, payment_id: str, sequence: int) -> SignedPaymentRecord:
    return SignedPaymentRecord.of(payment_id, f"effect-{payment_id}", "worker-1", signer.sign(terms(signer, sequence)), 1_000)


def test_records_come_back_in_order_with_their_exact_bytes(tmp_path, signer):
    journal = SignedPaymentJournal(tmp_path / "j" / "signed.jsonl")
    first, second = _record(signer, "p-1", 0), _record(signer, "p-2", 1)
    journal.append(first)
    journal.append(second)
    assert list(journal.records()) == [first, second]
    assert journal.for_payment("p-2") == [second]
    assert journal.for_payment("p-2")[0].signed_bytes == signer.sign(terms(signer, 1)).signed_bytes


def test_an_empty_or_missing_journal_has_no_records(tmp_path):
    assert list(SignedPaymentJournal(tmp_path / "none.jsonl").records()) == []


@pytest.mark.parametrize("damage", ["edit", "drop_middle"])
def test_edits_and_removed_lines_break_the_chain(tmp_path, signer, damage):
    journal = SignedPaymentJournal(tmp_path / "signed.jsonl")
    for number in range(3):
        journal.append(_record(signer, f"p-{number}", number))
    lines = journal.path.read_bytes().splitlines(keepends=True)
    if damage == "edit":
        lines[1] = lines[1].replace(b'"amount":"250000"', b'"amount":"250001"')
    else:
        del lines[1]
    journal.path.write_bytes(b"".join(lines))
    with pytest.raises(JournalCorrupt, match=":2:"):
        list(journal.records())


def _append_many(path: str, key_hex: str, start: int) -> None:
    from aptos_sdk.ed25519 import PrivateKey

    from porto_console.effects.signer import Signer
    signer = Signer(PrivateKey.from_str(key_hex, strict=False))
    journal = SignedPaymentJournal(path)
    for sequence in range(start, start + 20):
        journal.append(_record(signer, f"p-{sequence}", sequence))


def test_concurrent_processes_append_whole_chained_lines(tmp_path):
    path = str(tmp_path / "signed.jsonl")
    context = multiprocessing.get_context("fork")  # each child starts from this process's imports
    workers = [context.Process(target=_append_many, args=(path, "0x" + "11" * 32, start)) for start in (0, 100, 200)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    records = list(SignedPaymentJournal(path).records())
    assert sorted(r.sequence_number for r in records) == [s + k for s in (0, 100, 200) for k in range(20)]

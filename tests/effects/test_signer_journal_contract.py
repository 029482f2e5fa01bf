"""One contract, both adapters (``journal_port``): the signed-payment journal and the quarantine, file and PostgreSQL.

Every test here runs once on the file journal and once on PostgreSQL
(``tests.support.postgres``: DATABASE_URL's server, or a cluster of its own).
The sequence rule is the one ``journal_port`` states: the lowest sequence
from the chain's next one up at which no journalled transaction can still
land, so an expired one's sequence is used again.
"""

from __future__ import annotations

import multiprocessing

import pytest

from porto_console.effects.commitment_journal import SignedCommitmentRecord
from porto_console.effects.journal_port import TRANSACTION_JOURNALLED, JournalConflict
from porto_console.effects.payment_journal import PaymentToSign
from porto_console.effects.transactions import CommitmentTerms
from tests.effects import journal_adapters
from tests.effects.journal_adapters import signed_record
from tests.effects.conftest import PAYER_KEY, terms

CHAIN_TIME = 1_000_000
TTL = 120


@pytest.fixture(params=journal_adapters.KINDS)
def store(request, tmp_path, postgres_database_url) -> tuple[str, str]:
    """An empty store of each kind, named so another process can open it too."""
    return request.param, journal_adapters.emptied(request.param, tmp_path, postgres_database_url)


@pytest.fixture
def journal(store):
    return journal_adapters.payment_journal(*store)


@pytest.fixture
def quarantine(store):
    return journal_adapters.quarantine(*store)


def _sign_next(journal, signer, payment_id: str, *, chain_sequence: int = 0, chain_time: int = CHAIN_TIME,
               reuse=lambda last: True, amount: int = 250_000):
    return journal.sign_next(
        payment_id=payment_id, effect_id=f"effect-{payment_id}", worker_id="worker-1", sender=signer.address,
        chain_sequence=chain_sequence, chain_time_secs=chain_time, reuse=reuse,
        sign=lambda sequence: signer.sign(terms(signer, sequence, amount=amount, expiration_secs=chain_time + TTL)),
        now_ms=1_000)


def test_records_come_back_in_order_with_their_exact_bytes(journal, signer):
    first, second = signed_record(signer, "p-1", 0), signed_record(signer, "p-2", 1)
    journal.append(first)
    journal.append(second)
    assert list(journal.records()) == [first, second]
    assert journal.for_payment("p-2") == [second]
    assert journal.for_payment("p-2")[0].signed_bytes == signer.sign(terms(signer, 1)).signed_bytes
    assert journal.by_hash(second.transaction_hash) == second
    assert journal.last_for("p-1") == first


def test_an_empty_journal_has_no_records(journal, signer):
    assert list(journal.records()) == []
    assert journal.last_for("p-1") is None
    assert journal.by_hash("0x" + "00" * 32) is None
    assert journal.at_sequence(signer.address, 0) == []


def test_new_payments_take_the_chains_next_sequence_and_then_the_next_free_one(journal, signer):
    first, fresh_first = _sign_next(journal, signer, "p-1", chain_sequence=7)
    second, fresh_second = _sign_next(journal, signer, "p-2", chain_sequence=7)
    assert (first.sequence_number, second.sequence_number) == (7, 8)
    assert fresh_first and fresh_second
    assert journal.last_for("p-2") == second


def test_a_payment_whose_transaction_may_still_land_gets_the_same_one_back(journal, signer):
    first, _ = _sign_next(journal, signer, "p-1")
    again, fresh = _sign_next(journal, signer, "p-1", amount=999)
    assert (again, fresh) == (first, False)
    assert list(journal.records()) == [first]


def test_a_rejected_transaction_that_has_not_expired_still_holds_its_sequence(journal, signer):
    first, _ = _sign_next(journal, signer, "p-1")
    replacement, fresh = _sign_next(journal, signer, "p-1", reuse=lambda last: False, chain_time=CHAIN_TIME + 1)
    assert fresh and replacement.transaction_hash != first.transaction_hash
    assert (first.sequence_number, replacement.sequence_number) == (0, 1)
    assert journal.for_payment("p-1") == [first, replacement]


def test_an_expired_transactions_sequence_is_used_again(journal, signer):
    first, _ = _sign_next(journal, signer, "p-1")
    later = first.expiration_secs  # expired by chain time: it can no longer land
    replacement, _ = _sign_next(journal, signer, "p-1", reuse=lambda last: False, chain_time=later)
    other, _ = _sign_next(journal, signer, "p-2", chain_time=later)
    assert (replacement.sequence_number, other.sequence_number) == (0, 1)
    assert journal.at_sequence(signer.address, 0) == [first, replacement]


def test_sequences_below_the_chains_next_one_are_never_taken(journal, signer):
    expired, _ = _sign_next(journal, signer, "p-1", chain_sequence=0)
    after, _ = _sign_next(journal, signer, "p-2", chain_sequence=3, chain_time=expired.expiration_secs + 1)
    assert after.sequence_number == 3


def test_a_transaction_hash_is_journalled_once(journal, signer):
    record = signed_record(signer, "p-1", 0)
    journal.append(record)
    with pytest.raises(JournalConflict) as refused:
        journal.append(record)
    assert refused.value.code == TRANSACTION_JOURNALLED
    assert list(journal.records()) == [record]


def test_expiring_after_lists_the_senders_transactions_that_may_still_matter(journal, signer):
    old = signed_record(signer, "p-old", 0, expiration_secs=100)
    recent = signed_record(signer, "p-new", 1, expiration_secs=500)
    journal.append(old)
    journal.append(recent)
    assert journal.expiring_after(signer.address, 100) == [recent]
    assert journal.expiring_after("0x" + "ab" * 32, 0) == []


def _to_sign(signer, payment_id: str, *, chain_time: int = CHAIN_TIME) -> PaymentToSign:
    return PaymentToSign(payment_id, f"effect-{payment_id}", lambda sequence: signer.sign(
        terms(signer, sequence, expiration_secs=chain_time + TTL)))


def _sign_payments(journal, signer, payment_ids, *, chain_sequence=0, chain_time=CHAIN_TIME, reuse=lambda last: True,
                   window=100):
    return journal.sign_payments([_to_sign(signer, payment_id, chain_time=chain_time) for payment_id in payment_ids],
                                 worker_id="worker-1", sender=signer.address, chain_sequence=chain_sequence,
                                 chain_time_secs=chain_time, reuse=reuse, window=window, now_ms=1_000)


def test_a_batch_reuses_what_may_still_land_and_signs_the_rest_at_the_free_sequences(journal, signer):
    kept = _sign_next(journal, signer, "p-1")[0]
    batch = _sign_payments(journal, signer, ["p-1", "p-2", "p-3"])
    assert [(record.payment_id, record.sequence_number, fresh) for record, fresh in batch] == \
        [("p-1", 0, False), ("p-2", 1, True), ("p-3", 2, True)]
    assert batch[0][0] == kept
    assert list(journal.records()) == [kept, batch[1][0], batch[2][0]]
    assert [journal.by_hash(record.transaction_hash) for record, _ in batch] == [record for record, _ in batch]


def test_no_sequence_is_taken_at_or_past_the_senders_window(journal, signer):
    """A node's mempool takes so many transactions of one sender; what does not fit waits for the chain to move."""
    _sign_payments(journal, signer, ["p-1"], chain_sequence=10)
    batch = _sign_payments(journal, signer, ["p-2", "p-3", "p-4", "p-5"], chain_sequence=10, window=3)
    assert [item and item[0].sequence_number for item in batch] == [11, 12, None, None]
    later = _sign_payments(journal, signer, ["p-4"], chain_sequence=11, window=3)
    assert later[0][0].sequence_number == 13
    assert journal.live_from(signer.address, 12, CHAIN_TIME) == [batch[1][0], later[0][0]]


def test_a_batch_takes_an_expired_transactions_sequence_inside_the_window(journal, signer):
    lost = _sign_payments(journal, signer, ["p-1", "p-2"], chain_sequence=0)
    after = CHAIN_TIME + TTL
    again = _sign_payments(journal, signer, ["p-1", "p-2", "p-3"], chain_time=after, reuse=lambda last: False, window=2)
    assert [item and item[0].sequence_number for item in again] == [0, 1, None]
    assert journal.live_from(signer.address, 0, after) == [item[0] for item in again[:2]]
    assert journal.at_sequence(signer.address, 0) == [lost[0][0], again[0][0]]


def test_the_commitment_journal_allocates_the_committers_sequences_the_same_way(store, signer):
    journal = journal_adapters.commitment_journal(*store)

    def sign_for(batch_id: str, chain_time: int, reuse=lambda last: True):
        def sign(sequence: int) -> SignedCommitmentRecord:
            commitment = signer.sign(CommitmentTerms(
                sender=signer.address, sequence_number=sequence, artifact_hash="ab" * 32, count=3,
                expiration_secs=chain_time + TTL, chain_id=4, max_gas_amount=2_000, gas_unit_price=100))
            return SignedCommitmentRecord.of(batch_id, f"{batch_id}.effect", "committer-1", commitment, 1_000)
        return journal.sign_next_for(batch_id, sender=signer.address, chain_sequence=2, chain_time_secs=chain_time,
                                     reuse=reuse, sign=sign)[0]

    first = sign_for("batch-1", CHAIN_TIME)
    assert sign_for("batch-1", CHAIN_TIME) == first
    second = sign_for("batch-2", CHAIN_TIME)
    after_expiry = sign_for("batch-1", first.expiration_secs, reuse=lambda last: False)
    assert [r.sequence_number for r in (first, second, after_expiry)] == [2, 3, 2]
    assert list(journal.records()) == [first, second, after_expiry]
    assert journal.for_subject("batch-1") == [first, after_expiry]


def _sign_many(kind: str, location: str, worker: int, count: int) -> None:
    from aptos_sdk.ed25519 import PrivateKey

    from porto_console.effects.signer import Signer
    signer = Signer(PrivateKey.from_str(PAYER_KEY, strict=False))
    journal = journal_adapters.payment_journal(kind, location)
    for number in range(count):
        _sign_next(journal, signer, f"p-{worker}-{number}")


def test_processes_signing_at_once_never_share_a_sequence(store):
    context = multiprocessing.get_context("fork")  # each child starts from this process's imports
    workers = [context.Process(target=_sign_many, args=(*store, worker, 10)) for worker in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0, 0, 0]
    records = list(journal_adapters.payment_journal(*store).records())
    assert sorted(record.sequence_number for record in records) == list(range(30))
    assert len({record.payment_id for record in records}) == 30


def test_quarantine_keeps_entries_oldest_first_until_released(quarantine):
    first = quarantine.add("effect-1", "payment.transfer", "refused", 2, cause="refused rule")
    quarantine.add("effect-2", "batch.anchor", "malformed", 0, cause="malformed record")
    assert quarantine.contains("effect-1") and not quarantine.contains("effect-3")
    assert [entry["effect_id"] for entry in quarantine.entries()] == ["effect-1", "effect-2"]
    assert quarantine.release("effect-1") == first
    assert quarantine.release("effect-1") is None
    assert [entry["effect_id"] for entry in quarantine.entries()] == ["effect-2"]


def test_quarantining_an_effect_again_replaces_its_entry(quarantine):
    quarantine.add("effect-1", "payment.transfer", "first reason", 0)
    again = quarantine.add("effect-1", "payment.transfer", "second reason", 1)
    assert quarantine.entries() == [again]


def test_quarantine_refuses_what_is_not_an_effect_id(quarantine):
    with pytest.raises(ValueError, match="not an effect ID"):
        quarantine.add("../escape", "payment.transfer", "x", 0)
    assert quarantine.entries() == []

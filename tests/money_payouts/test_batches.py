"""FreezeArtifact and RecordCommitmentObservation: batch states, frozen bytes, IDs never reused
(docs/spec/domain-model-and-state-machines.md §4)."""

from __future__ import annotations

import pytest

from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import OUTBOX
from tests.money_payouts.world import COMMITTER, DISPATCHER, PayoutWorld, digest, transaction_hash

TX = transaction_hash("commitment", "batch-1")


@pytest.fixture
def frozen(payouts: PayoutWorld) -> PayoutWorld:
    payouts.batch("batch-1", "allocation")
    return payouts


def batch(world: PayoutWorld, batch_id: str = "batch-1") -> dict:
    return world.state(f"batch/{batch_id}")


def anchor_effect(world: PayoutWorld) -> dict:
    return world.owner.get(OUTBOX, "batch-1-anchor").data


def abandon(world: PayoutWorld, batch_id: str = "batch-1"):
    return world.submit("FreezeArtifact", {"batch_id": batch_id, "step": {"action": "abandon", "reason": "superseded"}},
                        actor="fin-1")


def test_preparing_frozen_submitted_confirmed(payouts: PayoutWorld):
    prepare = {"action": "prepare", "kind": "allocation", "window_start_ms": 0, "window_end_ms": 10}
    assert payouts.submit("FreezeArtifact", {"batch_id": "batch-1", "step": prepare}, actor="fin-1").accepted
    assert batch(payouts)["state"] == "preparing"
    assert payouts.freeze("batch-1", "batch-1-anchor").accepted
    frozen_batch = batch(payouts)
    assert (frozen_batch["state"], frozen_batch["artifact"]["hash"], frozen_batch["anchor_effect_id"]) == \
        ("frozen", digest("artifact", "batch-1"), "batch-1-anchor")
    assert anchor_effect(payouts)["payload"] == {"batch_id": "batch-1", "kind": "allocation",
                                                 "artifact_hash": digest("artifact", "batch-1"), "count": 0}
    assert payouts.claim("batch-1-anchor", actor=COMMITTER).accepted
    assert payouts.complete("batch-1-anchor", "submitted", TX, actor=COMMITTER).accepted
    assert (batch(payouts)["state"], batch(payouts)["transaction_hash"]) == ("submitted", TX)
    assert payouts.observe_commitment("batch-1", TX, "confirmed").accepted
    assert batch(payouts)["state"] == "confirmed"
    again = payouts.observe_commitment("batch-1", TX, "confirmed")
    assert again.accepted and again.result["data"]["changed"] is False


def test_an_observer_alone_cannot_confirm_a_commitment_no_committer_took_up(frozen: PayoutWorld):
    """Payout approvals rely on confirmed statements: a confirmation needs a committer to have claimed the anchor."""
    frozen.rejects(ErrorCode.INVALID_STATE, lambda: frozen.observe_commitment("batch-1", TX, "confirmed"))
    assert (batch(frozen)["state"], anchor_effect(frozen)["status"]) == ("frozen", "pending")
    assert frozen.claim("batch-1-anchor", actor=COMMITTER).accepted
    assert frozen.observe_commitment("batch-1", TX, "confirmed").accepted  # broadcast, then the committer died


def test_frozen_bytes_are_immutable_and_ids_never_reused(frozen: PayoutWorld):
    frozen.rejects(ErrorCode.INVALID_STATE, lambda: frozen.freeze("batch-1", "batch-1-again", artifact="other bytes"))
    prepare = {"action": "prepare", "kind": "allocation", "window_start_ms": 0, "window_end_ms": 10}
    frozen.rejects(ErrorCode.ALREADY_EXISTS, lambda: frozen.submit(
        "FreezeArtifact", {"batch_id": "batch-1", "step": prepare}, actor="fin-1"))
    assert abandon(frozen).accepted
    abandoned = batch(frozen)
    assert (abandoned["state"], abandoned["abandoned"]["reason"], abandoned["artifact"]["hash"]) == \
        ("abandoned", "superseded", digest("artifact", "batch-1"))
    assert anchor_effect(frozen)["status"] == "cancelled"
    frozen.rejects(ErrorCode.ALREADY_EXISTS, lambda: frozen.submit(
        "FreezeArtifact", {"batch_id": "batch-1", "step": prepare}, actor="fin-1"))
    frozen.rejects(ErrorCode.INVALID_STATE, lambda: frozen.freeze("batch-1", "batch-1-again", artifact="other bytes"))
    frozen.rejects(ErrorCode.INVALID_STATE, lambda: frozen.observe_commitment("batch-1", TX, "confirmed"))


def test_a_batch_being_anchored_cannot_be_abandoned(frozen: PayoutWorld):
    assert frozen.claim("batch-1-anchor", actor=COMMITTER).accepted
    frozen.rejects(ErrorCode.INVALID_STATE, lambda: abandon(frozen))
    assert frozen.complete("batch-1-anchor", "submitted", TX, actor=COMMITTER).accepted
    frozen.rejects(ErrorCode.INVALID_STATE, lambda: abandon(frozen))


def test_a_failed_anchor_is_retried_with_the_same_payload(frozen: PayoutWorld):
    payload = anchor_effect(frozen)["payload"]
    assert frozen.claim("batch-1-anchor", actor=COMMITTER).accepted
    assert frozen.complete("batch-1-anchor", "failed", actor=COMMITTER).accepted
    assert batch(frozen)["state"] == "failed"
    assert (anchor_effect(frozen)["status"], anchor_effect(frozen)["payload"]) == ("pending", payload)
    assert frozen.claim("batch-1-anchor", actor=COMMITTER).accepted
    assert frozen.complete("batch-1-anchor", "submitted", TX, actor=COMMITTER).accepted
    assert frozen.observe_commitment("batch-1", TX, "failed").accepted  # the commitment transaction aborted
    assert (batch(frozen)["state"], anchor_effect(frozen)["status"]) == ("failed", "pending")
    retry = transaction_hash("commitment", "batch-1", "retry")
    assert frozen.claim("batch-1-anchor", actor=COMMITTER).accepted
    assert frozen.complete("batch-1-anchor", "submitted", retry, actor=COMMITTER).accepted
    assert frozen.observe_commitment("batch-1", retry, "confirmed").accepted
    assert (batch(frozen)["state"], anchor_effect(frozen)["attempts"]) == ("confirmed", 3)


def test_an_uncertain_anchor_is_settled_by_observation(frozen: PayoutWorld):
    assert frozen.claim("batch-1-anchor", actor=COMMITTER).accepted
    assert frozen.complete("batch-1-anchor", "unknown", TX, actor=COMMITTER).accepted
    assert batch(frozen)["state"] == "uncertain"
    frozen.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: frozen.observe_commitment(
        "batch-1", TX, "confirmed", artifact="other bytes"))
    assert frozen.observe_commitment("batch-1", TX, "confirmed").accepted
    assert (batch(frozen)["state"], anchor_effect(frozen)["status"]) == ("confirmed", "done")
    other = transaction_hash("commitment", "elsewhere")
    frozen.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: frozen.observe_commitment("batch-1", other, "confirmed"))
    frozen.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: frozen.observe_commitment("batch-1", TX, "failed"))


def test_a_lapsed_anchor_claim_can_be_taken_over(frozen: PayoutWorld):
    assert frozen.claim("batch-1-anchor", actor=COMMITTER).accepted
    frozen.now_ms += 61_000
    frozen.rejects(ErrorCode.CLAIM_EXPIRED, lambda: frozen.complete("batch-1-anchor", "submitted", TX, actor=COMMITTER))
    assert frozen.claim("batch-1-anchor", actor=COMMITTER).accepted  # a commitment moves no money


def test_statement_indexes_record_unique_statements(payouts: PayoutWorld):
    statement_ids = payouts.confirmed_statements(["artist-a", "artist-b"])
    statement = payouts.state(f"statement/{statement_ids[0]}")
    assert (statement["recipient_id"], statement["accounting_batch_id"], statement["index_batch_id"]) == \
        ("artist-a", "allocation-batch-1", "statement-index-1")
    entry = {"statement_id": "s-x", "recipient_id": "artist-a", "accounting_batch_id": "allocation-batch-1",
             "artifact_hash": digest("x"), "public_proof_id": digest("proof-x")[:32]}
    prepare = {"action": "prepare", "kind": "statement_index", "window_start_ms": 0, "window_end_ms": 10}
    for batch_id in ("index-a", "index-b", "index-c", "index-d"):
        assert payouts.submit("FreezeArtifact", {"batch_id": batch_id, "step": prepare}, actor="fin-1").accepted
    payouts.rejects(ErrorCode.ALREADY_EXISTS, lambda: payouts.freeze("index-a", "a-anchor", statements=[entry]))
    fresh_batch = {**entry, "accounting_batch_id": "statement-index-1"}
    payouts.rejects(ErrorCode.INVALID_REFERENCE, lambda: payouts.freeze("index-b", "b-anchor", statements=[fresh_batch]))
    reused_proof = {**entry, "recipient_id": "artist-c", "public_proof_id": statement["public_proof_id"]}
    payouts.rejects(ErrorCode.ALREADY_EXISTS, lambda: payouts.freeze("index-c", "c-anchor", statements=[reused_proof]))
    step = {"action": "freeze", "artifact_ref": "r", "artifact_hash": digest("artifact", "index-d"), "count": 2,
            "anchor_effect_id": "d-anchor", "statements": [{**entry, "recipient_id": "artist-c"}]}
    payouts.rejects(ErrorCode.COUNT_MISMATCH, lambda: payouts.submit(
        "FreezeArtifact", {"batch_id": "index-d", "step": step}, actor="fin-1", evidence=[digest("artifact", "index-d")]))


def test_a_correction_batch_names_an_existing_parent(frozen: PayoutWorld):
    prepare = {"action": "prepare", "kind": "correction", "window_start_ms": 0, "window_end_ms": 10,
               "parent_batch_id": "batch-0"}
    frozen.rejects(ErrorCode.NOT_FOUND, lambda: frozen.submit(
        "FreezeArtifact", {"batch_id": "batch-2", "step": prepare}, actor="fin-1"))
    assert frozen.submit("FreezeArtifact", {"batch_id": "batch-2", "step": {**prepare, "parent_batch_id": "batch-1"}},
                         actor="fin-1").accepted
    head = frozen.owner.head()
    with pytest.raises(LedgerError) as refused:
        frozen.submit("FreezeArtifact", {"batch_id": "batch-3", "step": {**prepare, "parent_batch_id": None}},
                      actor="fin-1")
    assert refused.value.code == ErrorCode.INVALID_PAYLOAD
    assert frozen.owner.head() == head


def test_only_a_committer_records_a_commitments_chain_observation(frozen: PayoutWorld):
    """The payment worker's credential observes too, but it does not confirm a batch's anchor."""
    assert frozen.claim("batch-1-anchor", actor=COMMITTER).accepted
    assert frozen.complete("batch-1-anchor", "submitted", TX, actor=COMMITTER).accepted
    evidence = digest("commitment-evidence", "batch-1", TX, "confirmed")
    observation = {"batch_id": "batch-1", "transaction_hash": TX, "artifact_hash": digest("artifact", "batch-1"),
                   "outcome": "confirmed", "ledger_version": 1_000, "evidence_digest": evidence}
    frozen.rejects(ErrorCode.CAPABILITY_MISSING, lambda: frozen.submit(
        "RecordCommitmentObservation", observation, actor=DISPATCHER, evidence=[evidence]))
    assert batch(frozen)["state"] == "submitted"
    assert frozen.observe_commitment("batch-1", TX, "confirmed").accepted
    assert batch(frozen)["state"] == "confirmed"


def test_freezing_needs_the_artifact_in_evidence_and_observations_need_theirs(frozen: PayoutWorld):
    prepare = {"action": "prepare", "kind": "allocation", "window_start_ms": 0, "window_end_ms": 10}
    assert frozen.submit("FreezeArtifact", {"batch_id": "batch-2", "step": prepare}, actor="fin-1").accepted
    step = {"action": "freeze", "artifact_ref": "r", "artifact_hash": digest("artifact", "batch-2"), "count": 0,
            "anchor_effect_id": "batch-2-anchor"}
    frozen.rejects(ErrorCode.INVALID_REFERENCE, lambda: frozen.submit(
        "FreezeArtifact", {"batch_id": "batch-2", "step": step}, actor="fin-1"))
    observation = {"batch_id": "batch-1", "transaction_hash": TX, "artifact_hash": digest("artifact", "batch-1"),
                   "outcome": "confirmed", "ledger_version": 1, "evidence_digest": digest("e")}
    frozen.rejects(ErrorCode.INVALID_REFERENCE, lambda: frozen.submit(
        "RecordCommitmentObservation", observation, actor=COMMITTER))


def test_a_confirmed_commitment_records_the_journal_tree_it_anchored_and_replays(frozen: PayoutWorld, tmp_path):
    assert frozen.claim("batch-1-anchor", actor=COMMITTER).accepted
    assert frozen.complete("batch-1-anchor", "submitted", TX, actor=COMMITTER).accepted
    signed_at = frozen.owner.journal_tree()
    assert signed_at["size"] == frozen.owner.head().sequence
    outcome = frozen.observe_commitment("batch-1", TX, "confirmed", journal_tree=signed_at)
    assert outcome.accepted, outcome.result
    assert batch(frozen)["journal_tree"] == signed_at
    assert frozen.owner.journal_root_at(signed_at["size"]) == signed_at["root"]
    frozen.owner.with_checkpoint(lambda store: export_store(store, tmp_path / "export"))
    replayed = replay_export(tmp_path / "export", tmp_path / "replayed")
    assert replayed["sequence"] == frozen.owner.head().sequence


def test_a_commitment_naming_another_root_or_a_future_size_changes_nothing(frozen: PayoutWorld):
    assert frozen.claim("batch-1-anchor", actor=COMMITTER).accepted
    assert frozen.complete("batch-1-anchor", "submitted", TX, actor=COMMITTER).accepted
    head = frozen.owner.head().sequence
    other_root = frozen.owner.journal_root_at(head - 1)
    for claim in ({"size": head, "root": other_root}, {"size": head + 5, "root": other_root}):
        with pytest.raises(LedgerError) as raised:
            frozen.observe_commitment("batch-1", TX, "confirmed", journal_tree=claim)
        assert raised.value.code == ErrorCode.CONFLICTING_EVIDENCE
        assert frozen.owner.head().sequence == head and batch(frozen)["state"] == "submitted"

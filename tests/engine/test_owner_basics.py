"""The owner's core promises: sequences, idempotency, conflicts, rejections."""

from __future__ import annotations

import pytest

from ledger_engine.errors import ErrorCode, LedgerError


def test_accepted_command_advances_head_and_is_resolvable(owner, envelopes):
    envelope = envelopes.account("fin-1", roles=["finance"])
    outcome = owner.submit(envelope)
    assert (outcome.sequence, outcome.outcome, outcome.code) == (1, "accepted", "OK")
    assert owner.head().sequence == 1
    assert owner.head().entry_hash == outcome.entry_hash
    resolved = owner.resolve(envelope["command_id"])
    assert (resolved.sequence, resolved.entry_hash, resolved.result) == (1, outcome.entry_hash, outcome.result)
    assert owner.resolve("00000000-0000-4000-8000-000000000000") is None


def test_exact_duplicate_returns_original_without_new_sequence(owner, envelopes):
    envelope = envelopes.account("fin-1", roles=["finance"])
    first = owner.submit(envelope)
    again = owner.submit(envelope)
    assert again.duplicate and again.sequence == first.sequence and again.entry_hash == first.entry_hash
    assert owner.head().sequence == 1


def test_same_command_id_with_other_envelope_conflicts_and_changes_nothing(owner, envelopes):
    envelope = envelopes.account("fin-1", roles=["finance"])
    owner.submit(envelope)
    head = owner.head()
    forged = envelopes.account("fin-2", roles=["finance"]) | {"command_id": envelope["command_id"]}
    with pytest.raises(LedgerError) as raised:
        owner.submit(forged)
    assert raised.value.code == ErrorCode.COMMAND_ID_CONFLICT
    assert owner.head() == head


def test_rejection_is_journalled_and_never_later_succeeds(owner, envelopes):
    envelope = envelopes("RegisterAccount", {"account_id": "x-1", "kind": "staff",
                                              "identity_digest": envelopes.digest("x"), "roles": ["finance"]},
                         actor="nobody")
    rejected = owner.submit(envelope)
    assert (rejected.outcome, rejected.code, rejected.sequence) == ("rejected", "UNKNOWN_ACTOR", 1)
    owner.submit(envelopes.account("nobody", roles=["admin"]))
    again = owner.submit(envelope)
    assert again.duplicate and again.code == "UNKNOWN_ACTOR"
    assert owner.get("state", "account/x-1") is None


"""Anchoring frozen batches with real processes: a committer Celery worker on Redis, the console, the SIMULATED chain.

Every case ends the same way: each frozen batch was anchored exactly once on
the chain, with its artifact hash and item count and the journal tree's root
and size, by the committer's own account, and the ledger confirms the batch
by that transaction, recording the journal tree its commitment anchored.
"""

from __future__ import annotations

import gc

import pytest
from aptos_sdk.ed25519 import PrivateKey

from porto_console.effects.signer import Signer
from porto_console.effects.simulated_chain import Fault
from tests.effects.conftest import COMMITTER_KEY
from tests.effects.stack import COMMITMENTS_WORKER, COMMITTER_ROLES, Stack, wait_until
from tests.money_allocation.world import MoneyWorld, fixture_commands
from tests.money_payouts.world import PayoutWorld, digest

pytestmark = [pytest.mark.worker, pytest.mark.fault_case]

BATCHES = ("allocation-batch-1", "allocation-batch-2", "statement-index-1")
CREDENTIAL = "commitments-1"
COMMITTER = Signer(PrivateKey.from_str(COMMITTER_KEY, strict=False))


@pytest.fixture
def stack(tmp_path, chain_server, broker_url, envelopes):
    stack = Stack(tmp_path, chain_server.url, broker_url)
    freeze_batches(stack, envelopes)
    gc.collect()  # the closed owner's database handles go with its last reference, and with them the LOCK
    stack.issue_credential(CREDENTIAL, COMMITMENTS_WORKER, COMMITTER_ROLES)
    stack.start_console()
    yield stack
    stack.stop_all()


def freeze_batches(stack: Stack, envelopes) -> None:
    """Frozen batches whose anchor effects are pending, and the committer's ledger actor."""
    with stack.ledger() as owner, fixture_commands():
        payouts = PayoutWorld(MoneyWorld(owner, envelopes).setup())
        for batch_id in BATCHES:
            kind = "statement_index" if batch_id.startswith("statement-index") else "allocation"
            payouts.batch(batch_id, kind)
        stack.provision_worker(owner, envelopes, COMMITMENTS_WORKER, COMMITTER_ROLES)


def start_committer(stack: Stack, *, concurrency: int = 1) -> None:
    stack.start_worker(CREDENTIAL, queues="commitments,maintenance", concurrency=concurrency)
    stack.start_beat(CREDENTIAL)


def confirmed(stack: Stack) -> bool:
    return all(stack.batch(batch_id)["state"] == "confirmed" for batch_id in BATCHES)


def assert_anchored_exactly_once(chain, stack: Stack) -> None:
    """The chain and the ledger agree: one commitment per batch, the one that confirms it."""
    wait_until(lambda: confirmed(stack), "every batch to be confirmed in the ledger")
    stack.stop_all()
    anchors = chain.anchors()
    assert all(anchor["success"] for anchor in anchors)
    assert {anchor["sender"] for anchor in anchors} == {COMMITTER.address}
    journal_trees = []
    for batch_id in BATCHES:
        artifact_hash = digest("artifact", batch_id)
        anchored = [a for a in anchors if a["payload"]["arguments"][:2] == ["0x" + artifact_hash, "0"]]
        assert len(anchored) == 1, (batch_id, anchors)
        batch = stack.batch(batch_id)
        assert (batch["state"], batch["transaction_hash"]) == ("confirmed", anchored[0]["hash"])
        assert anchored[0]["payload"]["function"] == f"{anchored[0]['sender']}::commitments::anchor"
        journal_root, journal_size = anchored[0]["payload"]["arguments"][2:]
        assert batch["journal_tree"] == {"size": int(journal_size), "root": journal_root.removeprefix("0x")}
        journal_trees.append(batch["journal_tree"])
    assert len(anchors) == len(BATCHES)
    with stack.ledger() as owner:
        assert all(owner.journal_root_at(tree["size"]) == tree["root"] and tree["size"] > 0 for tree in journal_trees)


def test_frozen_batches_are_anchored_once_and_confirmed(stack, chain):
    start_committer(stack)
    assert_anchored_exactly_once(chain, stack)


def test_chain_loses_the_answer_after_accepting(stack, chain):
    chain.inject(Fault("drop_response"), times=len(BATCHES))
    start_committer(stack)
    assert_anchored_exactly_once(chain, stack)
    assert len(list(stack.commitments.records())) == len(BATCHES)


def test_same_message_redelivered_many_times(stack, chain):
    for effect in stack.open_effects(CREDENTIAL):
        for _ in range(10):
            stack.send_effect(effect)
    start_committer(stack, concurrency=4)
    assert_anchored_exactly_once(chain, stack)
    assert len(list(stack.commitments.records())) == len(BATCHES)

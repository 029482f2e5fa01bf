"""Attack 3: one deposit is one lot, however its hash is spelled, and a phantom lot blocks payouts."""

from __future__ import annotations

import pytest

from ledger_engine.errors import LedgerError
from tests.money_allocation.world import MoneyWorld
from tests.support import payloads

AMOUNT = 1_000_000


def import_deposit(world: MoneyWorld, lot_id: str, **deposit) -> object:
    payload = payloads.funding(lot_id, str(AMOUNT), transaction="deposit-1")
    payload["deposit"] = {**payload["deposit"], **deposit}
    return world.submit("ImportFunding", payload, actor="ingest-1", evidence=[payload["deposit"]["evidence_digest"]])


def canonical_hash() -> str:
    return payloads.funding("x", "1", transaction="deposit-1")["deposit"]["transaction_hash"]


@pytest.mark.parametrize("spelling", [
    lambda h: h.upper(),
    lambda h: "0x" + h,
    lambda h: "0x" + h[:32].upper() + h[32:],
])
def test_the_same_deposit_in_another_hex_spelling_is_a_duplicate(world: MoneyWorld, spelling):
    assert import_deposit(world, "lot-1").accepted
    world.assert_rejected_without_change("DUPLICATE_EVIDENCE", lambda: import_deposit(
        world, "lot-2", transaction_hash=spelling(canonical_hash()), evidence_digest=payloads.digest("other")))
    assert world.state("lot/lot-1")["deposit"]["transaction_hash"] == "0x" + canonical_hash()


def test_a_chain_outside_the_closed_set_is_refused_before_admission(world: MoneyWorld):
    assert import_deposit(world, "lot-1").accepted
    for chain in ("Simulated", "SIMULATED", "aptos-devnet", "simulated "):
        with pytest.raises(LedgerError) as refused:
            import_deposit(world, "lot-2", chain=chain, evidence_digest=payloads.digest("other", chain))
        assert refused.value.code == "INVALID_PAYLOAD"
    with pytest.raises(LedgerError) as refused:
        import_deposit(world, "lot-2", event_index="1", evidence_digest=payloads.digest("other"))
    assert refused.value.code == "INVALID_PAYLOAD"
    assert world.state("lot/lot-2") is None


def test_one_piece_of_evidence_backs_one_lot(world: MoneyWorld):
    assert import_deposit(world, "lot-1").accepted
    world.assert_rejected_without_change("DUPLICATE_EVIDENCE", lambda: import_deposit(world, "lot-2", event_index=1))
    assert import_deposit(world, "lot-2", event_index=1, evidence_digest=payloads.digest("evidence-2")).accepted


def test_a_phantom_lot_is_a_mismatch_that_blocks_payouts(world: MoneyWorld):
    assert import_deposit(world, "lot-1").accepted
    assert import_deposit(world, "lot-2", event_index=1, evidence_digest=payloads.digest("evidence-2")).accepted
    assert world.check("check-1").result["data"]["status"] == "clear"
    phantom = world.state("lot/lot-1")["deposit"]  # lot-2 claims lot-1's deposit and evidence as its own
    world.submit_ok("TestForgeRecord", {"record_key": "lot/lot-2", "changes": {"deposit": phantom}})

    assert world.check("check-2").result["data"]["status"] == "blocked"
    found = {(m["subject"], m["check"]) for m in world.state("conservation")["mismatches"]}
    assert ("lot/lot-2", "deposit") in found
    assert (f"deposit/0x{canonical_hash()}:0", "lots") in found
    assert world.submit("TestPayoutGate", {}).code == "PAYOUTS_BLOCKED"


def test_a_lot_recorded_in_a_non_canonical_spelling_is_a_mismatch(world: MoneyWorld):
    assert import_deposit(world, "lot-1").accepted
    deposit = world.state("lot/lot-1")["deposit"]
    world.submit_ok("TestForgeRecord", {"record_key": "lot/lot-1", "changes": {
        "deposit": {**deposit, "transaction_hash": deposit["transaction_hash"].upper()}}})
    assert world.check("check-1").result["data"]["status"] == "blocked"
    assert [m["check"] for m in world.state("conservation")["mismatches"]] == ["deposit"]

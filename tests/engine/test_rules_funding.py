"""ImportFunding: each deposit once, evidence bound to the envelope, a balanced treasury posting."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from ledger_engine.amounts import U64_MAX
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import seq20
from tests.support import payloads
from tests.support.outcomes import assert_accepted, assert_refused, assert_rejected

INGEST = "ingest-1"


@pytest.fixture
def funding_ledger(owner, envelopes):
    assert_accepted(owner, envelopes.account(INGEST, "worker", ["ingest"]))
    return owner


def deposit(envelopes, payload: dict[str, Any], *, actor: str = INGEST) -> dict[str, Any]:
    return envelopes("ImportFunding", payload, actor=actor, evidence=[payloads.deposit_evidence(payload)])


def events_of(owner, sequence: int) -> list[dict[str, Any]]:
    return [orjson.loads(raw) for _, raw in owner.at_boundary(
        lambda store: list(store.scan("events", f"{seq20(sequence)}/".encode())))]


def test_a_deposit_posts_treasury_against_funding_available(funding_ledger, envelopes):
    outcome = assert_accepted(funding_ledger, deposit(envelopes, payloads.funding("lot-1", "2500000")))
    posted, imported = events_of(funding_ledger, outcome.sequence)
    assert posted["type"] == "Posted" and posted["asset"] == "USDC"
    assert posted["lines"] == [{"account": "treasury", "side": "debit", "amount": "2500000"},
                               {"account": "funding_available", "side": "credit", "amount": "2500000"}]
    assert {name: value for name, value in imported.items() if name != "audit"} == {
        "v": 1, "type": "FundingImported", "lot_id": "lot-1", "asset": "USDC", "amount": "2500000"}
    assert (imported["audit"]["actor_id"], imported["audit"]["target"]) == (INGEST, "lot/lot-1")
    lot = funding_ledger.get("state", "lot/lot-1").data
    assert (lot["received"], lot["allocated"]) == ("2500000", "0")


def test_the_same_deposit_cannot_fund_two_lots(funding_ledger, envelopes):
    assert_accepted(funding_ledger, deposit(envelopes, payloads.funding("lot-1", "100", transaction="tx-1")))
    assert_rejected(funding_ledger, deposit(envelopes, payloads.funding("lot-2", "100", transaction="tx-1")),
                    "DUPLICATE_EVIDENCE")
    assert funding_ledger.get("state", "lot/lot-2") is None


def test_another_event_of_the_same_transaction_is_another_deposit(funding_ledger, envelopes):
    assert_accepted(funding_ledger, deposit(envelopes, payloads.funding("lot-1", "100", transaction="tx-1")))
    assert_accepted(funding_ledger, deposit(envelopes, payloads.funding("lot-2", "100", transaction="tx-1",
                                                                        event_index=1)))


def test_a_lot_is_imported_once(funding_ledger, envelopes):
    assert_accepted(funding_ledger, deposit(envelopes, payloads.funding("lot-1", "100", transaction="tx-1")))
    assert_rejected(funding_ledger, deposit(envelopes, payloads.funding("lot-1", "100", transaction="tx-2")),
                    "ALREADY_EXISTS")


def test_the_evidence_digest_must_be_listed_in_the_envelope(funding_ledger, envelopes):
    payload = payloads.funding("lot-1", "100")
    unlisted = envelopes("ImportFunding", payload, actor=INGEST, evidence=[payloads.digest("other evidence")])
    assert_rejected(funding_ledger, unlisted, "INVALID_REFERENCE")
    assert_rejected(funding_ledger, envelopes("ImportFunding", payload, actor=INGEST), "INVALID_REFERENCE")


def test_a_zero_amount_is_refused(funding_ledger, envelopes):
    assert_refused(funding_ledger, deposit(envelopes, payloads.funding("lot-1", "0")), ErrorCode.INVALID_PAYLOAD)


def test_the_largest_u64_amount_is_accepted_and_one_more_is_not(funding_ledger, envelopes):
    assert_refused(funding_ledger, deposit(envelopes, payloads.funding("lot-1", str(U64_MAX + 1))),
                   ErrorCode.INVALID_AMOUNT)
    assert_accepted(funding_ledger, deposit(envelopes, payloads.funding("lot-1", str(U64_MAX))))
    assert funding_ledger.get("state", "lot/lot-1").data["received"] == str(U64_MAX)


def test_only_ingest_imports_a_deposit(funding_ledger, envelopes):
    """A deposit is a chain fact the ingest adapter verified: one finance user alone must not mint a lot."""
    assert_accepted(funding_ledger, envelopes.account("ops-1", roles=["ops"]))
    assert_accepted(funding_ledger, envelopes.account("fin-1", roles=["finance"]))
    for actor in ("ops-1", "fin-1"):
        assert_rejected(funding_ledger, deposit(envelopes, payloads.funding("lot-1", "100"), actor=actor),
                        "CAPABILITY_MISSING")
    assert funding_ledger.get("state", "lot/lot-1") is None
    assert_accepted(funding_ledger, deposit(envelopes, payloads.funding("lot-1", "100")))


@pytest.mark.parametrize("label", ["aptos-testnet", "simulated"])
def test_a_transaction_under_another_chain_label_is_the_same_deposit(funding_ledger, envelopes, label):
    first = payloads.funding("lot-1", "1000000", transaction="deposit-1")
    first["deposit"] = {**first["deposit"], "chain": "aptos"}
    assert_accepted(funding_ledger, deposit(envelopes, first))
    again = payloads.funding("lot-2", "1000000", transaction="deposit-1")
    again["deposit"] = {**again["deposit"], "chain": label, "evidence_digest": payloads.digest("re-serialised", label)}
    assert_rejected(funding_ledger, deposit(envelopes, again), "DUPLICATE_EVIDENCE")
    assert funding_ledger.get("state", "lot/lot-2") is None


def test_an_accounts_running_totals_may_outgrow_u64(funding_ledger, envelopes):
    """Each posting is a u64; an account's total over its life need not be, and must not stop later postings."""
    assert_accepted(funding_ledger, deposit(envelopes, payloads.funding("lot-max", str(U64_MAX), transaction="max")))
    assert_accepted(funding_ledger, deposit(envelopes, payloads.funding("lot-1", "1000000", transaction="one")))
    cursor = orjson.loads(funding_ledger.at_boundary(
        lambda store: store.get("indexes", b"balance_cursor/USDC/treasury")))
    assert cursor["debits"] == str(U64_MAX + 1_000_000)


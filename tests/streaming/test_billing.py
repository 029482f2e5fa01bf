"""ApplyBillingObservation: unique periods, whole days, entitlement and clearance, GBP postings."""

from __future__ import annotations

from ledger_engine.domain.schema import streaming as schema
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from tests.streaming.conftest import DAY, INGEST


def _posted(world, sequence):
    entry = world.owner.journal_entry(sequence)
    return [row for _, row in world.owner.scan("events", f"{sequence:020d}/") if row["type"] == "Posted"], entry


def test_an_opened_period_has_the_contract_shape_and_posts_net_revenue_in_gbp(bare_world):
    outcome = bare_world.open_period("period-1")
    assert outcome.accepted
    period = bare_world.state(schema.period_key("period-1"))
    assert {k: period[k] for k in ("period_id", "account_id", "provider", "provider_period_id", "start_ms", "end_ms",
                                   "days", "entitlement", "clearance", "gross_gbp", "net_gbp")} == {
        "period_id": "period-1", "account_id": "listener-1", "provider": "test-pay",
        "provider_period_id": "pp-period-1", "start_ms": DAY * DAY_MS, "end_ms": (DAY + 30) * DAY_MS, "days": 30,
        "entitlement": "active", "clearance": "pending", "gross_gbp": "1199", "net_gbp": "999"}
    posted, _ = _posted(bare_world, outcome.sequence)
    assert [(p["asset"], p["lines"]) for p in posted] == [("GBP", [
        {"account": "gbp_provider_receivable", "side": "debit", "amount": "999"},
        {"account": "gbp_subscription_revenue", "side": "credit", "amount": "999"}])]


def test_a_provider_period_opens_at_most_one_period(bare_world):
    assert bare_world.open_period("period-1").accepted
    bare_world.rejected("DUPLICATE_EVIDENCE", "ApplyBillingObservation", _opening(bare_world, "period-2",
                        provider_period_id="pp-period-1", first_day=DAY + 40), actor=INGEST,
                        evidence=[_opening_evidence()])


def test_a_billing_event_applies_once(bare_world):
    assert bare_world.open_period("period-1", event_id="evt-open").accepted
    outcome = bare_world.billing("payment_cleared", period_id="period-1", event_id="evt-open")
    assert outcome.code == "DUPLICATE_EVIDENCE"


def test_a_period_ends_after_it_starts_on_whole_days(bare_world):
    assert bare_world.open_period("period-1", days=0).code == "INVALID_TIME"
    terms = {"start_ms": DAY * DAY_MS + 1, "end_ms": (DAY + 3) * DAY_MS, "gross_gbp": "10", "net_gbp": "9"}
    assert bare_world.billing("period_opened", period_id="period-2", terms=terms).code == "INVALID_TIME"
    assert bare_world.state(schema.period_key("period-1")) is None


def test_an_accounts_periods_never_overlap(bare_world):
    assert bare_world.open_period("period-1", days=30).accepted
    assert bare_world.open_period("period-2", first_day=DAY + 29, days=30).code == "INVALID_TIME"
    assert bare_world.open_period("period-3", first_day=DAY - 5, days=6).code == "INVALID_TIME"
    assert bare_world.open_period("period-4", first_day=DAY + 30, days=30).accepted
    assert bare_world.open_period("period-5", "listener-2", days=30).accepted


def test_only_listeners_have_periods(bare_world):
    assert bare_world.open_period("period-1", "operator-1").code == "INVALID_REFERENCE"
    assert bare_world.open_period("period-1", "nobody").code == "NOT_FOUND"


def test_clearance_and_entitlement_move_only_forward(bare_world):
    assert bare_world.open_period("period-1").accepted
    cleared = bare_world.billing("payment_cleared", period_id="period-1")
    assert cleared.accepted and bare_world.state(schema.period_key("period-1"))["clearance"] == "cleared"
    assert bare_world.billing("payment_cleared", period_id="period-1").code == "INVALID_STATE"
    assert bare_world.billing("entitlement_cancelled", period_id="period-1").accepted
    assert bare_world.billing("entitlement_cancelled", period_id="period-1").code == "INVALID_STATE"
    refunded = bare_world.billing("payment_refunded", period_id="period-1")
    assert refunded.accepted
    period = bare_world.state(schema.period_key("period-1"))
    assert (period["entitlement"], period["clearance"]) == ("cancelled", "refunded")
    assert [e["kind"] for e in period["events"]] == [
        "period_opened", "payment_cleared", "entitlement_cancelled", "payment_refunded"]
    posted, _ = _posted(bare_world, refunded.sequence)
    assert [(p["asset"], [(l["account"], l["side"]) for l in p["lines"]]) for p in posted] == [
        ("GBP", [("gbp_refunds", "debit"), ("gbp_provider_receivable", "credit")])]
    assert bare_world.billing("payment_refunded", period_id="period-1").code == "INVALID_STATE"


def test_an_event_must_describe_its_period(bare_world):
    assert bare_world.open_period("period-1").accepted
    assert bare_world.billing("payment_cleared", period_id="period-1",
                              provider_period_id="pp-other").code == "INVALID_REFERENCE"
    assert bare_world.billing("payment_cleared", period_id="period-1",
                              account_id="listener-2").code == "INVALID_REFERENCE"
    assert bare_world.billing("payment_cleared", period_id="period-9").code == "NOT_FOUND"


def test_evidence_must_be_listed_in_the_envelope(bare_world):
    bare_world.rejected("INVALID_REFERENCE", "ApplyBillingObservation", _opening(bare_world, "period-1"),
                        actor=INGEST, evidence=[])


def test_only_ingest_applies_billing(bare_world):
    bare_world.rejected("CAPABILITY_MISSING", "ApplyBillingObservation", _opening(bare_world, "period-1"),
                        actor="coord-1", evidence=[_opening_evidence()])


def _opening_evidence() -> str:
    return "ab" * 32


def _opening(world, period_id, *, provider_period_id=None, first_day=DAY):
    return {"provider": "test-pay", "event_id": world.new_id("evt"), "kind": "period_opened",
            "occurred_at_ms": world.now, "provider_period_id": provider_period_id or f"pp-{period_id}",
            "period_id": period_id, "account_id": "listener-1", "evidence_digest": _opening_evidence(),
            "terms": {"start_ms": first_day * DAY_MS, "end_ms": (first_day + 30) * DAY_MS, "gross_gbp": "1199",
                      "net_gbp": "999"}}

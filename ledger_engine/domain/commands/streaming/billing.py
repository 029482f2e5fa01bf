"""ApplyBillingObservation: a verified provider billing event opens or advances a subscription period.

A period is a listener's paid access for whole UTC days. Entitlement (may the
listener stream?) and clearance (has the provider's money settled?) are
separate columns. Net revenue is recognised in GBP when the period opens and
reversed into refunds when it is refunded; GBP never shares a journal with USDC.
"""

from __future__ import annotations


from pydantic import model_validator

from ledger_engine.amounts import Amount, format_amount, parse_amount
from ledger_engine.domain.changes import require
from ledger_engine.domain.chart import GBP_PROVIDER_RECEIVABLE, GBP_REFUNDS, GBP_SUBSCRIPTION_REVENUE
from ledger_engine.domain.commands.money.refunds import refund_period_budget
from ledger_engine.domain.commands.streaming.checks import existing, require_absent, require_account, require_evidence
from ledger_engine.domain.schema.streaming import (
    BillingEntry, BillingKind, Period, account_period_sentinel, account_periods_prefix, billing_event_sentinel,
    period_key, provider_period_sentinel,
)
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from ledger_engine.domain.postings import credit, debit, post
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.types import Digest, Identifier, TimestampMs
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import UNIQUE
from ledger_engine.open_json import CommandResult

class PeriodTerms(Payload):
    """What the provider sold: whole UTC days and the amounts, in pence."""

    start_ms: TimestampMs
    end_ms: TimestampMs
    gross_gbp: Amount
    net_gbp: Amount


class ApplyBillingObservationPayload(Payload):
    provider: Identifier
    event_id: Identifier
    kind: BillingKind
    occurred_at_ms: TimestampMs
    provider_period_id: Identifier
    period_id: Identifier
    account_id: Identifier
    terms: PeriodTerms | None = None
    evidence_digest: Digest

    @model_validator(mode="after")
    def _terms_only_when_opening(self) -> "ApplyBillingObservationPayload":
        if (self.terms is not None) != (self.kind == "period_opened"):
            raise ValueError("terms are given exactly when a period is opened")
        return self


@command("ApplyBillingObservation", payload=ApplyBillingObservationPayload, roles={"ingest"}, cites_evidence=True)
def apply_billing_observation(ctx: RuleContext, p: ApplyBillingObservationPayload) -> CommandResult:
    require_evidence(ctx, p.evidence_digest)
    ctx.changes.claim_unique(billing_event_sentinel(p.provider, p.event_id),
                             {"period_id": p.period_id, "kind": p.kind}, ErrorCode.DUPLICATE_EVIDENCE,
                             f"billing event {p.provider}/{p.event_id} was already applied")
    period = _open_period(ctx, p) if p.kind == "period_opened" else _advance_period(ctx, p)
    ctx.changes.put_state(period_key(p.period_id), period)
    ctx.changes.event("BillingObserved", provider=p.provider, event_id=p.event_id, kind=p.kind,
                      period_id=p.period_id, account_id=p.account_id, evidence_digest=p.evidence_digest)
    return {"period_id": p.period_id, "entitlement": period["entitlement"], "clearance": period["clearance"]}


def _open_period(ctx: RuleContext, p: ApplyBillingObservationPayload) -> Period:
    terms = p.terms
    assert terms is not None, "an opened period's observation gives its terms (ApplyBillingObservationPayload)"
    require_account(ctx, p.account_id, "listener", active=False)
    require_absent(ctx, period_key(p.period_id), f"period {p.period_id}")
    require(terms.start_ms % DAY_MS == 0 and terms.end_ms % DAY_MS == 0, ErrorCode.INVALID_TIME,
            "a period starts and ends at UTC midnight")
    require(terms.end_ms > terms.start_ms, ErrorCode.INVALID_TIME, "a period ends after it starts")
    require(terms.net_gbp <= terms.gross_gbp, ErrorCode.INVALID_STATE, "net exceeds gross")
    ctx.changes.claim_unique(provider_period_sentinel(p.provider, p.provider_period_id), {"period_id": p.period_id},
                             ErrorCode.DUPLICATE_EVIDENCE,
                             f"provider period {p.provider}/{p.provider_period_id} already has a period")
    _claim_days(ctx, p.account_id, p.period_id, terms)
    post(ctx.changes, journal=f"billing:{p.provider}:{p.event_id}", asset="GBP",
         lines=[debit(GBP_PROVIDER_RECEIVABLE, terms.net_gbp), credit(GBP_SUBSCRIPTION_REVENUE, terms.net_gbp)])
    ctx.changes.event("EntitlementChanged", period_id=p.period_id, account_id=p.account_id, entitlement="active")
    return {
        "period_id": p.period_id,
        "account_id": p.account_id,
        "provider": p.provider,
        "provider_period_id": p.provider_period_id,
        "start_ms": terms.start_ms,
        "end_ms": terms.end_ms,
        "days": (terms.end_ms - terms.start_ms) // DAY_MS,
        "entitlement": "active",
        "clearance": "pending",
        "gross_gbp": format_amount(terms.gross_gbp),
        "net_gbp": format_amount(terms.net_gbp),
        "opened_at_ms": ctx.now_ms,
        "events": [_event_entry(ctx, p)],
    }


def _claim_days(ctx: RuleContext, account_id: str, period_id: str, terms: PeriodTerms) -> None:
    """A listener-day belongs to at most one period, so an account's periods never overlap."""
    for _, claimed in ctx.changes.scan(UNIQUE, account_periods_prefix(account_id)):
        require(claimed.data["end_ms"] <= terms.start_ms or terms.end_ms <= claimed.data["start_ms"],
                ErrorCode.INVALID_TIME, f"the period overlaps period {claimed.data['period_id']} of {account_id}")
    ctx.changes.claim_unique(account_period_sentinel(account_id, terms.start_ms),
                             {"period_id": period_id, "start_ms": terms.start_ms, "end_ms": terms.end_ms},
                             ErrorCode.INVALID_TIME, "the period overlaps another period of the account")


def _advance_period(ctx: RuleContext, p: ApplyBillingObservationPayload) -> Period:
    period = existing(ctx, period_key(p.period_id), f"period {p.period_id}", Period)
    require((period["provider"], period["provider_period_id"], period["account_id"])
            == (p.provider, p.provider_period_id, p.account_id),
            ErrorCode.INVALID_REFERENCE, f"the event does not describe period {p.period_id}")
    updated: Period = {**period, "events": [*period["events"], _event_entry(ctx, p)]}
    if p.kind == "payment_cleared":
        require(period["clearance"] == "pending", ErrorCode.INVALID_STATE,
                f"period {p.period_id} clearance is {period['clearance']}, not pending")
        ctx.changes.event("PeriodFundingReady", period_id=p.period_id, account_id=p.account_id,
                          net_gbp=period["net_gbp"])
        return {**updated, "clearance": "cleared"}
    if p.kind == "entitlement_cancelled":
        _end_entitlement(ctx, period)
        return {**updated, "entitlement": "cancelled"}
    require(period["clearance"] != "refunded", ErrorCode.INVALID_STATE, f"period {p.period_id} is already refunded")
    net = parse_amount(period["net_gbp"])
    post(ctx.changes, journal=f"billing:{p.provider}:{p.event_id}", asset="GBP",
         lines=[debit(GBP_REFUNDS, net), credit(GBP_PROVIDER_RECEIVABLE, net)])
    if period["entitlement"] == "active":
        _end_entitlement(ctx, period)
    refund_period_budget(ctx, period, p.event_id)
    return {**updated, "clearance": "refunded", "entitlement": "cancelled"}


def _end_entitlement(ctx: RuleContext, period: Period) -> None:
    require(period["entitlement"] == "active", ErrorCode.INVALID_STATE,
            f"period {period['period_id']} entitlement is already {period['entitlement']}")
    ctx.changes.event("EntitlementChanged", period_id=period["period_id"], account_id=period["account_id"],
                      entitlement="cancelled")


def _event_entry(ctx: RuleContext, p: ApplyBillingObservationPayload) -> BillingEntry:
    return {"event_id": p.event_id, "kind": p.kind, "occurred_at_ms": p.occurred_at_ms,
            "admitted_at_ms": ctx.now_ms, "evidence_digest": p.evidence_digest}

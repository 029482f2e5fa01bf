"""Provider billing events: verified, stripped of personal data, normalised into periods.

A provider posts a JSON event signed with its Ed25519 key. The event may
carry personal data (an email, a card fingerprint); those fields are ignored
here and survive only in the stored evidence bytes. The provider names our
opaque account ID as ``client_reference``. A redelivered event maps to the
same command ID and so to the stored envelope and its original outcome.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ledger_engine.adapters.gateway import CommandGateway, derived_command_id
from ledger_engine.adapters.signatures import BILLING_EVENT, SignedDocument
from ledger_engine.amounts import Amount
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.domain.schema.streaming import provider_period_sentinel
from ledger_engine.domain.types import Identifier, TimestampMs
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import UNIQUE
from ledger_engine.open_json import Unvalidated

KINDS = {
    "period.opened": "period_opened",
    "payment.cleared": "payment_cleared",
    "entitlement.cancelled": "entitlement_cancelled",
    "payment.refunded": "payment_refunded",
}

_PROVIDER_INPUT = ConfigDict(extra="ignore", strict=True, frozen=True)


class ProviderPeriod(BaseModel):
    model_config = _PROVIDER_INPUT
    id: Identifier
    start_ms: TimestampMs
    end_ms: TimestampMs


class ProviderAmounts(BaseModel):
    model_config = _PROVIDER_INPUT
    currency: Literal["GBP"]
    gross: Amount
    net: Amount


class ProviderEvent(BaseModel):
    """The fields we use of a provider's event; anything else it sends is left in the evidence."""

    model_config = _PROVIDER_INPUT
    id: Identifier
    type: Literal["period.opened", "payment.cleared", "entitlement.cancelled", "payment.refunded"]
    created_ms: TimestampMs
    client_reference: Identifier
    period: ProviderPeriod
    amounts: ProviderAmounts | None = None


class BillingAdapter:
    def __init__(self, gateway: CommandGateway, provider_keys: dict[str, str], *, actor_id: str) -> None:
        self.gateway = gateway
        self.provider_keys = provider_keys
        self.actor_id = actor_id

    def observe(self, provider: str, body: bytes, signature: bytes) -> CommandOutcome:
        if provider not in self.provider_keys:
            raise LedgerError(ErrorCode.SIGNATURE_INVALID, f"no key is configured for provider {provider!r}")
        signed = SignedDocument(BILLING_EVENT, body, signature)
        signed.require_signed_by(self.provider_keys[provider], f"provider {provider}")
        event = signed.parse(ProviderEvent)
        digest = self.gateway.evidence.put(signed.evidence_bytes())
        return self.gateway.execute_once(derived_command_id("ApplyBillingObservation", provider, event.id), lambda: {
            "command_type": "ApplyBillingObservation", "actor_id": self.actor_id, "evidence": [digest],
            "payload": self._payload(provider, event, digest),
        })

    def _payload(self, provider: str, event: ProviderEvent, digest: str) -> Unvalidated:
        kind = KINDS[event.type]
        payload = {"provider": provider, "event_id": event.id, "kind": kind, "occurred_at_ms": event.created_ms,
                   "provider_period_id": event.period.id, "account_id": event.client_reference,
                   "evidence_digest": digest}
        if kind != "period_opened":
            return {**payload, "period_id": self._known_period(provider, event.period.id)}
        if event.amounts is None:
            raise LedgerError(ErrorCode.INVALID_PAYLOAD, "an opened period states its amounts")
        terms = {"start_ms": event.period.start_ms, "end_ms": event.period.end_ms,
                 "gross_gbp": str(event.amounts.gross), "net_gbp": str(event.amounts.net)}
        # Fixed by the provider's period, like the command ID: a redelivery builds the very same command.
        period_id = derived_command_id("BillingPeriod", provider, event.period.id)
        return {**payload, "period_id": period_id, "terms": terms}

    def _known_period(self, provider: str, provider_period_id: str) -> str:
        """The period an event advances; unknown yet means retry later, so nothing is admitted."""
        sentinel = self.gateway.existing(UNIQUE, provider_period_sentinel(provider, provider_period_id),
                                         f"provider period {provider}/{provider_period_id}")
        period_id: str = sentinel.data["period_id"]
        return period_id

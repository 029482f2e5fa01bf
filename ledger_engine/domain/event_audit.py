"""The audit fields every domain event carries (docs/spec/domain-model-and-state-machines.md §6).

Rules record events with their business fields only. When a command's events
are staged, each gets one ``audit`` object, the same way for every rule:

    {"actor_id", "target", "payload_digest", "reason", "admitted_at_ms"}

- ``actor_id`` and ``admitted_at_ms`` are the envelope's: who did it, and when
  the ledger admitted it.
- ``payload_digest`` is SHA-256 over ``porto:london:payload:v1\\n`` and the JCS
  of the command's payload; the payload itself is in the journal entry.
- ``target`` is ``<kind>/<id>``: the record the event is about, from the
  event's own fields (``TARGETS``; an event type not listed there names its
  first ``*_id`` field, or the ledger itself).
- ``reason`` is the event's own stable reason code where it has one (a
  cancellation, a correction, a withdrawal), otherwise the command type that
  caused it. Both are closed sets with fixed spellings.
"""

from __future__ import annotations

import hashlib

from ledger_engine.canonical import engine_bytes
from ledger_engine.envelope import CommandEnvelope
from ledger_engine.open_json import JournalEvent

PAYLOAD_DOMAIN = "porto:london:payload:v1\n"
LEDGER_TARGET = "ledger/ledger"

# Event type -> (target kind, the event field holding its ID). The most specific subject wins.
TARGETS: dict[str, tuple[str, str]] = {
    "Posted": ("journal", "journal"),
    "PaymentStateChanged": ("payment", "payment_id"),
    "PaymentPaid": ("payment", "payment_id"),
    "TransferObserved": ("payment_attempt", "attempt_id"),
    "PayoutRunPrepared": ("payment_run", "run_id"),
    "PayoutRunApproved": ("payment_run", "run_id"),
    "PayoutRunEnded": ("payment_run", "run_id"),
    "RecipientUpdateRequested": ("recipient_update", "update_id"),
    "RecipientUpdated": ("recipient_update", "update_id"),
    "RecipientUpdateDeclined": ("recipient_update", "update_id"),
    "CorrectionRequested": ("correction", "correction_id"),
    "CorrectionRecorded": ("correction", "correction_id"),
    "CorrectionDeclined": ("correction", "correction_id"),
    "BudgetRefunded": ("budget", "budget_id"),
    "FundingImported": ("lot", "lot_id"),
    "BudgetFunded": ("budget", "budget_id"),
    "ListenerDayAllocated": ("listener", "listener_id"),
    "DayChunkFrozen": ("allocation_request", "request_id"),
    "ConservationChecked": ("conservation_check", "check_id"),
    "BatchPrepared": ("batch", "batch_id"),
    "BatchStateChanged": ("batch", "batch_id"),
    "CommitmentObserved": ("batch", "batch_id"),
    "EffectClaimed": ("effect", "effect_id"),
    "EffectCompleted": ("effect", "effect_id"),
    "ExportAccessed": ("export", "export_id"),
    "BillingObserved": ("period", "period_id"),
    "EntitlementChanged": ("period", "period_id"),
    "PeriodFundingReady": ("period", "period_id"),
    "CatalogueImported": ("catalogue_import", "import_id"),
    "WorkActivated": ("work", "work_id"),
    "WorkWithdrawn": ("work", "work_id"),
    "DayClosed": ("listener", "listener_id"),
    "SessionOpened": ("session", "session_id"),
    "SessionClosed": ("session", "session_id"),
    "GrantIssued": ("grant", "grant_id"),
    "GrantConsumed": ("grant", "grant_id"),
    "ReceiptRecorded": ("receipt", "receipt_id"),
    "ReceiptDecided": ("receipt", "receipt_id"),
    "HoldRaised": ("hold", "hold_id"),
    "HoldDecided": ("hold", "hold_id"),
    "PeerFillRecorded": ("peer_fill", "result_id"),
    "NodeAdmitted": ("node", "node_id"),
    "NodeStatusChanged": ("node", "node_id"),
    "NodeKeyRotated": ("node", "node_id"),
    "NodeHealthRecorded": ("node", "node_id"),
}


def payload_digest(envelope: CommandEnvelope) -> str:
    """The payload was canonicalised, walk and all, when the envelope was admitted: no second walk here."""
    return hashlib.sha256(PAYLOAD_DOMAIN.encode() + engine_bytes(envelope.payload)).hexdigest()


def with_audit(event: JournalEvent, envelope: CommandEnvelope, digest: str) -> JournalEvent:
    """``event`` with its ``audit`` object; a rule never sets one itself."""
    assert "audit" not in event, event["type"]
    reason = event.get("reason")
    return {**event, "audit": {
        "actor_id": envelope.actor_id,
        "target": event_target(event),
        "payload_digest": digest,
        "reason": reason if isinstance(reason, str) else envelope.command_type,
        "admitted_at_ms": envelope.admitted_at_ms,
    }}


def event_target(event: JournalEvent) -> str:
    kind, field = TARGETS.get(event["type"], (None, None))
    if field is not None and isinstance(event.get(field), str):
        return f"{kind}/{event[field]}"
    for name in sorted(event):
        if name.endswith("_id") and isinstance(event[name], str):
            return f"{name[:-3]}/{event[name]}"
    return LEDGER_TARGET

"""Recipient payout address changes: request with ownership evidence, then approve or decline by someone else.

The evidence bytes are stored first and the command carries their digest. A
request's update ID derives from its form's command ID (``update-<command ID>``),
so a retried form requests nothing twice.
"""

from __future__ import annotations

from typing import get_args

from ledger_engine.canonical import sha256_hex
from ledger_engine.domain.commands.money.recipient_updates import DeclineUpdate
from ledger_engine.domain.schema.money_payouts import RecipientUpdate
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.open_json import Report
from ledger_engine.selectors import payout_queries
from ledger_engine.selectors.view import LedgerView
from porto_console.console.commands import CommandRequest
from porto_console.ledger import gateway

UPDATE_STATUSES = ("pending", "approved", "declined")
DECLINE_REASONS = get_args(DeclineUpdate.model_fields["reason"].annotation)


def recipient_ids(view: LedgerView) -> list[str]:
    """The recipients a change can be requested for, by ID."""
    return sorted(recipient["recipient_id"] for recipient in payout_queries.recipients(view))


def update(view: LedgerView, recipient_id: str, update_id: str) -> Report | None:
    """The update with its evidence bytes (as text) and the recipient as it is now."""
    data = payout_queries.recipient_update(view, recipient_id, update_id)
    if data is None:
        return None
    store = gateway().evidence
    evidence = store.get(data["evidence_digest"]).decode(errors="replace") if data["evidence_digest"] in store else None
    return {"update": data, "evidence": evidence, "recipient": payout_queries.recipient(view, recipient_id)}


def request_update(view: LedgerView, command_id: str, recipient_id: str, payout_address: str,
                   evidence: str) -> CommandRequest:
    recorded = payout_queries.recipient_update(view, recipient_id, update_id_for(command_id))
    current = payout_queries.recipient(view, recipient_id)
    # This form's own request, recorded already, keeps the version it named; the recipient may be past it.
    version = recorded["version"] if recorded else current["version"] + 1 if current else 2
    return CommandRequest("UpdateRecipient", {
        "update_id": update_id_for(command_id), "recipient_id": recipient_id,
        "step": {"action": "request", "version": version, "payout_address": payout_address,
                 "evidence_digest": sha256_hex(evidence.encode())}}, evidence=(evidence.encode(),))


def approve(view: LedgerView, recipient_id: str, update_id: str) -> CommandRequest:
    """Approval restates the requested version and address, the ones shown side by side."""
    data = _existing(view, recipient_id, update_id)
    return CommandRequest("UpdateRecipient", {
        "update_id": data["update_id"], "recipient_id": data["recipient_id"],
        "step": {"action": "approve", "version": data["version"], "payout_address": data["payout_address"]}})


def decline(view: LedgerView, recipient_id: str, update_id: str, reason: str) -> CommandRequest:
    data = _existing(view, recipient_id, update_id)
    return CommandRequest("UpdateRecipient", {
        "update_id": data["update_id"], "recipient_id": data["recipient_id"],
        "step": {"action": "decline", "reason": reason}})


def _existing(view: LedgerView, recipient_id: str, update_id: str) -> RecipientUpdate:
    data = payout_queries.recipient_update(view, recipient_id, update_id)
    if data is None:
        raise LedgerError(ErrorCode.NOT_FOUND, f"recipient update {update_id} does not exist")
    return data


def update_id_for(command_id: str) -> str:
    return f"update-{command_id}"

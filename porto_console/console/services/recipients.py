"""Recipient payout address changes: request with ownership evidence, then approve or decline by someone else.

The evidence bytes are stored first and the command carries their digest. A
request's update ID derives from its form's command ID (``update-<command ID>``),
so a retried form requests nothing twice.
"""

from __future__ import annotations

from typing import Any, Iterator, get_args

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.canonical import sha256_hex
from ledger_engine.domain.commands.money.recipient_updates import DeclineUpdate
from ledger_engine.domain.schema.money_payouts import Recipient, RecipientUpdate
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.selectors import payout_queries
from ledger_engine.selectors.payout_queries import UpdateListing
from porto_console.console.commands import CommandRequest
from porto_console.ledger import gateway

UPDATE_STATUSES = ("pending", "approved", "declined")
DECLINE_REASONS = get_args(DeclineUpdate.model_fields["reason"].annotation)


def recipients(ledger: LedgerOwner) -> list[Recipient]:
    return payout_queries.recipients(ledger.view())


def updates(ledger: LedgerOwner, status: str) -> Iterator[UpdateListing]:
    return payout_queries.recipient_updates(ledger.view(), status)


def update(ledger: LedgerOwner, recipient_id: str, update_id: str) -> dict[str, Any] | None:
    """The update with its evidence bytes (as text) and the recipient as it is now."""
    view = ledger.view()
    data = payout_queries.recipient_update(view, recipient_id, update_id)
    if data is None:
        return None
    store = gateway().evidence
    evidence = store.get(data["evidence_digest"]).decode(errors="replace") if data["evidence_digest"] in store else None
    return {"update": data, "evidence": evidence, "recipient": payout_queries.recipient(view, recipient_id)}


def request_update(ledger: LedgerOwner, command_id: str, recipient_id: str, payout_address: str,
                   evidence: str) -> CommandRequest:
    view = ledger.view()
    recorded = payout_queries.recipient_update(view, recipient_id, update_id_for(command_id))
    current = payout_queries.recipient(view, recipient_id)
    # This form's own request, recorded already, keeps the version it named; the recipient may be past it.
    version = recorded["version"] if recorded else current["version"] + 1 if current else 2
    return CommandRequest("UpdateRecipient", {
        "update_id": update_id_for(command_id), "recipient_id": recipient_id,
        "step": {"action": "request", "version": version, "payout_address": payout_address,
                 "evidence_digest": sha256_hex(evidence.encode())}}, evidence=(evidence.encode(),))


def approve(ledger: LedgerOwner, recipient_id: str, update_id: str) -> CommandRequest:
    """Approval restates the requested version and address, the ones shown side by side."""
    data = _existing(ledger, recipient_id, update_id)
    return CommandRequest("UpdateRecipient", {
        "update_id": data["update_id"], "recipient_id": data["recipient_id"],
        "step": {"action": "approve", "version": data["version"], "payout_address": data["payout_address"]}})


def decline(ledger: LedgerOwner, recipient_id: str, update_id: str, reason: str) -> CommandRequest:
    data = _existing(ledger, recipient_id, update_id)
    return CommandRequest("UpdateRecipient", {
        "update_id": data["update_id"], "recipient_id": data["recipient_id"],
        "step": {"action": "decline", "reason": reason}})


def _existing(ledger: LedgerOwner, recipient_id: str, update_id: str) -> RecipientUpdate:
    data = payout_queries.recipient_update(ledger.view(), recipient_id, update_id)
    if data is None:
        raise LedgerError(ErrorCode.NOT_FOUND, f"recipient update {update_id} does not exist")
    return data


def update_id_for(command_id: str) -> str:
    return f"update-{command_id}"

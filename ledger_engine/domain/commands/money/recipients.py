"""Recipients and their requested updates, as records.

``recipient/<recipient_id>`` is ``{"recipient_id", "payout_address", "version"}``:
RegisterAccount creates version 1, each approved UpdateRecipient writes the
next. ``recipient_update/<recipient_id>/<update_id>`` is one requested change
with its decision; at most one per recipient is pending at a time.
"""

from __future__ import annotations

from ledger_engine.domain.changes import Changes, require
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.schema.money_payouts import Recipient, RecipientUpdate, recipient_key
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE


def load_recipient(changes: Changes, recipient_id: str) -> Recipient:
    return load(changes, recipient_key(recipient_id), f"recipient {recipient_id}", Recipient)


def pending_update(changes: Changes, recipient_id: str) -> RecipientUpdate | None:
    for _, record in changes.scan(STATE, key("recipient_update", recipient_id) + "/"):
        if record.data["status"] == "pending":
            return record.data_as(RecipientUpdate)
    return None


def approved_update_for(changes: Changes, recipient_id: str, version: int) -> RecipientUpdate:
    """The approved update that made ``version`` the recipient's (version 1 comes from RegisterAccount)."""
    for _, record in changes.scan(STATE, key("recipient_update", recipient_id) + "/"):
        if record.data["status"] == "approved" and record.data["version"] == version:
            return record.data_as(RecipientUpdate)
    raise AssertionError(f"recipient {recipient_id} reached version {version} without an approved update")


def require_no_pending_update(changes: Changes, recipient_id: str) -> None:
    update = pending_update(changes, recipient_id)
    require(update is None, ErrorCode.INVALID_STATE,
            f"recipient {recipient_id} has update {update and update['update_id']} awaiting a decision")

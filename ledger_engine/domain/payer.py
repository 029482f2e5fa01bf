"""The payer: the one chain address the ledger's payments are sent from.

A signer's credential alone cannot pay anyone, but a transfer signed by any
other key, recorded as a payment's attempt, would hold that payment in flight
until the chain proves it failed or expired. So the ledger records the payer's
address, ``state/payer`` = ``{"payer_address"}``, and an attempt (signed, or
landed and recorded afterwards) must be sent from it.

The address is set in genesis (``payer_address``) or by a two-admin staff
change (``set_payer_address``), as the step-up verifier key is: a new payer
key is a new sender address. A ledger whose genesis named no payer, and that
has had none approved since, checks no sender: its history was recorded
before the ledger kept one, and must replay as it was written.
"""

from __future__ import annotations


from ledger_engine.domain.changes import Changes, require
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE
from ledger_engine.open_json import RecordData

PAYER_KEY = key("payer")
ADDRESS_PATTERN = r"^0x[0-9a-f]{64}$"


def payer_record(payer_address: str) -> RecordData:
    return {"payer_address": payer_address}


def payer_address(changes: Changes) -> str | None:
    record = changes.get(STATE, PAYER_KEY)
    return None if record is None else record.data["payer_address"]


def require_payer_sends(changes: Changes, sender_address: str) -> None:
    """A transfer recorded as a payment's attempt is sent from the payer the ledger names, if it names one."""
    payer = payer_address(changes)
    require(payer is None or sender_address == payer, ErrorCode.CONFLICTING_EVIDENCE,
            f"payments are sent from the payer {payer}, not from {sender_address}")

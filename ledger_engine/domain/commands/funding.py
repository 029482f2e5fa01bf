"""ImportFunding: a verified USDC deposit becomes a funding lot."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ledger_engine.amounts import Amount, format_amount
from ledger_engine.domain.changes import require
from ledger_engine.domain.chart import FUNDING_AVAILABLE, TREASURY
from ledger_engine.domain.postings import credit, debit, post
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.types import Count, Digest, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE

class DepositObservation(Payload):
    """A verified on-chain deposit, normalised by the adapter."""

    chain: Identifier
    transaction_hash: Digest
    event_index: Count
    evidence_digest: Digest


class ImportFundingPayload(Payload):
    lot_id: Identifier
    asset: Literal["USDC"]
    amount: Amount = Field(gt=0)
    deposit: DepositObservation
    conversion_ref: Identifier | None = None


def lot_key(lot_id: str) -> str:
    return key("lot", lot_id)


@command("ImportFunding", payload=ImportFundingPayload, roles={"ingest", "finance"})
def import_funding(ctx: RuleContext, p: ImportFundingPayload) -> dict:
    changes = ctx.changes
    require(p.deposit.evidence_digest in ctx.envelope.evidence_hashes, ErrorCode.INVALID_REFERENCE,
            "the deposit's evidence digest must be listed in the envelope's evidence_hashes")
    require(changes.get(STATE, lot_key(p.lot_id)) is None, ErrorCode.ALREADY_EXISTS,
            f"funding lot {p.lot_id} already exists")
    deposit_unit = f"{p.deposit.chain}:{p.deposit.transaction_hash}:{p.deposit.event_index}"
    changes.claim_unique(key("deposit", deposit_unit), {"lot_id": p.lot_id},
                         ErrorCode.DUPLICATE_EVIDENCE, f"deposit {deposit_unit} was already imported")
    changes.put_state(lot_key(p.lot_id), {
        "lot_id": p.lot_id,
        "asset": p.asset,
        "received": format_amount(p.amount),
        "allocated": "0",
        "deposit": p.deposit.model_dump(mode="json"),
        "conversion_ref": p.conversion_ref,
        "imported_at_ms": ctx.now_ms,
    })
    post(changes, journal=f"funding:{p.lot_id}", asset=p.asset,
         lines=[debit(TREASURY, p.amount), credit(FUNDING_AVAILABLE, p.amount)])
    changes.event("FundingImported", lot_id=p.lot_id, asset=p.asset, amount=format_amount(p.amount))
    return {"lot_id": p.lot_id, "amount": format_amount(p.amount)}

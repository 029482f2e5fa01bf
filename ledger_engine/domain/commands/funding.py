"""ImportFunding: a verified USDC deposit becomes a funding lot, and lots fund period budgets.

One command may do either or both: import a deposit as a lot, and fund
budgets by drawing on lots (this one or earlier ones with units left). A lot's
allocated total never exceeds what it received. A deposit and its evidence
each fund one lot, whatever spelling of the transaction hash names it
(deposits.py).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ledger_engine.amounts import Amount, format_amount, parse_amount
from ledger_engine.domain.actors import actor_roles
from ledger_engine.domain.changes import Changes, require, require_present
from ledger_engine.domain.chart import FUNDING_AVAILABLE, TREASURY
from ledger_engine.domain.commands.money.budgets import BUDGET_ASSET, BudgetFunding, LotDraw, fund_budget
from ledger_engine.domain.deposits import (
    DepositChain, SpelledTransactionHash, canonical_deposit, deposit_evidence_key, deposit_unit_key,
)
from ledger_engine.domain.invariants import require_conserved
from ledger_engine.domain.postings import credit, debit, post
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.money_allocation import Lot, lot_key
from ledger_engine.domain.types import Count, Digest, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult


class DepositObservation(Payload):
    """A verified on-chain deposit: a chain from the closed set, any hex spelling of the hash, an integer index."""

    chain: DepositChain
    transaction_hash: SpelledTransactionHash
    event_index: Count
    evidence_digest: Digest


class ImportFundingPayload(Payload):
    """The lot fields (``lot_id``, ``amount``, ``deposit``) come together or not at all."""

    lot_id: Identifier | None = None
    asset: Literal["USDC"] = "USDC"
    amount: Annotated[Amount, Field(gt=0)] | None = None
    deposit: DepositObservation | None = None
    conversion_ref: Identifier | None = None
    budgets: list[BudgetFunding] = Field(default=[], max_length=1000)

    @model_validator(mode="after")
    def _lot_or_budgets(self) -> "ImportFundingPayload":
        lot_fields = [self.lot_id, self.amount, self.deposit]
        has_lot = self.lot_id is not None
        if any((field is None) == has_lot for field in lot_fields):
            raise ValueError("lot_id, amount and deposit come together")
        if not has_lot and (self.conversion_ref is not None or not self.budgets):
            raise ValueError("without a deposit there must be budgets to fund and no conversion reference")
        return self


@command("ImportFunding", payload=ImportFundingPayload, roles={"ingest", "finance"}, cites_evidence=True)
def import_funding(ctx: RuleContext, p: ImportFundingPayload) -> CommandResult:
    changes = ctx.changes
    if p.lot_id is not None:
        _import_lot(ctx, p)
    budgets = []
    for funding in p.budgets:
        for draw in funding.draws:
            _draw_from_lot(changes, draw)
        budgets.append(fund_budget(ctx, funding))
    require_conserved(changes)
    return {"lot_id": p.lot_id, "amount": None if p.amount is None else format_amount(p.amount),
            "budgets": budgets}


def _import_lot(ctx: RuleContext, p: ImportFundingPayload) -> None:
    assert p.lot_id is not None and p.amount is not None and p.deposit is not None, "they come together (the payload)"
    changes = ctx.changes
    # A deposit is a chain fact the ingest adapter verified: finance may fund budgets from lots, never make one.
    require("ingest" in actor_roles(ctx, ctx.actor_id), ErrorCode.CAPABILITY_MISSING,
            "importing a deposit as a funding lot needs the ingest role")
    require(p.deposit.evidence_digest in ctx.envelope.evidence_hashes, ErrorCode.INVALID_REFERENCE,
            "the deposit's evidence digest must be listed in the envelope's evidence_hashes")
    require(changes.get(STATE, lot_key(p.lot_id)) is None, ErrorCode.ALREADY_EXISTS,
            f"funding lot {p.lot_id} already exists")
    deposit = canonical_deposit(p.deposit.model_dump(mode="json"))
    unit_key, evidence_key = deposit_unit_key(deposit), deposit_evidence_key(deposit)
    changes.claim_unique(unit_key, {"lot_id": p.lot_id}, ErrorCode.DUPLICATE_EVIDENCE,
                         f"{unit_key} was already imported")
    changes.claim_unique(evidence_key, {"lot_id": p.lot_id}, ErrorCode.DUPLICATE_EVIDENCE,
                         f"evidence {deposit['evidence_digest']} already backs another lot")
    changes.put_state(lot_key(p.lot_id), {
        "lot_id": p.lot_id,
        "asset": p.asset,
        "received": format_amount(p.amount),
        "allocated": "0",
        "deposit": deposit,
        "conversion_ref": p.conversion_ref,
        "imported_at_ms": ctx.now_ms,
        "correlation_id": f"lot:{p.lot_id}",
        "created": created(ctx),
    })
    post(changes, journal=f"funding:{p.lot_id}", asset=p.asset,
         lines=[debit(TREASURY, p.amount), credit(FUNDING_AVAILABLE, p.amount)])
    changes.event("FundingImported", lot_id=p.lot_id, asset=p.asset, amount=format_amount(p.amount))


def _draw_from_lot(changes: Changes, draw: LotDraw) -> None:
    record = require_present(changes.get(STATE, lot_key(draw.lot_id)), ErrorCode.NOT_FOUND,
                             f"funding lot {draw.lot_id} does not exist")
    lot = record.data_as(Lot)
    require(lot["asset"] == BUDGET_ASSET, ErrorCode.INVALID_REFERENCE, f"lot {draw.lot_id} is not {BUDGET_ASSET}")
    allocated = parse_amount(lot["allocated"]) + draw.amount
    require(allocated <= parse_amount(lot["received"]), ErrorCode.INSUFFICIENT_FUNDS,
            f"lot {draw.lot_id} received {lot['received']} and has {lot['allocated']} allocated; "
            f"it cannot give {draw.amount} more")
    changes.put_state(lot_key(draw.lot_id), {**lot, "allocated": format_amount(allocated)})

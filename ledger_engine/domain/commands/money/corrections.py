"""RecordCorrection: balancing entries that reverse allocation lines and replace them.

Nothing is overwritten or deleted. A correction names prior lines by ID and
marks them ``reversed`` (with ``reversed_by``); it may create replacement
lines for the same listener-day (with ``correction_id``); whatever it
reversed and did not replace goes back to the budget's ``unallocated`` or out
of the budget as a refund (``refunds_reversals``, posted to ``corrections``).
It may also refund unallocated units, for example after a subscription refund.
Only payable lines and Porto's retained share can be reversed: a reserved line
is released by cancelling its payout run first, and a transfer is never
reversed. A finance actor approves what another finance actor requested.

    Dr <payable or porto_retained>...      Cr <replacement payables>...
                                           Cr budget_unallocated:<budget> | corrections   (the remainder)
    Dr budget_unallocated:<budget>         Cr corrections                                 (refund_unallocated)
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from ledger_engine.amounts import Amount, checked_sum, format_amount, parse_amount
from ledger_engine.domain.actors import actor_roles, require_other_actor
from ledger_engine.domain.allocation_policy import ARTIST, OPERATOR, PORTO, PlannedLine
from ledger_engine.domain.changes import Changes, require
from ledger_engine.domain.chart import CORRECTIONS, budget_unallocated
from ledger_engine.domain.commands.accounts import recipient_key
from ledger_engine.domain.commands.money.allocation import MAX_LINES, credit_lines, term_totals, write_line
from ledger_engine.domain.commands.money.budgets import BUDGET_ASSET, load_budget
from ledger_engine.domain.commands.money.lines import load_line, move_budget, set_line_status
from ledger_engine.domain.invariants import require_conserved
from ledger_engine.domain.postings import Line, credit, debit, post
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.types import Count, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE

Reason = Literal[
    "rights_error",  # lines went to the wrong rights holders or splits
    "evidence_rejected",  # listening or serving evidence was rejected after allocation
    "operator_error",  # lines went to the wrong node or operator
    "subscription_refund",  # the subscription was refunded; its units leave the budget
    "allocation_error",  # any other allocation mistake, described in the linked review
]


class Replacement(Payload):
    line_id: Identifier
    role: Literal["artist", "operator", "porto"]
    amount: Amount = Field(gt=0)
    recipient_id: Identifier | None = None
    work_id: Identifier | None = None
    rights_version: Annotated[Count, Field(ge=1)] | None = None
    node_id: Identifier | None = None

    @model_validator(mode="after")
    def _fields_of_role(self) -> "Replacement":
        present = {name for name in ("recipient_id", "work_id", "rights_version", "node_id")
                   if getattr(self, name) is not None}
        needed = {ARTIST: {"recipient_id", "work_id", "rights_version"}, OPERATOR: {"recipient_id", "node_id"},
                  PORTO: set()}[self.role]
        if present != needed:
            raise ValueError(f"a {self.role} line has exactly {sorted(needed) or 'no references'}")
        return self

    def planned(self) -> PlannedLine:
        return PlannedLine(self.role, self.recipient_id, self.amount, work_id=self.work_id,
                           rights_version=self.rights_version, node_id=self.node_id)


class RecordCorrectionPayload(Payload):
    correction_id: Identifier
    budget_id: Identifier
    reason: Reason
    requested_by: Identifier
    reverses: list[Identifier] = Field(default=[], max_length=MAX_LINES)
    replacements: list[Replacement] = Field(default=[], max_length=MAX_LINES)
    remainder_to: Literal["unallocated", "refund"] = "unallocated"
    refund_unallocated: Amount = 0

    @field_validator("reverses")
    @classmethod
    def _sorted_distinct(cls, reverses: list[str]) -> list[str]:
        if reverses != sorted(set(reverses)):
            raise ValueError("reversed line IDs must be distinct and in ID order")
        return reverses

    @model_validator(mode="after")
    def _does_something(self) -> "RecordCorrectionPayload":
        if not self.reverses and (self.replacements or not self.refund_unallocated):
            raise ValueError("a correction reverses lines (and may replace them) or refunds unallocated units")
        new_ids = [replacement.line_id for replacement in self.replacements]
        if len(set(new_ids)) != len(new_ids) or set(new_ids) & set(self.reverses):
            raise ValueError("replacement line IDs must be new and distinct")
        return self


def correction_key(correction_id: str) -> str:
    return key("correction", correction_id)


@command("RecordCorrection", payload=RecordCorrectionPayload, roles={"finance"})
def record_correction(ctx: RuleContext, p: RecordCorrectionPayload) -> dict:
    changes = ctx.changes
    _require_authorised(ctx, p)
    reversed_lines, listener_day = _reversed_lines(changes, p)
    old = [PlannedLine(line["role"], line["recipient_id"], parse_amount(line["amount"])) for line in reversed_lines]
    new = [replacement.planned() for replacement in p.replacements]
    amounts = _amounts(changes, p, old, new)

    for line in reversed_lines:
        set_line_status(changes, line["line_id"], line["status"], "reversed", reversed_by=p.correction_id)
    for replacement, planned in zip(p.replacements, new):
        write_line(changes, replacement.line_id, planned, listener_id=listener_day[0], day=listener_day[1],
                   budget_id=p.budget_id, correction_id=p.correction_id)
    _move_terms(changes, p.budget_id, old, new, amounts["released"], p.refund_unallocated)
    post(changes, journal=f"correction:{p.correction_id}", asset=BUDGET_ASSET, lines=[
        *_debit_lines(old), debit(budget_unallocated(p.budget_id), p.refund_unallocated),
        *credit_lines(new), credit(budget_unallocated(p.budget_id), amounts["released"]),
        credit(CORRECTIONS, amounts["refunded"]),
    ])
    stored = {name: format_amount(amount) for name, amount in amounts.items()}
    changes.put_state(correction_key(p.correction_id), {
        "correction_id": p.correction_id,
        "budget_id": p.budget_id,
        "reason": p.reason,
        "requested_by": p.requested_by,
        "approved_by": ctx.actor_id,
        "listener_day": list(listener_day) if listener_day else None,
        "reverses": p.reverses,
        "replacements": [replacement.line_id for replacement in p.replacements],
        **stored,
        "recorded_at_ms": ctx.now_ms,
    })
    changes.event("CorrectionRecorded", correction_id=p.correction_id, budget_id=p.budget_id, reason=p.reason,
                  **stored)
    require_conserved(changes)
    return {"correction_id": p.correction_id, **stored}


def _require_authorised(ctx: RuleContext, p: RecordCorrectionPayload) -> None:
    require(ctx.changes.get(STATE, correction_key(p.correction_id)) is None, ErrorCode.ALREADY_EXISTS,
            f"correction {p.correction_id} already exists")
    require_other_actor(ctx, p.requested_by, "requested this correction")
    require("finance" in actor_roles(ctx, p.requested_by), ErrorCode.CAPABILITY_MISSING,
            f"the requester {p.requested_by} must be an active finance actor")


def _reversed_lines(changes: Changes, p: RecordCorrectionPayload) -> tuple[list[dict], tuple[str, int] | None]:
    """The lines to reverse, all of one listener-day of the budget, and that listener-day."""
    lines = [_reversible(changes, line_id, p.budget_id) for line_id in p.reverses]
    listener_days = sorted({(line["listener_id"], line["day"]) for line in lines})
    require(len(listener_days) <= 1, ErrorCode.INVALID_REFERENCE, "a correction reverses lines of one listener-day")
    for replacement in p.replacements:
        require(replacement.role == PORTO or changes.get(STATE, recipient_key(replacement.recipient_id)) is not None,
                ErrorCode.INVALID_REFERENCE, f"recipient {replacement.recipient_id} does not exist")
    return lines, listener_days[0] if listener_days else None


def _amounts(changes: Changes, p: RecordCorrectionPayload, old: list[PlannedLine],
             new: list[PlannedLine]) -> dict[str, int]:
    """Where the reversed amount goes: replacements, back to unallocated (released), or out (refunded)."""
    unallocated = parse_amount(load_budget(changes, p.budget_id)["unallocated"])
    require(p.refund_unallocated <= unallocated, ErrorCode.INSUFFICIENT_FUNDS,
            f"budget {p.budget_id} has {unallocated} unallocated, less than the {p.refund_unallocated} to refund")
    reversed_amount, replaced = checked_sum(l.amount for l in old), checked_sum(l.amount for l in new)
    require(replaced <= reversed_amount, ErrorCode.INVALID_STATE,
            f"replacements total {replaced}, more than the {reversed_amount} reversed")
    remainder = reversed_amount - replaced
    released = remainder if p.remainder_to == "unallocated" else 0
    return {"reversed": reversed_amount, "replaced": replaced, "released": released,
            "refunded": remainder - released + p.refund_unallocated, "refunded_unallocated": p.refund_unallocated}


def _reversible(changes: Changes, line_id: str, budget_id: str) -> dict:
    line = load_line(changes, line_id)
    require(line["budget_id"] == budget_id, ErrorCode.INVALID_REFERENCE,
            f"allocation line {line_id} belongs to budget {line['budget_id']}, not {budget_id}")
    reversible = line["status"] == "payable" or (line["role"] == PORTO and line["status"] == "paid")
    require(reversible, ErrorCode.INVALID_STATE,
            f"allocation line {line_id} is {line['status']}: only payable lines and Porto's share can be reversed")
    return line


def _move_terms(changes: Changes, budget_id: str, old: list[PlannedLine], new: list[PlannedLine],
                released: int, refund_unallocated: int) -> None:
    """Reversals pass through ``refunds_reversals``: what is replaced or released leaves it again."""
    for term, amount in sorted(term_totals(old).items()):
        move_budget(changes, budget_id, term, "refunds_reversals", amount)
    for term, amount in sorted(term_totals(new).items()):
        move_budget(changes, budget_id, "refunds_reversals", term, amount)
    move_budget(changes, budget_id, "refunds_reversals", "unallocated", released)
    move_budget(changes, budget_id, "unallocated", "refunds_reversals", refund_unallocated)


def _debit_lines(lines: list[PlannedLine]) -> list[Line]:
    return [debit(line.account, line.amount) for line in credit_lines(lines)]

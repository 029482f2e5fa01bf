"""Corrections of allocation lines: one finance user requests, another approves or declines.

The request's correction ID derives from its form's command ID
(``correction-<command ID>``) and its replacement lines are numbered after it,
so a retried form requests nothing twice. Approval restates the request hash
the approver was shown: the ledger refuses any other content.

Finance chooses lines and types amounts in USDC; ``minor_units`` turns each
amount into the ledger's integer minor units exactly (integer arithmetic), and
``in_words`` turns the ledger's refusals of a request into what to change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import get_args

from ledger_engine.amounts import U64_MAX, format_amount
from ledger_engine.domain.allocation_policy import split_by_rights
from ledger_engine.domain.commands.money.allocation import MAX_LINES
from ledger_engine.domain.commands.money.budgets import BUDGET_ASSET
from ledger_engine.domain.commands.money.corrections import DeclineReason, Reason
from ledger_engine.domain.ruleset import ASSETS
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.open_json import Report, Unvalidated
from ledger_engine.selectors import budget_queries, correction_choices, correction_queries, payout_queries
from ledger_engine.selectors.correction_choices import ActiveWork, LineChoice
from ledger_engine.selectors.view import LedgerView
from porto_console.console.commands import CommandRequest
from porto_console.console.services.accounting import formatted

STATUSES = ("requested", "approved", "declined")
REASONS = get_args(Reason)
DECLINE_REASONS = get_args(DeclineReason)


def correction_id_for(command_id: str) -> str:
    return f"correction-{command_id}"


def correction(view: LedgerView, correction_id: str) -> Report | None:
    """The request as frozen, and each line it names as it is now."""
    request = correction_queries.request(view, correction_id)
    if request is None:
        return None
    return {"correction": request, "lines_now": correction_queries.lines_now(view, request)}


def request_correction(command_id: str, budget_id: str, reason: str, reverses: list[str],
                       replacements: list[Unvalidated], remainder_to: str, refund_unallocated: str) -> CommandRequest:
    correction_id = correction_id_for(command_id)
    numbered = [{**replacement, "line_id": f"{correction_id}-{number}"}
                for number, replacement in enumerate(replacements, start=1)]
    return CommandRequest("RequestCorrection", {
        "correction_id": correction_id, "budget_id": budget_id, "reason": reason, "reverses": sorted(set(reverses)),
        "replacements": numbered, "remainder_to": remainder_to, "refund_unallocated": refund_unallocated})


def approve(correction_id: str, seen_hash: str) -> CommandRequest:
    return CommandRequest("DecideCorrection", {"correction_id": correction_id, "request_hash": seen_hash,
                                               "action": "approve"})


def decline(view: LedgerView, correction_id: str, reason: str) -> CommandRequest:
    request = correction_queries.request(view, correction_id)
    if request is None:
        raise LedgerError(ErrorCode.NOT_FOUND, f"correction {correction_id} does not exist")
    return CommandRequest("DecideCorrection", {"correction_id": correction_id,
                                               "request_hash": request["request_hash"], "action": "decline",
                                               "decline_reason": reason})


# Choosing what to correct.

ASSET = BUDGET_ASSET
PLACES = ASSETS[ASSET]
REMAINDER_TO = (("refund", "out as a refund"), ("unallocated", "back to the budget"))
AMOUNT_TEXT = re.compile(r"([0-9]*)(?:\.([0-9]*))?")


@dataclass(frozen=True)
class Choices:
    """What one request form offers: the budgets, the chosen budget's listener-days, and the lines of the chosen
    one; the active works, nodes and recipients replacements may name; whether the budget was refunded."""

    budget_ids: list[str]
    days: list[tuple[str, int]]
    lines: list[LineChoice]
    works: dict[str, ActiveWork]
    nodes: dict[str, str]
    recipient_ids: list[str]
    refunded: bool

    def line(self, line_id: str) -> LineChoice:
        """An offered line: the request form accepts no other."""
        return next(choice for choice in self.lines if choice.line["line_id"] == line_id)


def choices(view: LedgerView, budget_id: str | None, listener_day: tuple[str, int] | None) -> Choices:
    budget_ids = budget_queries.budget_ids(view)
    chosen = budget_id if budget_id in budget_ids else None
    days = correction_choices.correctable_days(view, chosen) if chosen else []
    lines = (correction_choices.listener_day_lines(view, chosen, *listener_day)
             if chosen and listener_day is not None else [])
    return Choices(budget_ids, days, lines, {work.work_id: work for work in correction_choices.active_works(view)},
                   correction_choices.node_operators(view),
                   sorted(recipient["recipient_id"] for recipient in payout_queries.recipients(view)),
                   chosen is not None and correction_choices.budget_refunded(view, chosen))


def remainder_choices(refunded: bool) -> tuple[tuple[str, str], ...]:
    """Where what is reversed and not replaced may go: only out as a refund from a refunded budget, which the
    ledger refuses to take anything back into."""
    return REMAINDER_TO[:1] if refunded else REMAINDER_TO


# Amounts in USDC.

def minor_units(text: str, *, zero: bool = False) -> int:
    """``"1.25"`` USDC as ``1250000`` minor units, exactly; ValueError saying what to type otherwise."""
    text = text.strip()
    if text.startswith("-"):
        raise ValueError("Enter a positive amount: a correction line cannot be negative.")
    match = AMOUNT_TEXT.fullmatch(text)
    if not text or match is None or not (match[1] or match[2]):
        raise ValueError(f"Enter the amount in {ASSET} as digits with one decimal point, for example 1.25.")
    fraction = match[2] or ""
    if len(fraction) > PLACES:
        raise ValueError(f"{ASSET} has {PLACES} decimal places: enter at most {PLACES} digits after the point.")
    units = int(match[1] or "0") * 10**PLACES + int(fraction.ljust(PLACES, "0"))
    if units > U64_MAX:
        raise ValueError(f"Enter a smaller amount: at most {decimal_text(U64_MAX)} {ASSET}.")
    if units == 0 and not zero:
        raise ValueError("Enter an amount above zero; remove the row to replace nothing.")
    return units


def decimal_text(units: int) -> str:
    """Minor units as the shortest decimal in the asset's unit: ``1250000`` -> ``1.25``."""
    whole, fraction = divmod(units, 10**PLACES)
    return f"{whole}.{fraction:0{PLACES}d}".rstrip("0").rstrip(".")


def usdc(units: int) -> str:
    return formatted(units, ASSET)


# Replacement rows.

def split_rows(work: ActiveWork, total: int) -> list[Unvalidated]:
    """Artist rows that split ``total`` of ``work`` as its current rights version splits it (as allocation and
    the ledger's INVALID_SPLITS check do); recipients whose part is zero get no row."""
    return [{"role": "artist", "recipient_id": recipient_id, "work_id": work.work_id,
             "rights_version": work.rights_version, "amount": decimal_text(part)}
            for recipient_id, part in split_by_rights(total, work.splits) if part]


def replacement(row: Unvalidated) -> Unvalidated:
    """A row (amount in minor units) as the command's replacement line, before it is numbered."""
    references = (("recipient_id", "work_id", "rights_version") if row["role"] == "artist"
                  else ("recipient_id", "node_id"))
    return {"role": row["role"], **{name: row[name] for name in references}, "amount": format_amount(row["amount"])}


# The ledger's refusals of a request, in words.

@dataclass(frozen=True)
class Problem:
    """What to change, with the code for support; ``row`` and ``field`` say where, when they are known."""

    message: str
    row: int | None = None
    field: str | None = None


def in_words(code: str, detail: str, rows: list[Unvalidated], works: dict[str, ActiveWork]) -> Problem:
    """The ledger's refusal of a request (``code`` with its ``detail``) as what to change in the form."""
    problem = _problem(code, detail, rows, works)
    return Problem(f"{problem.message} ({code})", problem.row, problem.field)


def _problem(code: str, detail: str, rows: list[Unvalidated], works: dict[str, ActiveWork]) -> Problem:
    row = _row_of(detail)
    if code == ErrorCode.INVALID_AMOUNT:
        if detail.startswith("refund_unallocated"):
            return Problem("Enter the amount to refund from the budget in USDC, for example 1.25, or 0.",
                           field="refund_unallocated")
        return Problem("Enter the amount in USDC above zero, for example 1.25.", row, "amount")
    if code == ErrorCode.INVALID_SPLITS:
        return _splits_problem(detail, rows, works)
    if code == ErrorCode.INSUFFICIENT_FUNDS:
        return Problem("The budget has less unallocated than you asked to refund from it: lower that amount.",
                       field="refund_unallocated")
    if code == ErrorCode.INVALID_STATE:
        return _state_problem(detail)
    if code == ErrorCode.INVALID_REFERENCE:
        return _reference_problem(detail, rows)
    if code == ErrorCode.INVALID_PAYLOAD:
        return _payload_problem(detail, row)
    return Problem(f"The ledger refused the request: {detail}")


def _row_of(detail: str) -> int | None:
    found = re.match(r"replacements\.([0-9]+)", detail)
    return int(found[1]) if found else None


def _splits_problem(detail: str, rows: list[Unvalidated], works: dict[str, ActiveWork]) -> Problem:
    twice = re.search(r"names recipient (\S+) in two replacement lines", detail)
    if twice:
        return Problem(f"Recipient {twice[1]} has two rows for one work: give each recipient one row.",
                       _first_row(rows, recipient_id=twice[1]), "recipient_id")
    for work_id, total, expected in _expected_splits(rows, works):
        if expected != {row["recipient_id"]: row["amount"] for row in rows if row.get("work_id") == work_id}:
            split = ", ".join(f"{recipient} {usdc(amount)}" for recipient, amount in expected.items())
            return Problem(f"The artist rows for {work_id} must split their {usdc(total)} as its rights version "
                           f"{works[work_id].rights_version} splits it: {split}. Use “Split as the current rights "
                           "version splits” to fill them.", _first_row(rows, work_id=work_id), "amount")
    return Problem("The artist rows of a work must split their total as its current rights version splits it. "
                   "Use “Split as the current rights version splits” to fill them.")


def _expected_splits(rows: list[Unvalidated], works: dict[str, ActiveWork]):
    totals: dict[str, int] = {}
    for row in rows:
        if row["role"] == "artist" and row.get("work_id") in works:
            totals[row["work_id"]] = totals.get(row["work_id"], 0) + row["amount"]
    for work_id, total in sorted(totals.items()):
        yield work_id, total, {recipient: part for recipient, part in
                               split_by_rights(total, works[work_id].splits) if part}


def _first_row(rows: list[Unvalidated], **matching: str) -> int | None:
    return next((number for number, row in enumerate(rows)
                 if all(row.get(name) == value for name, value in matching.items())), None)


def _state_problem(detail: str) -> Problem:
    if "was refunded" in detail:
        return Problem("This budget was refunded: what you do not replace must go out as a refund.",
                       field="remainder_to")
    if "more than the" in detail:
        return Problem("The replacement rows total more than the lines you reverse: lower their amounts.",
                       field="replacements")
    found = re.match(r"allocation line (\S+) is (?:held for correction (\S+)|([a-z_]+))", detail)
    if found:
        why = f"held for correction {found[2]}" if found[2] else found[3]
        return Problem(f"Line {found[1]} can no longer be reversed (it is {why}): choose the listener-day again.",
                       field="reverses")
    return Problem(f"The ledger's state does not allow this request now: {detail}")


def _reference_problem(detail: str, rows: list[Unvalidated]) -> Problem:
    node = re.match(r"node (\S+) is not operated by (\S+)", detail)
    if node:
        return Problem(f"Node {node[1]} is not operated by {node[2]}: choose the node's operator as recipient.",
                       _first_row(rows, node_id=node[1]), "recipient_id")
    work = re.match(r"work (\S+) (?:does not exist|is )", detail)
    if work:
        return Problem(f"Work {work[1]} is not active at the rights version shown (its rights changed): "
                       "review the rows again.", _first_row(rows, work_id=work[1]), "work_id")
    recipient = re.match(r"recipient (\S+) does not exist", detail)
    if recipient:
        return Problem(f"There is no recipient {recipient[1]}: choose another.",
                       _first_row(rows, recipient_id=recipient[1]), "recipient_id")
    if "one listener-day" in detail or "belongs to budget" in detail:
        return Problem("Choose lines of one listener-day of the chosen budget.", field="reverses")
    return Problem(f"Something the request names does not exist or does not fit: {detail}")


def _payload_problem(detail: str, row: int | None) -> Problem:
    if "reverses lines (and may replace them) or refunds unallocated units" in detail:
        return Problem("Choose at least one line to reverse, or an amount to refund from the budget.",
                       field="reverses")
    if row is not None:
        return Problem("An artist row names a recipient and a work; an operator row a recipient and a node.",
                       row, "role")
    if detail.startswith("reverses") or detail.startswith("replacements"):
        return Problem(f"A correction reverses and replaces at most {MAX_LINES} lines.", field="reverses")
    return Problem("The request could not be read: reload the page and enter it again.")

"""Payments: one recipient's share of a payout run, and the state machine it follows.

docs/spec/domain-model-and-state-machines.md §5:

    prepared -> approved -> signed -> submitted -> confirmed
    branches: held, failed, uncertain, cancelled

- ``approved``: its allocation lines are reserved and its ``payment.transfer``
  effect waits in the outbox.
- ``held``: a recipient update is awaiting approval; no attempt may be signed.
  ``held_for`` says why (``{"reason": "recipient_update_pending", "update_id"}``).
  A payment whose attempt fails while the update is pending is held too.
  Declining the update returns the payment to the state it was held from;
  approving it moves the payment to the new address in a new prepared run.
- ``signed``: an attempt with exact signed bytes is recorded; only now may
  those bytes be broadcast.
- ``uncertain``: the broadcast's answer was lost. Only a chain observation
  resolves it; no fresh attempt is signed meanwhile.
- ``failed``: the chain proved the last attempt cannot succeed. The obligation
  stays reserved and unpaid; the next attempt signs again.
- ``confirmed`` is terminal: lines paid, budget outstanding -> paid, postings. A day line
  (no budget, ledger_engine/domain/day_lines.py) is paid and moves no budget term.
- ``cancelled`` is terminal: reservations released, effect cancelled. Only a
  payment without an unresolved attempt can be cancelled.

A payment is keyed ``payment/<payment_id>``; ``recipient_payment/<recipient>/<payment_id>``
links it to its recipient so a recipient update finds the payments it affects.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterator

from ledger_engine.amounts import checked_sum, parse_amount
from ledger_engine.domain.changes import Changes, require
from ledger_engine.domain.chart import TREASURY, paid, reserved_payouts
from ledger_engine.domain.commands.money import outbox
from ledger_engine.domain.commands.money.allocation import line_account
from ledger_engine.domain.commands.money.lines import load_line, move_budget, set_line_status
from ledger_engine.domain.commands.money.lifecycle import StateMachine, load
from ledger_engine.domain.day_lines import is_day_line, line_budget
from ledger_engine.domain.postings import credit, debit, post
from ledger_engine.domain.schema.money_allocation import AllocationLine, Created
from ledger_engine.domain.schema.money_payouts import (
    NewPayment, Payment, PlannedPayment, payment_key, recipient_link_key,
)
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE

MACHINE = StateMachine("PaymentStateChanged", {
    "prepared": frozenset({"approved", "cancelled"}),
    "approved": frozenset({"signed", "held", "cancelled"}),
    "held": frozenset({"approved", "failed", "cancelled"}),
    "signed": frozenset({"submitted", "uncertain", "confirmed", "failed"}),
    "submitted": frozenset({"confirmed", "failed"}),
    "uncertain": frozenset({"submitted", "confirmed", "failed"}),
    "failed": frozenset({"signed", "held", "cancelled"}),
    "confirmed": frozenset(),
    "cancelled": frozenset(),
})
RESERVED = ("approved", "held", "failed")  # lines reserved, no attempt in flight
IN_FLIGHT = ("signed", "submitted", "uncertain")  # an attempt may still land
UNSIGNED = ("prepared", *RESERVED)
PAID_EVENT = "PaymentPaid"  # the memo of a confirmed payment, per recipient


def amount(payment: PlannedPayment) -> int:
    return parse_amount(payment["amount"])


def load_payment(changes: Changes, payment_id: str) -> Payment:
    return load(changes, payment_key(payment_id), f"payment {payment_id}", Payment)


def payments_of_recipient(changes: Changes, recipient_id: str) -> Iterator[Payment]:
    for link_key, _ in changes.scan(STATE, key("recipient_payment", recipient_id) + "/"):
        yield load_payment(changes, link_key.rsplit("/", 1)[1])


def create_payment(changes: Changes, payment: NewPayment, created_by: Created) -> None:
    changes.put_state(payment_key(payment["payment_id"]), {**payment, "state": "prepared", "held_from": None,
                                                          "held_for": None, "attempt_ids": [], "paid_attempt_id": None,
                                                          "cancel_reason": None, "superseded_by": None,
                                                          "created": created_by})
    changes.put_state(recipient_link_key(payment["recipient_id"], payment["payment_id"]), {"run_id": payment["run_id"]})


def move(changes: Changes, payment: Payment, state: str, **fields: Any) -> Payment:
    """Advance the state machine, rejecting any move docs/spec/domain-model-and-state-machines.md §5 does not allow."""
    subject = {"payment_id": payment["payment_id"], "run_id": payment["run_id"],
               "recipient_id": payment["recipient_id"]}
    return MACHINE.move(changes, payment_key(payment["payment_id"]), payment, state, subject=subject, **fields)


# Money moves: every one changes the lines, the postings and (on payment) the budgets together.

def payable_lines(changes: Changes, payment: NewPayment) -> list[AllocationLine]:
    """The payment's lines, each still payable and owed to its recipient, summing to its amount."""
    lines = [load_line(changes, line_id) for line_id in payment["line_ids"]]
    for line in lines:
        line_id = line["line_id"]
        require(line["status"] != "reserved", ErrorCode.ALREADY_RESERVED, f"allocation line {line_id} is already reserved")
        require(line["status"] != "paid", ErrorCode.ALREADY_PAID, f"allocation line {line_id} is already paid")
        require(line["status"] == "payable", ErrorCode.INVALID_STATE, f"allocation line {line_id} is {line['status']}")
        require(not line.get("pending_correction"), ErrorCode.INVALID_STATE,
                f"allocation line {line_id} is held for correction {line.get('pending_correction')}")
        require(line["recipient_id"] == payment["recipient_id"], ErrorCode.INVALID_REFERENCE,
                f"allocation line {line_id} is owed to {line['recipient_id']}, not {payment['recipient_id']}")
    total = checked_sum(parse_amount(line["amount"]) for line in lines)
    require(total == amount(payment), ErrorCode.INVALID_REFERENCE,
            f"payment {payment['payment_id']} states {payment['amount']} but its lines sum to {total}")
    return lines


def reserve(changes: Changes, payment: Payment) -> None:
    """Payable -> reserved, each line once: Dr <role>_payable, Cr reserved_payouts."""
    lines = payable_lines(changes, payment)
    for line in lines:
        set_line_status(changes, line["line_id"], "payable", "reserved",
                        run_id=payment["run_id"], payment_id=payment["payment_id"])
    recipient = payment["recipient_id"]
    post(changes, journal=f"payment:{payment['payment_id']}:reserve", asset=payment["asset"],
         lines=[*(debit(account, part) for account, part in _by_payable_account(lines)),
                credit(reserved_payouts(recipient), amount(payment))])


def release(changes: Changes, payment: Payment) -> None:
    """Reserved -> payable: Dr reserved_payouts, Cr <role>_payable."""
    lines = [set_line_status(changes, line_id, "reserved", "payable", run_id=None, payment_id=None)
             for line_id in payment["line_ids"]]
    recipient = payment["recipient_id"]
    post(changes, journal=f"payment:{payment['payment_id']}:release", asset=payment["asset"],
         lines=[debit(reserved_payouts(recipient), amount(payment)),
                *(credit(account, part) for account, part in _by_payable_account(lines))])


def settle(changes: Changes, payment: Payment) -> None:
    """Reserved -> paid; each budget's outstanding -> paid (day lines have none); Dr reserved_payouts, Cr treasury."""
    by_budget: dict[str, int] = defaultdict(int)
    for line_id in payment["line_ids"]:
        line = set_line_status(changes, line_id, "reserved", "paid")
        if not is_day_line(line):
            by_budget[line_budget(line)] += parse_amount(line["amount"])
    for budget_id in sorted(by_budget):
        move_budget(changes, budget_id, "outstanding", "paid", by_budget[budget_id])
    recipient = payment["recipient_id"]
    post(changes, journal=f"payment:{payment['payment_id']}:paid", asset=payment["asset"],
         lines=[debit(reserved_payouts(recipient), amount(payment)), credit(TREASURY, amount(payment))])
    changes.event(PAID_EVENT, payment_id=payment["payment_id"], recipient_id=recipient,
                  asset=payment["asset"], amount=payment["amount"], memo_account=paid(recipient))


def _by_payable_account(lines: list[AllocationLine]) -> list[tuple[str, int]]:
    totals: dict[str, int] = defaultdict(int)
    for line in lines:
        totals[line_account(line["role"], line["recipient_id"])] += parse_amount(line["amount"])
    return sorted(totals.items())


# Whole-payment moves shared by runs and recipient updates.

def cancel(changes: Changes, payment: Payment, reason: str, **fields: Any) -> Payment:
    """Cancel a payment that has no attempt in flight, releasing whatever it reserved."""
    if payment["state"] in RESERVED:
        release(changes, payment)
        outbox.cancel(changes, payment["effect_id"], reason)
    return move(changes, payment, "cancelled", cancel_reason=reason, held_from=None, held_for=None, **fields)


def hold(changes: Changes, payment: Payment, update_id: str) -> Payment:
    return move(changes, payment, "held", held_from=payment["state"],
                held_for={"reason": "recipient_update_pending", "update_id": update_id})


def resume(changes: Changes, payment: Payment) -> Payment:
    held_from = payment["held_from"]
    assert held_from is not None, f"payment {payment['payment_id']} is {payment['state']}, not held"
    return move(changes, payment, held_from, held_from=None, held_for=None)

"""An independent payout oracle: lines, payments, attempts, budgets and postings must tell one story.

Every account is refolded from the ``Posted`` events and compared with what
the allocation lines say it should hold; every payment's state with its
lines and attempts; the paid memo with the paid lines. The conservation
checker's full check runs alongside.
"""

from __future__ import annotations

from collections import defaultdict

import orjson

from ledger_engine.domain.chart import PORTO_RETAINED, TREASURY
from ledger_engine.domain.commands.money.payments import IN_FLIGHT, PAID_EVENT, RESERVED
from ledger_engine.layout import EVENTS
from ledger_engine.selectors.money_queries import conservation_report
from tests.money_allocation.oracle import posted_net_credits, records


def payout_problems(owner) -> list[str]:
    problems = [f"checker: {m.subject} {m.check}: {m.detail}" for m in conservation_report(owner.view())]
    lines = {line["line_id"]: line for line in records(owner, "allocation_line/")}
    payments = {payment["payment_id"]: payment for payment in records(owner, "payment/")}
    attempts = records(owner, "payment_attempt/")
    problems += _account_problems(owner, lines.values())
    problems += _payment_problems(lines, payments, attempts)
    problems += _memo_problems(owner, lines.values())
    return problems


def _account_problems(owner, lines) -> list[str]:
    expected: dict[str, int] = defaultdict(int)
    expected[TREASURY] = -sum(int(lot["received"]) for lot in records(owner, "lot/"))
    for line in lines:
        amount, recipient = int(line["amount"]), line["recipient_id"]
        if line["role"] == "porto":
            expected[PORTO_RETAINED] += amount if line["status"] == "paid" else 0
        elif line["status"] == "payable":
            expected[f"{line['role']}_payable:{recipient}"] += amount
        elif line["status"] == "reserved":
            expected[f"reserved_payouts:{recipient}"] += amount
        elif line["status"] == "paid":
            expected[TREASURY] += amount
    net = posted_net_credits(owner)
    accounts = set(expected) | {a for a in net if a.split(":")[0] in ("artist_payable", "operator_payable", "reserved_payouts")}
    return [f"{account}: posted {net.get(account, 0)}, lines say {expected.get(account, 0)}"
            for account in sorted(accounts) if net.get(account, 0) != expected.get(account, 0)]


def _payment_problems(lines, payments, attempts) -> list[str]:
    problems = []
    by_payment = defaultdict(list)
    for attempt in attempts:
        by_payment[attempt["payment_id"]].append(attempt)
    for payment_id, payment in payments.items():
        state, own = payment["state"], [lines[line_id] for line_id in payment["line_ids"]]
        confirmed = [a["attempt_id"] for a in by_payment[payment_id] if a["outcome"] == "confirmed"]
        unresolved = [a["attempt_id"] for a in by_payment[payment_id] if a["outcome"] in ("pending", "submitted")]
        if state == "confirmed":
            expected_lines = ("paid", payment_id)
            if confirmed != [payment["paid_attempt_id"]]:
                problems.append(f"{payment_id}: confirmed by {payment['paid_attempt_id']}, attempts say {confirmed}")
        else:
            expected_lines = ("reserved", payment_id) if state in RESERVED + IN_FLIGHT else None
            if confirmed:
                problems.append(f"{payment_id}: {state} but attempts {confirmed} are confirmed")
        if len(unresolved) > (1 if state in IN_FLIGHT else 0):
            problems.append(f"{payment_id}: {state} with unresolved attempts {unresolved}")
        for line in own:
            if expected_lines and (line["status"], line["payment_id"]) != expected_lines:
                problems.append(f"{payment_id} ({state}): line {line['line_id']} is {line['status']} for {line['payment_id']}")
            if not expected_lines and line["payment_id"] == payment_id:
                problems.append(f"{payment_id} ({state}): line {line['line_id']} still names it")
    for line in lines.values():
        owner_state = payments.get(line["payment_id"], {}).get("state")
        if line["status"] == "reserved" and owner_state not in RESERVED + IN_FLIGHT:
            problems.append(f"line {line['line_id']} is reserved for a {owner_state} payment")
        if line["status"] == "paid" and line["role"] != "porto" and owner_state != "confirmed":
            problems.append(f"line {line['line_id']} is paid by a {owner_state} payment")
    return problems


def _memo_problems(owner, lines) -> list[str]:
    memo, paid = defaultdict(int), defaultdict(int)
    for _, raw in owner.store.scan(EVENTS):
        event = orjson.loads(raw)
        if event["type"] == PAID_EVENT:
            memo[event["recipient_id"]] += int(event["amount"])
    for line in lines:
        if line["status"] == "paid" and line["role"] != "porto":
            paid[line["recipient_id"]] += int(line["amount"])
    return [f"paid memo for {recipient}: {memo[recipient]}, paid lines {paid[recipient]}"
            for recipient in sorted(set(memo) | set(paid)) if memo[recipient] != paid[recipient]]

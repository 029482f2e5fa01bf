"""An independent conservation oracle: every record and every posting, folded from scratch.

It recomputes each account from the ``Posted`` events and compares it with
what the budget, lot and line records say, alongside the checker's own full
check. It assumes no payout commands have run (nothing reserved or transferred).
"""

from __future__ import annotations

from collections import defaultdict

import orjson

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.chart import CORRECTIONS, FUNDING_AVAILABLE, PORTO_RETAINED, TREASURY
from ledger_engine.domain.postings import POSTED
from ledger_engine.layout import EVENTS, STATE
from ledger_engine.projections.money_queries import conservation_report


def posted_net_credits(owner: LedgerOwner) -> dict[str, int]:
    """Credits less debits per USDC account; every ``Posted`` event, in any asset, must balance."""
    net: dict[str, int] = defaultdict(int)
    for _, raw in owner.store.scan(EVENTS):
        event = orjson.loads(raw)
        if event["type"] != POSTED:
            continue
        sides = defaultdict(int)
        for line in event["lines"]:
            sides[line["side"]] += int(line["amount"])
            if event["asset"] == "USDC":
                net[line["account"]] += int(line["amount"]) * (1 if line["side"] == "credit" else -1)
        assert sides["debit"] == sides["credit"], event
    return net


def records(owner: LedgerOwner, prefix: str) -> list[dict]:
    return [orjson.loads(raw)["data"] for _, raw in owner.store.scan(STATE, prefix.encode())]


def conservation_problems(owner: LedgerOwner) -> list[str]:
    problems = [f"checker: {m.subject} {m.check}: {m.detail}" for m in conservation_report(owner.store)]
    net = posted_net_credits(owner)
    lots, budgets, lines = records(owner, "lot/"), records(owner, "budget/"), records(owner, "allocation_line/")
    corrections = records(owner, "correction/")

    def expect(account: str, amount: int) -> None:
        if net.get(account, 0) != amount:
            problems.append(f"{account}: posted {net.get(account, 0)}, records say {amount}")

    expect(TREASURY, -sum(int(lot["received"]) for lot in lots))
    expect(FUNDING_AVAILABLE, sum(int(lot["received"]) - int(lot["allocated"]) for lot in lots))
    for budget in budgets:
        expect(f"budget_unallocated:{budget['budget_id']}", int(budget["unallocated"]))
        funding = int(budget["funded"]) + int(budget["additions"])
        holding = sum(int(budget[t]) for t in ("unallocated", "outstanding", "paid", "refunds_reversals"))
        if funding != holding:
            problems.append(f"budget {budget['budget_id']}: {funding} funded, {holding} held")
    owed = defaultdict(int)
    for line in lines:
        if line["status"] == "payable":
            owed[f"{line['role']}_payable:{line['recipient_id']}"] += int(line["amount"])
        elif line["status"] == "paid":
            assert line["role"] == "porto", line
            owed[PORTO_RETAINED] += int(line["amount"])
    for account in sorted(set(owed) | {a for a in net if "_payable:" in a} | {PORTO_RETAINED}):
        expect(account, owed.get(account, 0))
    expect(CORRECTIONS, sum(int(c["refunded"]) for c in corrections))
    return problems

"""Independent oracles: conservation folded from scratch, and london-1 written from docs/spec/allocation-policy.md.

``conservation_problems`` recomputes each account from the ``Posted`` events
and compares it with what the budget, lot and line records say, alongside the
checker's own full check. It assumes no payout commands have run (nothing
reserved or transferred).

``london_1_lines`` is the allocation of one listener-day written again from the
specification text, sharing no code with ``ledger_engine.domain.allocation_policy``:
exact rational quotas (``fractions.Fraction``) instead of integer divmod,
listening split by (work, rights version) as recorded.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

import orjson

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.chart import CORRECTIONS, FUNDING_AVAILABLE, PORTO_RETAINED, SUBSCRIPTION_REFUNDS, TREASURY
from ledger_engine.domain.postings import POSTED
from ledger_engine.layout import EVENTS, STATE
from ledger_engine.selectors.money_queries import conservation_report


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
    problems = [f"checker: {m.subject} {m.check}: {m.detail}" for m in conservation_report(owner.view())]
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
        holding = sum(int(budget.get(t, 0)) for t in ("unallocated", "outstanding", "paid", "refunds_reversals",
                                                      "frozen"))
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
    expect(SUBSCRIPTION_REFUNDS, sum(int(refund["amount"]) for refund in records(owner, "budget_refund/")))
    return problems


# london-1, from docs/spec/allocation-policy.md §3.

OPERATOR_POOL_BPS, PORTO_RETAINED_BPS = 1500, 1000


def largest_remainder_oracle(total: int, weights: dict) -> dict:
    """Quota total*w/W for each ID; floors first, then one unit each to the largest remainders, ties to the lower ID."""
    whole = sum(weights.values())
    quotas = {identifier: Fraction(total * weight, whole) for identifier, weight in weights.items()}
    parts = {identifier: quota.numerator // quota.denominator for identifier, quota in quotas.items()}
    left_over = total - sum(parts.values())
    by_remainder = sorted(weights, key=lambda identifier: (-(quotas[identifier] - parts[identifier]), identifier))
    for identifier in by_remainder[:left_over]:
        parts[identifier] += 1
    return parts


def london_1_lines(slice_amount: int, works: list[dict], nodes: list[dict]) -> list[tuple]:
    """One listener-day: ``(role, recipient, work, rights version, node, amount)`` in canonical output order.

    ``works`` are ``{"work_id", "rights_version", "listened_ms", "splits": {recipient: bps}}``;
    ``nodes`` are ``{"node_id", "operator_id", "served_bytes"}``.
    """
    served = {node["node_id"]: node["served_bytes"] for node in nodes}
    operator_bps = OPERATOR_POOL_BPS if sum(served.values()) else 0
    pools = largest_remainder_oracle(slice_amount, {"operator": operator_bps, "porto": PORTO_RETAINED_BPS,
                                                    "rights": 10_000 - operator_bps - PORTO_RETAINED_BPS})
    heard = {(work["work_id"], work["rights_version"]): work for work in works}
    per_rights = largest_remainder_oracle(pools["rights"], {rights: work["listened_ms"] for rights, work in heard.items()})
    lines = []
    for rights in sorted(heard):
        shares = largest_remainder_oracle(per_rights[rights], heard[rights]["splits"])
        lines += [("artist", recipient, rights[0], rights[1], None, shares[recipient]) for recipient in sorted(shares)]
    if operator_bps:
        per_node = largest_remainder_oracle(pools["operator"], served)
        operators = {node["node_id"]: node["operator_id"] for node in nodes}
        lines += [("operator", operators[node], None, None, node, per_node[node]) for node in sorted(per_node)]
    lines.append(("porto", None, None, None, None, pools["porto"]))
    return [line for line in lines if line[-1]]


def recorded_lines(owner: LedgerOwner, line_ids: list[str]) -> list[tuple]:
    """The ledger's allocation lines in the same shape as ``london_1_lines``."""
    return [oracle_shape(orjson.loads(owner.store.get(STATE, f"allocation_line/{line_id}".encode()))["data"])
            for line_id in line_ids]


def oracle_shape(line: dict) -> tuple:
    """A stored line's fields (a line record's, or an artifact's) as ``london_1_lines`` gives them."""
    return (line["role"], line["recipient_id"], line.get("work_id"), line.get("rights_version"), line.get("node_id"),
            int(line["amount"]))

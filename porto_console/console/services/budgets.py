"""Budgets and balances: each budget's conservation equation with its terms, and what each recipient is owed."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Iterator

from ledger_engine.amounts import checked_sum, parse_amount
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.commands.money.lines import FUNDING_TERMS, HOLDING_TERMS
from ledger_engine.keys import key
from ledger_engine.layout import INDEXES
from porto_console.console.services.rows import rows

LINE_COLUMNS = ("payable", "reserved", "paid")


def budgets(ledger: LedgerOwner, *, balanced: str = "") -> Iterator[dict[str, Any]]:
    """Budgets with both sides of ``funded + additions == unallocated + outstanding + paid + refunds_reversals``."""
    for index_key, summary in rows(ledger, INDEXES, key("budget_summary") + "/"):
        if balanced and summary["balanced"] != (balanced == "yes"):
            continue
        yield {"budget_id": index_key.rsplit("/", 1)[1], **summary,
               "funding": [(term, summary[term]) for term in FUNDING_TERMS],
               "holding": [(term, summary[term]) for term in HOLDING_TERMS],
               "funding_total": str(checked_sum(parse_amount(summary[term]) for term in FUNDING_TERMS)),
               "holding_total": str(checked_sum(parse_amount(summary[term]) for term in HOLDING_TERMS))}


def recipient_balances(ledger: LedgerOwner) -> list[dict[str, Any]]:
    """Per recipient: allocation lines payable, reserved in approved runs, and paid; by recipient ID."""
    totals: dict[str, Counter] = defaultdict(Counter)
    for index_key, line in rows(ledger, INDEXES, key("recipient_line") + "/"):
        if line["status"] in LINE_COLUMNS:
            totals[index_key.split("/")[1]][line["status"]] += parse_amount(line["amount"])
    return [{"recipient_id": recipient_id, **{column: str(totals[recipient_id][column]) for column in LINE_COLUMNS}}
            for recipient_id in sorted(totals)]

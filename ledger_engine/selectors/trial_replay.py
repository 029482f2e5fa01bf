"""The trial balance at a sequence recomputed from the journal's own posting events (docs/adr/0059).

``accounting.trial_balance`` folds the posting index from each account's nearest balance point; this
replays every ``Posted`` event of entries 1 to N instead, reading neither the posting index nor the
points, so the two agreeing shows the fast answer is the journal's. It reads every event up to N.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import orjson

from ledger_engine.amounts import parse_amount
from ledger_engine.domain.postings import POSTED
from ledger_engine.keys import seq20
from ledger_engine.layout import EVENTS
from ledger_engine.selectors.accounting import TrialBalance, TrialBalanceRow, tally
from ledger_engine.selectors.view import LedgerView

POSTED_MARK = orjson.dumps(POSTED)  # an event without it posts nothing, so it is not parsed


@dataclass(frozen=True)
class Comparison:
    sequence: int
    differences: list[str]  # ``asset account`` whose debits or credits differ

    @property
    def agrees(self) -> bool:
        return not self.differences


def replayed_trial_balance(view: LedgerView, at_sequence: int) -> TrialBalance:
    """Every account's debits and credits from the posting events of entries 1 to ``at_sequence``."""
    sides: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: {"debit": 0, "credit": 0})
    last_key = seq20(at_sequence).encode() + b"/\xff"
    for raw_key, raw in view.scan(EVENTS, b""):
        if raw_key > last_key:
            break
        if POSTED_MARK not in raw:
            continue
        event = orjson.loads(raw)
        if event["type"] == POSTED:
            for line in event["lines"]:
                sides[(event["asset"], line["account"])][line["side"]] += parse_amount(line["amount"])
    rows = [TrialBalanceRow(asset, account, side["debit"], side["credit"])
            for (asset, account), side in sorted(sides.items())]
    return tally(at_sequence, rows)


def compare(folded: TrialBalance, view: LedgerView) -> Comparison:
    """``folded`` against the replay of the journal up to its sequence, account by account."""
    replayed = replayed_trial_balance(view, folded.sequence)
    figures = {(row.asset, row.account): (row.debits, row.credits) for row in folded.rows}
    again = {(row.asset, row.account): (row.debits, row.credits) for row in replayed.rows}
    differences = [f"{asset} {account}" for asset, account in sorted(figures.keys() | again.keys())
                   if figures.get((asset, account)) != again.get((asset, account))]
    return Comparison(folded.sequence, differences)

"""Template context for every page: the ledger's genesis label, whether it is demo data, and recipients' names."""

from __future__ import annotations

from ledger_engine.demo import DEMO_LABEL
from ledger_engine.selectors import account_queries
from porto_console.ledger import owner, read_settled


def ledger_label(request) -> dict[str, object]:
    label = owner().genesis()["label"]
    return {"ledger_label": label, "demo_data": label == DEMO_LABEL}


class DisplayNames:
    """Recipients' display names, each read from the ledger the first time a page asks for it, then kept for
    that page: a screen that names no recipient reads none."""

    def __init__(self) -> None:
        self._known: dict[str, str | None] = {}

    def of(self, account_id: str) -> str | None:
        if account_id not in self._known:
            names = read_settled(lambda view: account_queries.display_names(view, [account_id]))
            self._known[account_id] = names.get(account_id)
        return self._known[account_id]


def display_names(request) -> dict[str, object]:
    return {"display_names": DisplayNames()}

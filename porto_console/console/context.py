"""Template context for every page: the ledger's genesis label, and whether it is demo data."""

from __future__ import annotations

from ledger_engine.demo import DEMO_LABEL
from porto_console.ledger import owner


def ledger_label(request) -> dict[str, object]:
    label = owner().genesis()["label"]
    return {"ledger_label": label, "demo_data": label == DEMO_LABEL}

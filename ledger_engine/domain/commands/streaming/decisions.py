"""Receipt decisions: an append-only chain of revisions per receipt.

Revision 1 is the disposition given when the receipt is recorded; each later
revision (a hold decided) links its predecessor. A receipt record itself never
changes. The current decision is the chain's last revision, projected into the
``decision_current`` index.
"""

from __future__ import annotations

from ledger_engine.domain.schema.streaming import decision_key
from ledger_engine.domain.registry import RuleContext
from ledger_engine.domain.schema.streaming import Disposition, Receipt

COUNTED = ("accepted", "partial")


def record_decision(ctx: RuleContext, receipt: Receipt, *, revision: int, disposition: Disposition,
                    reasons: list[str], decision: str | None = None, decision_reason: str | None = None) -> None:
    ctx.changes.put_state(decision_key(receipt["receipt_id"], revision), {
        "receipt_id": receipt["receipt_id"],
        "session_id": receipt["session_id"],
        "revision": revision,
        "predecessor": decision_key(receipt["receipt_id"], revision - 1) if revision > 1 else None,
        "disposition": disposition,
        "hold_reasons": reasons,
        "decision": decision,
        "decision_reason": decision_reason,
        "actor_id": ctx.actor_id,
        "decided_at_ms": ctx.now_ms,
        "sequence": ctx.sequence,
    })
    ctx.changes.event("ReceiptDecided", receipt_id=receipt["receipt_id"], session_id=receipt["session_id"],
                      revision=revision, disposition=disposition, hold_reasons=reasons)

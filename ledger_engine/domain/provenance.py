"""Provenance of material records (docs/spec/domain-model-and-state-machines.md §1).

Each material money record stores, besides its schema version (the record
envelope's ``v``), where it came from, ``created``:
``{"command_id", "sequence", "at_ms"}``: the command that created it, the
sequence it was committed at and its admission time; and a ``correlation_id``
naming the business flow it belongs to, shared by every record of that flow:

| record | correlation ID |
|---|---|
| funding lot | ``lot:<lot_id>`` |
| budget, budget refund | ``period:<period_id>`` |
| allocation line | ``allocation:<listener>:<day>`` (its allocation journal), or ``correction:<id>`` |
| correction request, correction | ``correction:<id>`` |
| batch, statement | ``batch:<batch_id>`` (a correction batch: its parent's; a statement: its index batch's) |
| payout run, its payments, their attempts | ``payout_run:<first run>``: a run re-prepared after a recipient update keeps its original run's |
| recipient update | ``recipient_update:<update_id>`` |
"""

from __future__ import annotations

from ledger_engine.domain.registry import RuleContext
from ledger_engine.domain.schema.money_allocation import Created


def created(ctx: RuleContext) -> Created:
    return {"command_id": ctx.command_id, "sequence": ctx.sequence, "at_ms": ctx.now_ms}

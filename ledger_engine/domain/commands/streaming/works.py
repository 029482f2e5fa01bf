"""DisableWork: withdraw a work from streaming.

A withdrawn work opens no session and issues no grant; evidence already
recorded for it stays as it is. ``ActivateWork`` with the next rights version
brings it back, as it does for an imported work.
"""

from __future__ import annotations


from ledger_engine.domain.changes import require
from ledger_engine.domain.commands.streaming.checks import existing, require_evidence, require_stated_revision
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.streaming import Work, WithdrawalReason, work_key
from ledger_engine.domain.types import Digest, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.open_json import CommandResult

class DisableWorkPayload(Payload):
    work_id: Identifier
    reason: WithdrawalReason
    evidence_digest: Digest


@command("DisableWork", payload=DisableWorkPayload, roles={"ingest"}, cites_evidence=True)
def disable_work(ctx: RuleContext, p: DisableWorkPayload) -> CommandResult:
    require_stated_revision(ctx, work_key(p.work_id), "withdrawing a work")
    require_evidence(ctx, p.evidence_digest)
    work = existing(ctx, work_key(p.work_id), f"work {p.work_id}", Work)
    require(work["status"] != "withdrawn", ErrorCode.INVALID_STATE, f"work {p.work_id} is already withdrawn")
    withdrawn: Work = {
        **work,
        "status": "withdrawn",
        "last_withdrawal": {"reason": p.reason, "at_ms": ctx.now_ms, "evidence_digest": p.evidence_digest},
    }
    ctx.changes.put_state(work_key(p.work_id), withdrawn)
    ctx.changes.event("WorkWithdrawn", work_id=p.work_id, rights_version=work["rights_version"], reason=p.reason)
    return {"work_id": p.work_id, "status": "withdrawn"}

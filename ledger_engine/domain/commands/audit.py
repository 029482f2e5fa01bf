"""RecordExportAccess: every export of journal data is itself an audited event.

See docs/spec/engine-and-journal.md §9 and docs/spec/domain-model-and-state-machines.md §6.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ledger_engine.domain.changes import require
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.types import Count, Digest, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.open_json import CommandResult


class RecordExportAccessPayload(Payload):
    export_id: Identifier
    file_format: Literal["json", "csv", "checkpoint"]  # checkpoint: ``porto-ledger export``
    first_sequence: Count = Field(ge=1)
    last_sequence: Count = Field(ge=1)
    content_sha256: Digest


@command("RecordExportAccess", payload=RecordExportAccessPayload, roles={"auditor"})
def record_export_access(ctx: RuleContext, p: RecordExportAccessPayload) -> CommandResult:
    require(p.first_sequence <= p.last_sequence < ctx.sequence, ErrorCode.INVALID_REFERENCE,
            f"an export covers committed sequences only: {p.first_sequence}..{p.last_sequence}")
    ctx.changes.claim_unique(key("export", p.export_id), {"actor_id": ctx.actor_id},
                             ErrorCode.ALREADY_EXISTS, f"export {p.export_id} is already recorded")
    ctx.changes.event("ExportAccessed", export_id=p.export_id, actor_id=ctx.actor_id, file_format=p.file_format,
                      first_sequence=p.first_sequence, last_sequence=p.last_sequence,
                      content_sha256=p.content_sha256)
    return {"export_id": p.export_id}

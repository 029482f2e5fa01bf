"""ImportCatalogue and ActivateWork: works, renditions and append-only rights versions.

The records and their keys are in ``domain/schema/streaming.py``; their old names here still resolve. A work
may be imported with a display title, which its record keeps only when given (docs/records/streaming.md).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from ledger_engine.domain.changes import require, require_present
from ledger_engine.domain.display_text import display_text
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema import streaming as schema
from ledger_engine.domain.schema.money_payouts import recipient_key
from ledger_engine.domain.schema.streaming import rendition_key, rights_key, work_key
from ledger_engine.domain.types import BasisPoints, Count, Digest, Identifier, TimestampMs
from ledger_engine.domain.view import shaped, with_fields
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult

TOTAL_BPS = 10_000
MAX_TITLE_CHARS = 200
display_title = display_text("a title", MAX_TITLE_CHARS)

Title = Annotated[str, AfterValidator(display_title)]


class Chunk(Payload):
    index: Count
    start_ms: TimestampMs
    end_ms: TimestampMs
    size_bytes: Count
    sha256: Digest


class Rendition(Payload):
    rendition_id: Identifier
    codec: Identifier
    duration_ms: TimestampMs = Field(gt=0)
    manifest_hash: Digest
    chunks: list[Chunk] = Field(min_length=1, max_length=20_000)

    @model_validator(mode="after")
    def _complete_ordered_coverage(self) -> "Rendition":
        expected_start = 0
        for position, chunk in enumerate(self.chunks):
            if chunk.index != position or chunk.start_ms != expected_start or chunk.end_ms <= chunk.start_ms:
                raise ValueError(f"chunk {position} breaks the ordered coverage of the rendition")
            expected_start = chunk.end_ms
        if expected_start != self.duration_ms:
            raise ValueError("chunks must cover the rendition's whole duration")
        return self


class WorkImport(Payload):
    work_id: Identifier
    metadata_hash: Digest
    licence_ref: Identifier
    renditions: list[Rendition] = Field(min_length=1, max_length=16)
    title: Title | None = None  # absent: the work is shown by its ID alone, as every work imported before titles


class ImportCataloguePayload(Payload):
    import_id: Identifier
    works: list[WorkImport] = Field(min_length=1, max_length=1000)


@command("ImportCatalogue", payload=ImportCataloguePayload, roles={"ingest"})
def import_catalogue(ctx: RuleContext, p: ImportCataloguePayload) -> CommandResult:
    changes = ctx.changes
    changes.claim_unique(key("catalogue_import", p.import_id), {"sequence": ctx.sequence},
                         ErrorCode.ALREADY_EXISTS, f"catalogue import {p.import_id} was already applied")
    for work in p.works:
        require(changes.get(STATE, work_key(work.work_id)) is None,
                ErrorCode.ALREADY_EXISTS, f"work {work.work_id} already exists")
        for rendition in work.renditions:
            require(changes.get(STATE, rendition_key(rendition.rendition_id)) is None,
                    ErrorCode.ALREADY_EXISTS, f"rendition {rendition.rendition_id} already exists")
            stored = shaped({"work_id": work.work_id, **rendition.model_dump(mode="json")}, schema.Rendition)
            changes.put_state(rendition_key(rendition.rendition_id), stored)
        changes.put_state(work_key(work.work_id), imported_work(work, p.import_id))
    work_ids = [work.work_id for work in p.works]
    changes.event("CatalogueImported", import_id=p.import_id, work_ids=work_ids)
    return {"import_id": p.import_id, "work_ids": work_ids}


def imported_work(work: WorkImport, import_id: str) -> schema.Work:
    """A work's record as its import writes it; ``title`` only when given, so works imported without one keep the
    bytes every history before titles recorded."""
    imported: schema.Work = {
        "work_id": work.work_id,
        "status": "imported",
        "metadata_hash": work.metadata_hash,
        "licence_ref": work.licence_ref,
        "rendition_ids": [r.rendition_id for r in work.renditions],
        "rights_version": 0,
        "import_id": import_id,
    }
    if work.title is not None:
        imported["title"] = work.title
    return imported


class RightsRecipient(Payload):
    recipient_id: Identifier
    split_bps: BasisPoints = Field(gt=0)


class RightsVersion(Payload):
    version: Count = Field(ge=1)
    effective_at_ms: TimestampMs
    licence_ref: Identifier
    recipients: list[RightsRecipient] = Field(min_length=1, max_length=64)


class ActivateWorkPayload(Payload):
    work_id: Identifier
    rights: RightsVersion


@command("ActivateWork", payload=ActivateWorkPayload, roles={"ingest"})
def activate_work(ctx: RuleContext, p: ActivateWorkPayload) -> CommandResult:
    changes = ctx.changes
    work = require_present(changes.get(STATE, work_key(p.work_id)), ErrorCode.NOT_FOUND,
                           f"work {p.work_id} does not exist")
    _check_splits(p.rights)
    for recipient in p.rights.recipients:
        require(changes.get(STATE, recipient_key(recipient.recipient_id)) is not None,
                ErrorCode.INVALID_REFERENCE, f"recipient {recipient.recipient_id} does not exist")
    current = work.data_as(schema.Work)
    current_version = current["rights_version"]
    require(p.rights.version == current_version + 1, ErrorCode.INVALID_STATE,
            f"rights versions are append-only: next is {current_version + 1}")
    require(current["status"] != "active" or p.rights.version > current_version,
            ErrorCode.INVALID_STATE, "work is already active under this rights version")
    rights = shaped({"work_id": p.work_id, **p.rights.model_dump(mode="json")}, schema.RightsVersion)
    changes.put_state(rights_key(p.work_id, p.rights.version), rights)
    activated = with_fields(current, status="active", rights_version=p.rights.version)
    changes.put_state(work_key(p.work_id), activated)
    changes.event("WorkActivated", work_id=p.work_id, rights_version=p.rights.version)
    return {"work_id": p.work_id, "rights_version": p.rights.version}


def _check_splits(rights: RightsVersion) -> None:
    ids = [r.recipient_id for r in rights.recipients]
    require(ids == sorted(set(ids)), ErrorCode.INVALID_SPLITS, "recipients must be sorted and distinct")
    total = sum(r.split_bps for r in rights.recipients)
    require(total == TOTAL_BPS, ErrorCode.INVALID_SPLITS, f"splits sum to {total}, not {TOTAL_BPS}")

"""Reads for workers: the head, dispatch, the effects queue, payments, in-flight attempts and batches.

Everything but the head and dispatch is read at one command boundary and
reports the ledger sequence it was read at.
"""

from __future__ import annotations

from typing import Any, Callable

from django.http import HttpRequest, HttpResponse
from ninja import Path, Query, Router

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.commands.money.attempts import attempt_key
from ledger_engine.domain.commands.money.payments import payment_key
from ledger_engine.domain.view import Record
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import IDENTIFIER_PATTERN, key
from ledger_engine.layout import INDEXES, OUTBOX, STATE
from porto_console.internal_api.errors import ApiCode, ApiError
from porto_console.internal_api.schemas import (
    EFFECT_CURSOR, ERROR_RESPONSES, AttemptPage, BatchPage, DispatchOut, EffectOut, EffectPage, HeadOut,
    JournalTreeOut, PaymentOut,
)
from porto_console.ledger import owner, read_at_boundary
from porto_console.statement_files import statement_file_for

IN_FLIGHT_OUTCOMES = ("pending", "submitted")
IN_FLIGHT_BATCH_STATES = ("submitted", "uncertain")
SCAN_BATCH = 500

router = Router(tags=["reads"])
STATEMENT_FILE_COMMAND = "RecordCommitmentObservation"


@router.get("/head", response={200: HeadOut, **ERROR_RESPONSES}, summary="Read the ledger head")
def read_head(request: HttpRequest) -> dict[str, Any]:
    return owner().head().as_json()


@router.get("/journal-tree", response={200: JournalTreeOut, **ERROR_RESPONSES},
            summary="Read the journal tree's size and root",
            description="""\
The RFC 9162 Merkle root over the hashes of journal entries 1..`size`, at the last durable commit
(docs/merkle.md). The committer anchors it with every batch commitment; its observation records it,
and the ledger refuses one naming another root for that size (`CONFLICTING_EVIDENCE`).""")
def read_journal_tree(request: HttpRequest) -> dict[str, Any]:
    return owner().journal_tree()


@router.get("/dispatch", response={200: DispatchOut, **ERROR_RESPONSES}, summary="Read whether dispatch is enabled",
            description="""\
Workers read this before starting any effect and do nothing while it is disabled. After a restore it
stays disabled until an operator resumes it; meanwhile `ClaimEffect` and `RecordSignedAttempt` are
503 `DISPATCH_DISABLED`.""")
def read_dispatch(request: HttpRequest) -> dict[str, Any]:
    state = owner().dispatch_state()
    return {"enabled": state["enabled"], "reason": state["reason"]}


@router.get("/effects", response={200: EffectPage, **ERROR_RESPONSES}, summary="List effects by status and kind",
            description="""\
Outbox effects with the given status (`pending`, `claimed`, `done`, `cancelled`) and optionally
kind, in (kind, effect ID) order, read consistently at one ledger sequence, which the page
reports. Pass `next_cursor` back as `cursor` for the next page.""")
def list_effects(request: HttpRequest,
                 status: str = Query("pending", pattern=IDENTIFIER_PATTERN),
                 kind: str | None = Query(None, pattern=IDENTIFIER_PATTERN),
                 cursor: str | None = Query(None, pattern=EFFECT_CURSOR),
                 limit: int = Query(50, ge=1, le=200)) -> dict[str, Any]:
    status_prefix = key("effect_by_status", status) + "/"
    prefix = key("effect_by_status", status, kind) + "/" if kind else status_prefix
    start = max(prefix, f"{status_prefix}{cursor}\x00") if cursor else None

    def effects(ledger: LedgerOwner) -> tuple[list[dict[str, Any]], str | None]:
        rows = ledger.scan(INDEXES, prefix, start=start, limit=limit + 1)
        page = [_with_revision(ledger.get(OUTBOX, index_key.rsplit("/", 1)[1])) for index_key, _ in rows[:limit]]
        return page, rows[limit - 1][0].removeprefix(status_prefix) if len(rows) > limit else None

    read = read_at_boundary(effects)
    page, next_cursor = read.data
    return {"sequence": read.head.sequence, "effects": page, "next_cursor": next_cursor}


@router.get("/effects/{effect_id}", response={200: EffectOut, **ERROR_RESPONSES}, summary="Read one effect",
            description="One outbox effect with its revision and claim, as the effects list shows it.")
def read_effect(request: HttpRequest, effect_id: str = Path(..., pattern=IDENTIFIER_PATTERN)) -> dict[str, Any]:
    record = read_at_boundary(lambda ledger: ledger.get(OUTBOX, effect_id)).data
    if record is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no effect {effect_id}")
    return _with_revision(record)


@router.get("/payments/{payment_id}", response={200: PaymentOut, **ERROR_RESPONSES}, summary="Read one payment",
            description="The payment and its signed attempts, read at one ledger sequence.")
def read_payment(request: HttpRequest, payment_id: str = Path(..., pattern=IDENTIFIER_PATTERN)) -> dict[str, Any]:
    def payment(ledger: LedgerOwner) -> tuple[Record | None, list[Record]]:
        record = ledger.get(STATE, payment_key(payment_id))
        attempt_ids = record.data["attempt_ids"] if record else []
        return record, [ledger.get(STATE, attempt_key(attempt_id)) for attempt_id in attempt_ids]

    read = read_at_boundary(payment)
    record, attempts = read.data
    if record is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no payment {payment_id}")
    return {"sequence": read.head.sequence, "payment": _with_revision(record),
            "attempts": [_with_revision(attempt) for attempt in attempts]}


@router.get("/attempts", response={200: AttemptPage, **ERROR_RESPONSES}, summary="List in-flight payment attempts",
            description="""\
Signed payment attempts whose outcome is `pending` or `submitted` (they may still land), in attempt ID
order, read consistently at one ledger sequence. The sweep schedules an observation of each, so a lost
follow-up only delays it. Pass `next_cursor` back as `cursor` for the next page.""")
def list_in_flight_attempts(request: HttpRequest,
                            cursor: str | None = Query(None, pattern=IDENTIFIER_PATTERN),
                            limit: int = Query(50, ge=1, le=200)) -> dict[str, Any]:
    read = read_at_boundary(lambda ledger: _page(
        ledger, "payment_attempt", "attempt_id", cursor, limit,
        lambda attempt: attempt["outcome"] in IN_FLIGHT_OUTCOMES))
    attempts, next_cursor = read.data
    return {"sequence": read.head.sequence, "attempts": attempts, "next_cursor": next_cursor}


@router.get("/batches", response={200: BatchPage, **ERROR_RESPONSES}, summary="List in-flight artifact batches",
            description="""\
Artifact batches whose anchor was broadcast but not yet observed (state `submitted` or `uncertain`),
with the anchor's transaction hash, in batch ID order, read consistently at one ledger sequence. The
sweep schedules a look at each, so a lost commitment follow-up only delays its observation.""")
def list_in_flight_batches(request: HttpRequest,
                           cursor: str | None = Query(None, pattern=IDENTIFIER_PATTERN),
                           limit: int = Query(50, ge=1, le=200)) -> dict[str, Any]:
    read = read_at_boundary(lambda ledger: _page(
        ledger, "batch", "batch_id", cursor, limit,
        lambda batch: batch["state"] in IN_FLIGHT_BATCH_STATES and batch["transaction_hash"] is not None))
    batches, next_cursor = read.data
    return {"sequence": read.head.sequence, "batches": batches, "next_cursor": next_cursor}


def _page(ledger: LedgerOwner, record: str, id_field: str, cursor: str | None, limit: int,
          wanted: Callable[[dict[str, Any]], bool]) -> tuple[list[dict[str, Any]], str | None]:
    """Up to ``limit`` records of one kind that ``wanted`` keeps, after ``cursor``, and the next cursor."""
    start = f"{key(record, cursor)}\x00" if cursor else None
    found: list[dict[str, Any]] = []
    for _, row in _rows(ledger, STATE, key(record) + "/", start):
        if wanted(row["data"]):
            if len(found) == limit:
                return found, found[-1][id_field]
            found.append({**row["data"], "revision": row["revision"]})
    return found, None


def _rows(ledger: LedgerOwner, family: str, prefix: str, start: str | None):
    """Every row under ``prefix`` from ``start``, a batch at a time."""
    while rows := ledger.scan(family, prefix, start=start, limit=SCAN_BATCH):
        yield from rows
        start = rows[-1][0] + "\x00"


def _with_revision(record: Record) -> dict[str, Any]:
    return {**record.data, "revision": record.revision}


@router.get("/statements/{statement_id}/file", summary="Read a recipient's statement file",
            response={200: dict, **ERROR_RESPONSES},
            description="""\
The statement file of docs/merkle.md, for the worker that delivers it to its recipient: the
statement, its inclusion proof, the batch root and the anchoring transaction, in canonical JSON.
Only a credential that may record commitment observations (the worker that anchors statement
indexes) reads statement files, else `COMMAND_NOT_ALLOWED`. A statement whose index has no
statement tree, or whose root is not yet confirmed on chain, is `INVALID_STATE`.""")
def read_statement_file(request: HttpRequest, statement_id: str = Path(..., pattern=IDENTIFIER_PATTERN)):
    if not request.auth.may_submit(STATEMENT_FILE_COMMAND):
        raise ApiError(ApiCode.COMMAND_NOT_ALLOWED,
                       f"worker {request.auth.name} does not anchor statement indexes: it may not read statement files")
    _, content = statement_file_for(statement_id)
    return HttpResponse(content, content_type="application/json")

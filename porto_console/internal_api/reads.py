"""Reads for workers: the head, dispatch, the effects queue, payments, in-flight attempts and batches.

Everything but the head and dispatch is read at one command boundary and
reports the ledger sequence it was read at. The effects queue, payments,
attempts and batches name recipients' payout addresses and amounts, so only a
credential that carries out effects reads them: one that may submit a command
of a dispatcher, signer, observer or committer.
"""

from __future__ import annotations

from functools import cache
from django.http import HttpRequest, HttpResponse
from ninja import Path, Query, Router

from ledger_engine.domain.registry import registered_types, spec_for
from ledger_engine.envelope import IDENTIFIER_PATTERN
from ledger_engine.errors import ErrorCode
from ledger_engine.open_json import RecordData, Report
from ledger_engine.selectors import effect_queries, payout_queries
from porto_console.internal_api.errors import ApiCode, ApiError
from porto_console.internal_api.schemas import (
    EFFECT_CURSOR, ERROR_RESPONSES, AttemptPage, BatchPage, DispatchOut, EffectOut, EffectPage, HeadOut,
    JournalTreeOut, PaymentOut,
)
from porto_console.ledger import owner, read_view
from porto_console.statement_files import parts_file_for, statement_file_for

router = Router(tags=["reads"])
STATEMENT_FILE_COMMAND = "RecordCommitmentObservation"
EFFECT_ROLES = frozenset({"dispatcher", "signer", "observer", "committer"})


@cache
def effect_commands() -> frozenset[str]:
    """The command types only a worker carrying out effects submits."""
    return frozenset(t for t in registered_types() if spec_for(t).roles & EFFECT_ROLES)


def require_effect_worker(request: HttpRequest) -> None:
    if not any(request.auth.may_submit(command_type) for command_type in effect_commands()):
        raise ApiError(ApiCode.COMMAND_NOT_ALLOWED,
                       f"worker {request.auth.name} carries out no effects: it may not read effects, payments, "
                       "attempts or batches")


@router.get("/head", response={200: HeadOut, **ERROR_RESPONSES}, summary="Read the ledger head")
def read_head(request: HttpRequest) -> Report:
    return owner().head().as_json()


@router.get("/journal-tree", response={200: JournalTreeOut, **ERROR_RESPONSES},
            summary="Read the journal tree's size and root",
            description="""\
The RFC 9162 Merkle root over the hashes of journal entries 1..`size`, at the last durable commit
(docs/merkle.md). The committer anchors it with every batch commitment; its observation records it,
and the ledger refuses one naming another root for that size (`CONFLICTING_EVIDENCE`).""")
def read_journal_tree(request: HttpRequest) -> Report:
    return owner().journal_tree()


@router.get("/dispatch", response={200: DispatchOut, **ERROR_RESPONSES}, summary="Read whether dispatch is enabled",
            description="""\
Workers read this before starting any effect and do nothing while it is disabled: paused by a person's
journalled `PauseDispatch` until two people resume it, or after a restore until the ledger is promoted
(docs/adr/0091). Meanwhile `ClaimEffect` and `RecordSignedAttempt` are 503 `DISPATCH_DISABLED`.""")
def read_dispatch(request: HttpRequest) -> Report:
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
                 limit: int = Query(50, ge=1, le=200)) -> Report:
    require_effect_worker(request)
    read = read_view(lambda view: effect_queries.effects(view, status, kind, cursor=cursor, limit=limit))
    page, next_cursor = read.data
    return {"sequence": read.head.sequence, "effects": page, "next_cursor": next_cursor}


@router.get("/effects/{effect_id}", response={200: EffectOut, **ERROR_RESPONSES}, summary="Read one effect",
            description="One outbox effect with its revision and claim, as the effects list shows it.")
def read_effect(request: HttpRequest, effect_id: str = Path(..., pattern=IDENTIFIER_PATTERN)) -> RecordData:
    require_effect_worker(request)
    found = read_view(lambda view: effect_queries.effect(view, effect_id)).data
    if found is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no effect {effect_id}")
    return found


@router.get("/payments/{payment_id}", response={200: PaymentOut, **ERROR_RESPONSES}, summary="Read one payment",
            description="The payment and its signed attempts, read at one ledger sequence.")
def read_payment(request: HttpRequest, payment_id: str = Path(..., pattern=IDENTIFIER_PATTERN)) -> Report:
    require_effect_worker(request)
    read = read_view(lambda view: payout_queries.payment_with_attempts(view, payment_id))
    payment, attempts = read.data
    if payment is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no payment {payment_id}")
    return {"sequence": read.head.sequence, "payment": payment, "attempts": attempts}


@router.get("/attempts", response={200: AttemptPage, **ERROR_RESPONSES}, summary="List in-flight payment attempts",
            description="""\
Signed payment attempts whose outcome is `pending` or `submitted` (they may still land), in attempt ID
order, read consistently at one ledger sequence. The sweep schedules an observation of each, so a lost
follow-up only delays it. Pass `next_cursor` back as `cursor` for the next page.""")
def list_in_flight_attempts(request: HttpRequest,
                            cursor: str | None = Query(None, pattern=IDENTIFIER_PATTERN),
                            limit: int = Query(50, ge=1, le=200)) -> Report:
    require_effect_worker(request)
    read = read_view(lambda view: payout_queries.in_flight_attempts(view, cursor=cursor, limit=limit))
    attempts, next_cursor = read.data
    return {"sequence": read.head.sequence, "attempts": attempts, "next_cursor": next_cursor}


@router.get("/batches", response={200: BatchPage, **ERROR_RESPONSES}, summary="List in-flight artifact batches",
            description="""\
Artifact batches whose anchor was broadcast but not yet observed (state `submitted` or `uncertain`),
with the anchor's transaction hash, in batch ID order, read consistently at one ledger sequence. The
sweep schedules a look at each, so a lost commitment follow-up only delays its observation.""")
def list_in_flight_batches(request: HttpRequest,
                           cursor: str | None = Query(None, pattern=IDENTIFIER_PATTERN),
                           limit: int = Query(50, ge=1, le=200)) -> Report:
    require_effect_worker(request)
    read = read_view(lambda view: payout_queries.in_flight_batches(view, cursor=cursor, limit=limit))
    batches, next_cursor = read.data
    return {"sequence": read.head.sequence, "batches": batches, "next_cursor": next_cursor}


@router.get("/statements/{statement_id}/file", summary="Read a recipient's statement file",
            response={200: dict, **ERROR_RESPONSES},
            description="""\
The statement file of docs/merkle.md, for the worker that delivers it to its recipient: the
statement, its inclusion proof, the batch root and the anchoring transaction, in canonical JSON.
Only a credential that may record commitment observations (the worker that anchors statement
indexes) reads statement files, else `COMMAND_NOT_ALLOWED`. A statement whose index has no
statement tree, or whose root is not yet confirmed on chain, is `INVALID_STATE`.""")
def read_statement_file(request: HttpRequest, statement_id: str = Path(..., pattern=IDENTIFIER_PATTERN)):
    _require_statement_reader(request)
    _, content = statement_file_for(statement_id)
    return HttpResponse(content, content_type="application/json")


@router.get("/statements/{statement_id}/parts/{line_id}", summary="Read the parts file of a statement's day line",
            response={200: dict, **ERROR_RESPONSES},
            description="""\
The parts file of docs/merkle.md for one day line of a statement, delivered with the statement
file: the listener-days of its frozen chunk the day line is made of (each by its position in the
chunk, never its listener) with the recipient's lines of each, recomputed from the chunk's stored
bytes and held to the commitment in the statement. The statement file lists its day lines (those
with `parts`). Readable by the same credentials as statement files, else `COMMAND_NOT_ALLOWED`; a
line that is not a day line of the statement is `NOT_FOUND`; a statement without a file yet is
`INVALID_STATE`; evidence that does not make the committed parts is `CONFLICTING_EVIDENCE`.""")
def read_parts_file(request: HttpRequest, statement_id: str = Path(..., pattern=IDENTIFIER_PATTERN),
                    line_id: str = Path(..., pattern=IDENTIFIER_PATTERN)):
    _require_statement_reader(request)
    _, content = parts_file_for(statement_id, line_id)
    return HttpResponse(content, content_type="application/json")


def _require_statement_reader(request: HttpRequest) -> None:
    if not request.auth.may_submit(STATEMENT_FILE_COMMAND):
        raise ApiError(ApiCode.COMMAND_NOT_ALLOWED,
                       f"worker {request.auth.name} does not anchor statement indexes: it may not read statement files")

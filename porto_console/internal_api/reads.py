"""Reads for workers: the ledger head and the effects queue, each with the sequence it was read at."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.view import Record
from ledger_engine.keys import IDENTIFIER_PATTERN, key
from ledger_engine.layout import INDEXES, OUTBOX
from porto_console.internal_api.schemas import EFFECT_CURSOR, ERROR_RESPONSES, EffectPage, HeadOut
from porto_console.ledger import owner, read_at_boundary

router = Router(tags=["reads"])


@router.get("/head", response={200: HeadOut, **ERROR_RESPONSES}, summary="Read the ledger head")
def read_head(request: HttpRequest) -> dict[str, Any]:
    return owner().head().as_json()


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
        page = [_effect(ledger.get(OUTBOX, index_key.rsplit("/", 1)[1])) for index_key, _ in rows[:limit]]
        return page, rows[limit - 1][0].removeprefix(status_prefix) if len(rows) > limit else None

    read = read_at_boundary(effects)
    page, next_cursor = read.data
    return {"sequence": read.head.sequence, "effects": page, "next_cursor": next_cursor}


def _effect(record: Record) -> dict[str, Any]:
    return {**record.data, "revision": record.revision}

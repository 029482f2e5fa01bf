"""Evidence bytes, stored by SHA-256 digest before a command names them in ``evidence_hashes``.

Write-once and content-addressed (``ledger_engine.adapters.evidence``): storing
the same bytes again changes nothing, and nothing here touches the ledger.
"""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router

from porto_console.internal_api.errors import ApiCode, ApiError
from porto_console.internal_api.schemas import ERROR_RESPONSES, EvidenceOut
from porto_console.ledger import gateway

router = Router(tags=["evidence"])


@router.post("/evidence", response={200: EvidenceOut, **ERROR_RESPONSES}, summary="Store evidence bytes",
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}},
             description="""\
Stores the raw request body (for example a signed transaction's exact bytes) and answers its
SHA-256, which commands then list in `evidence_hashes`. Only credentials that may submit
commands may store evidence.""")
def store_evidence(request: HttpRequest) -> dict[str, str]:
    if not request.auth.command_types:
        raise ApiError(ApiCode.COMMAND_NOT_ALLOWED, "a read-only credential cannot store evidence")
    if not request.body:
        raise ApiError(ApiCode.INVALID_REQUEST, "the body is empty; evidence is at least one byte")
    return {"sha256": gateway().evidence.put(request.body)}

"""Evidence bytes, stored by SHA-256 digest before a command names them in ``evidence_hashes``.

Content-addressed (``ledger_engine.adapters.evidence``): storing the same bytes
again changes nothing unless the file under their name was damaged, and nothing
here touches the ledger. Only a credential that may submit a command citing
evidence stores any, and each item is capped: the evidence store sits beside
the ledger's data and every backup carries all of it.
"""

from __future__ import annotations

from functools import cache

from django.http import HttpRequest
from ninja import Router

from ledger_engine.domain.registry import registered_types, spec_for
from porto_console.internal_api.errors import ApiCode, ApiError
from porto_console.internal_api.models import WorkerCredential
from porto_console.internal_api.schemas import ERROR_RESPONSES, EvidenceOut
from porto_console.ledger import gateway

router = Router(tags=["evidence"])
# Workers store signed transactions and chain observations; a signed Aptos transaction is at most 64 KiB.
MAX_EVIDENCE_BYTES = 64 * 1024


@cache
def evidence_commands() -> frozenset[str]:
    """The command types a worker may submit whose envelopes cite stored evidence, as the registry declares them;
    the owner stores its own commands' evidence itself (``CommandSpec.owner_only``)."""
    return frozenset(t for t in registered_types() if spec_for(t).cites_evidence and not spec_for(t).owner_only)


@router.post("/evidence", response={200: EvidenceOut, **ERROR_RESPONSES}, summary="Store evidence bytes",
             openapi_extra={"requestBody": {"required": True, "content": {
                 "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}},
             description=f"""\
Stores the raw request body (for example a signed transaction's exact bytes) and answers its
SHA-256, which commands then list in `evidence_hashes`. Only credentials that may submit a
command citing evidence may store evidence (else 403 `COMMAND_NOT_ALLOWED`); a body over
{MAX_EVIDENCE_BYTES} bytes is 413 `EVIDENCE_TOO_LARGE`. Storing bytes again is harmless, and
mends a stored copy the disk damaged.""")
def store_evidence(request: HttpRequest) -> dict[str, str]:
    require_may_store(request.auth)
    return {"sha256": put(request.body)}


def require_may_store(credential: WorkerCredential) -> None:
    if not any(credential.may_submit(command_type) for command_type in evidence_commands()):
        raise ApiError(ApiCode.COMMAND_NOT_ALLOWED,
                       f"worker {credential.name} submits no command that cites evidence: it may not store any")


def require_storable(data: bytes) -> None:
    if not data:
        raise ApiError(ApiCode.INVALID_REQUEST, "the body is empty; evidence is at least one byte")
    if len(data) > MAX_EVIDENCE_BYTES:
        raise ApiError(ApiCode.EVIDENCE_TOO_LARGE,
                       f"the evidence is {len(data)} bytes; the limit is {MAX_EVIDENCE_BYTES}")


def put(data: bytes) -> str:
    """Store one item of evidence a credential that may store any sent; its SHA-256."""
    require_storable(data)
    return gateway().evidence.put(data)

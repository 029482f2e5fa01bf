"""Several requests in one round trip: evidence stored first, then commands, each answered as if sent alone.

A worker carrying out many effects at once sends their evidence and their
commands together instead of one request each. The evidence is stored
before any command is submitted, so a command may cite evidence of its own
batch; refused evidence (too large, or a credential that stores none)
refuses the whole request and submits nothing. Each command is then
submitted exactly as ``POST /internal/commands`` would submit it, with the
same idempotency, checks and error codes, and gets its own answer: an
outcome, or the error (and HTTP status) it alone would have had. The
commands are submitted at once, so their envelopes share the disk's syncs
and the ledger commits them in as few groups as it can; their order in the
journal is not the batch's.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.http import HttpRequest
from ninja import Router

from ledger_engine.errors import LedgerError
from porto_console.internal_api import commands, evidence
from porto_console.internal_api.errors import ApiError, error_body, http_status
from porto_console.internal_api.models import WorkerCredential
from porto_console.internal_api.schemas import ERROR_RESPONSES, BatchOut, BatchRequest

router = Router(tags=["commands"])
# Enough threads that one batch's envelopes and commits overlap; the ledger still executes them one by one.
_SUBMITTERS = ThreadPoolExecutor(max_workers=16, thread_name_prefix="internal-api-batch")


@router.post("/batch", response={200: BatchOut, **ERROR_RESPONSES}, summary="Submit evidence and commands at once",
             description=f"""\
`evidence` (hex, at most {BatchRequest.MAX_ITEMS} items of {evidence.MAX_EVIDENCE_BYTES} bytes each) is stored
first, as `POST /internal/evidence` stores it, and answered with its SHA-256 digests in order; a refused item
refuses the whole request (nothing is stored after it and no command is submitted). Then each of `commands` (at
most {BatchRequest.MAX_ITEMS}) is submitted as `POST /internal/commands` submits it, and `results` answers each in
order: `status` 200 with its `outcome`, or the `status` and `error` it alone would have had. A retry sends the
same batch again: each command is answered by its ID as a single retry would be.""")
def submit_batch(request: HttpRequest, batch: BatchRequest) -> dict[str, Any]:
    credential = request.auth
    items = [bytes.fromhex(item) for item in batch.evidence]
    if items:
        evidence.require_may_store(credential)
    for item in items:
        evidence.require_storable(item)
    digests = [evidence.put(item) for item in items]
    submitted = [command.model_dump(mode="json") for command in batch.commands]
    results = list(_SUBMITTERS.map(lambda command: _answer(credential, command), submitted))
    return {"evidence": digests, "results": results}


def _answer(credential: WorkerCredential, command: dict[str, Any]) -> dict[str, Any]:
    try:
        return {"status": 200, "outcome": commands.submit(credential, command), "error": None}
    except (ApiError, LedgerError) as refused:
        return {"status": int(http_status(refused.code)), "outcome": None,
                "error": error_body(refused.code, refused.detail)}

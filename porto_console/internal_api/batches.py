"""Several requests in one round trip: evidence stored first, then commands, each answered as if sent alone.

A worker carrying out many effects at once sends their evidence and their
commands together instead of one request each. The evidence is stored
before any command is submitted, so a command may cite evidence of its own
batch; refused evidence (too large, or a credential that stores none)
refuses the whole request and submits nothing. Each command is then
submitted exactly as ``POST /internal/commands`` would submit it, with the
same idempotency, checks and error codes, and gets its own answer: an
outcome, or the error (and HTTP status) it alone would have had. The
evidence items, then the commands' envelopes, are stored side by side, so
they share the disk's syncs; the envelopes then go to the ledger together,
earliest admission first, so it commits them in as few groups (synchronous
writes) as it can and none is refused for its admission time because
another of the batch was journalled first. Their order in the journal is
not the batch's.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from django.http import HttpRequest
from ninja import Router

from ledger_engine.adapters.command_answers import Journalled
from ledger_engine.adapters.gateway import CommandGateway
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.errors import LedgerError
from ledger_engine.open_json import Report, Unvalidated
from porto_console.internal_api import commands, evidence
from porto_console.internal_api.errors import ApiError, error_body, http_status
from porto_console.internal_api.models import WorkerCredential
from porto_console.internal_api.schemas import ERROR_RESPONSES, BatchOut, BatchRequest
from porto_console.ledger import gateway

router = Router(tags=["commands"])
# Enough threads that a batch's evidence and envelopes are stored side by side, sharing the disk's syncs.
_SUBMITTERS = ThreadPoolExecutor(max_workers=16, thread_name_prefix="internal-api-batch")


@router.post("/batch", response={200: BatchOut, **ERROR_RESPONSES}, summary="Submit evidence and commands at once",
             description=f"""\
`evidence` (hex, at most {BatchRequest.MAX_ITEMS} items of {evidence.MAX_EVIDENCE_BYTES} bytes each) is stored
first, as `POST /internal/evidence` stores it, and answered with its SHA-256 digests in order; a refused item
refuses the whole request (nothing is stored after it and no command is submitted). Then each of `commands` (at
most {BatchRequest.MAX_ITEMS}) is submitted as `POST /internal/commands` submits it, and `results` answers each in
order: `status` 200 with its `outcome`, or the `status` and `error` it alone would have had. A retry sends the
same batch again: each command is answered by its ID as a single retry would be.""")
def submit_batch(request: HttpRequest, batch: BatchRequest) -> Report:
    credential = request.auth
    items = [bytes.fromhex(item) for item in batch.evidence]
    if items:
        evidence.require_may_store(credential)
    for item in items:
        evidence.require_storable(item)
    digests = list(_SUBMITTERS.map(evidence.put, items))  # stored side by side, sharing the disk's syncs
    submitted = [command.model_dump(mode="json") for command in batch.commands]
    return {"evidence": digests, "results": _submit_all(credential, submitted)}


def _submit_all(credential: WorkerCredential, submitted: list[Unvalidated]) -> list[Report]:
    """Every command's envelope admitted at one time, then all of them stored side by side, then handed to the ledger
    at once, after every batch admitted earlier. Admitting is work for the interpreter alone, so it is done first,
    in this thread: the stores then reach the disk's sync together and share it, instead of one by one. A command
    the ledger journalled already (a retried batch) is answered from the journal and not handed over again."""
    admission = gateway()
    with admission.admitting_together() as batch:
        prepared = [_refusal_or(commands.prepare, credential, command, batch.admitted_at_ms) for command in submitted]
        answers = list(_SUBMITTERS.map(lambda command, one: _answered_or_kept(admission, command, one),
                                       submitted, prepared))
        ready = [index for index, answer in enumerate(answers) if _to_submit(answer)]
        queued = batch.queue([answers[index] for index in ready])
    for index, outcome in zip(ready, admission.answers(queued)):
        answers[index] = outcome if isinstance(outcome, LedgerError) \
            else _refusal_or(_answer, submitted[index], outcome)
    return [_result(answer) for answer in answers]


@dataclass(frozen=True, slots=True)
class _Answered:
    """A command's answer, its outcome as the worker sent it."""

    outcome: Report


def _answered_or_kept(admission: CommandGateway, command: Unvalidated, prepared: Any) -> Any:
    """A refusal as it is; a journalled command's answer; else the envelope stored (or the refusal to store it)."""
    if _refused(prepared):
        return prepared
    if isinstance(prepared, Journalled):
        return _Answered(commands.as_journalled(command, prepared))
    return _refusal_or(admission.keep, prepared)


def _answer(command: Unvalidated, outcome: CommandOutcome) -> _Answered:
    return _Answered(commands.answer(command, outcome))


def _to_submit(answer: Any) -> bool:
    return not _refused(answer) and not isinstance(answer, _Answered)


def _refused(answer: Any) -> bool:
    return isinstance(answer, (ApiError, LedgerError))


def _refusal_or(step: Callable[..., Any], *arguments: Any) -> Any:
    """What ``step`` returns, or the refusal (``ApiError``, ``LedgerError``) it raised."""
    try:
        return step(*arguments)
    except (ApiError, LedgerError) as refused:
        return refused


def _result(answer: _Answered | ApiError | LedgerError) -> Report:
    if isinstance(answer, (ApiError, LedgerError)):
        return {"status": int(http_status(answer.code)), "outcome": None, "error": error_body(answer.code,
                                                                                               answer.detail)}
    return {"status": 200, "outcome": answer.outcome, "error": None}

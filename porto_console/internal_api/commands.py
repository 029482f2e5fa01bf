"""Commands: submit a typed command, claim an effect, resolve a command by ID.

A worker's request takes the answer path a person's form takes
(``ledger_engine.adapters.command_answers``, docs/adr/0097). The first request
for a command ID builds the envelope (actor from the credential, admission time
from this server's clock, the current ruleset), checks it would be admitted and
stores it before the ledger sees it; a retry with the same request is answered
from the journal once the ledger journalled it, and otherwise submits the
stored envelope again, so the ledger executes it once. What is the API's own
stays here: the credential's command types, the dispatch switch, and an
attempt's signed bytes, which must be stored and say what it states, checked on
a new and a stored envelope alike.

A worker's command IDs are its own: the ledger journals each under an ID
derived from the worker's actor and the ID it sent (``journalled_id``). Workers
derive their IDs from facts others can read (``ledger_api.command_id_for``),
so in one space shared by every actor another worker could take an ID first
and have the honest command refused as a conflict for good.

Nothing is submitted here as the ledger's own actor, nor a command only the
owner submits in its own process (a frozen chunk of a day): 403 ``OWNER_ONLY``
before anything else, whatever the credential says (docs/adr/0073).

While dispatch is disabled (paused, or a restored ledger not yet promoted)
the commands that start an effect, ``ClaimEffect`` and ``RecordSignedAttempt``,
are refused before the gateway sees them.
"""

from __future__ import annotations

from typing import Callable

from django.http import HttpRequest
from ninja import Path, Router

from ledger_engine.adapters import command_answers
from ledger_engine.adapters.command_answers import INTERNAL_API, Journalled
from ledger_engine.adapters.gateway import CommandGateway, Unstored, require_not_owners
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.envelope import IDENTIFIER_PATTERN, UUID_PATTERN
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.open_json import Report, Unvalidated
from ledger_engine.selectors.effect_queries import expected_effect_revision
from porto_console.effects.transactions import NotATransfer, TransferTerms, decode_transfer
from porto_console.internal_api.errors import ApiCode, ApiError
from porto_console.internal_api.models import WorkerCredential
from porto_console.internal_api.schemas import ERROR_RESPONSES, CommandRequest, EffectClaimRequest, OutcomeOut
from porto_console.ledger import gateway, owner

router = Router(tags=["commands"])

STARTS_AN_EFFECT = ("ClaimEffect", "RecordSignedAttempt")


journalled_id = INTERNAL_API.journalled_id
"""``journalled_id(actor_id, command_id)``: the ID the ledger journals a worker's command under."""


def submit(credential: WorkerCredential, request: Unvalidated) -> Report:
    """Submit a command request as ``credential``'s actor; returns its journalled outcome."""
    _require_may_submit(credential, request)
    admission = gateway()
    outcome = command_answers.answer(admission, INTERNAL_API, request["command_id"], asked(credential, request),
                                     new=_new(admission, credential, request), check=_signed_bytes_check(admission))
    return _as_sent(outcome, request["command_id"])


def prepare(credential: WorkerCredential, request: Unvalidated,
            admitted_at_ms: int | None = None) -> Journalled | Unvalidated | Unstored:
    """A command request as ``credential``'s actor, journalled already (answered by ``as_journalled``), or the
    envelope to submit for it: the stored one, or the first time a new one admitted (now, or at
    ``admitted_at_ms``) and checked, for ``gateway().keep`` to store; raises what refuses the request before the
    ledger sees it."""
    _require_may_submit(credential, request)
    admission = gateway()
    return command_answers.prepare(admission, INTERNAL_API, request["command_id"], asked(credential, request),
                                   new=_new(admission, credential, request, admitted_at_ms),
                                   check=_signed_bytes_check(admission))


def as_journalled(request: Unvalidated, journalled: Journalled) -> Report:
    """The answer to a request the ledger journalled already, found by its ID: the owner does not see it again."""
    return _as_sent(journalled.outcome, request["command_id"])


def answer(request: Unvalidated, outcome: CommandOutcome) -> Report:
    """The outcome of a prepared request's envelope, under the ID the worker sent, unless the ledger journalled
    another envelope under its command ID."""
    return _as_sent(command_answers.answered(gateway(), outcome), request["command_id"])


def asked(credential: WorkerCredential, request: Unvalidated) -> command_answers.Request:
    """What a command request asks the ledger, as ``credential``'s actor."""
    return command_answers.Request(credential.actor_id, request["command_type"], request["payload"],
                                   request["expected_revisions"], request["evidence_hashes"])


def _require_may_submit(credential: WorkerCredential, request: Unvalidated) -> None:
    """What refuses a request whatever its command ID holds: the ledger's own commands, one outside the credential,
    and one that starts an effect while dispatch is disabled."""
    require_not_owners(request["command_type"], credential.actor_id)
    if not credential.may_submit(request["command_type"]):
        raise ApiError(ApiCode.COMMAND_NOT_ALLOWED,
                       f"worker {credential.name} may not submit {request['command_type']}; "
                       f"it may submit {', '.join(credential.command_types) or 'no commands'}")
    if request["command_type"] in STARTS_AN_EFFECT:
        _require_dispatch_enabled()


def _new(admission: CommandGateway, credential: WorkerCredential, request: Unvalidated,
         admitted_at_ms: int | None = None) -> Callable[[str], Unvalidated | Unstored]:
    """A request's new envelope for the command ID it is journalled under, admitted and checked, not stored."""
    return lambda command_id: admission.admitted(
        request["command_type"], request["payload"], actor_id=credential.actor_id, command_id=command_id,
        expected=request["expected_revisions"], evidence=request["evidence_hashes"],
        check=_signed_bytes_check(admission), admitted_at_ms=admitted_at_ms)


def _signed_bytes_check(admission: CommandGateway) -> Callable[[Unvalidated], None]:
    """The API's own refusal of an envelope, new or stored: ``_require_stated_signed_bytes``."""
    return lambda envelope: _require_stated_signed_bytes(admission, envelope)


def _require_stated_signed_bytes(admission: CommandGateway, envelope: Unvalidated) -> None:
    """An attempt's signed bytes are stored and say what it states; checked before its envelope is stored."""
    attempt = envelope["payload"]
    if "signed_bytes_hash" not in attempt:
        return
    digest = attempt["signed_bytes_hash"]
    if digest not in admission.evidence:
        raise LedgerError(ErrorCode.INVALID_REFERENCE,
                          f"the signed bytes {digest} are not stored: send them to /internal/evidence first")
    require_signed_bytes_say(attempt, admission.evidence.get(digest))


def require_signed_bytes_say(attempt: Unvalidated, signed_bytes: bytes) -> None:
    """An attempt (RecordSignedAttempt, RecordLandedAttempt) must state what its signed bytes do.

    The ledger cannot read a transaction, so this edge, where the bytes are, decodes them (their signature
    included): otherwise a signer could record bytes paying someone else under the payment's frozen terms,
    and the chain's confirmation of that transaction would settle the payment.
    """
    try:
        transfer = decode_transfer(signed_bytes)
    except NotATransfer as error:
        raise LedgerError(ErrorCode.CONFLICTING_EVIDENCE, f"the signed bytes are not a signed transfer: {error}")
    terms = transfer.terms
    if not isinstance(terms, TransferTerms):
        raise LedgerError(ErrorCode.CONFLICTING_EVIDENCE, "the signed bytes are a commitment, not a transfer")
    signed = {"payout_address": terms.recipient, "amount": str(terms.amount), "sender_address": terms.sender,
              "sender_sequence": terms.sequence_number, "expires_at_ms": terms.expiration_secs * 1000,
              "transaction_hash": transfer.transaction_hash}
    differing = sorted(field for field, value in signed.items() if attempt[field] != value)
    if differing:
        raise LedgerError(ErrorCode.CONFLICTING_EVIDENCE,
                          f"the signed bytes do not say what the attempt states: {', '.join(differing)}")


def _as_sent(outcome: CommandOutcome, command_id: str) -> Report:
    """The outcome under the ID the worker sent, which is the one it knows its command by."""
    return {**outcome.as_json(), "command_id": command_id}


def _require_dispatch_enabled() -> None:
    dispatch = owner().dispatch_state()
    if not dispatch["enabled"]:
        raise ApiError(ErrorCode.DISPATCH_DISABLED, f"effect dispatch is disabled: {dispatch['reason']}")


@router.post("/commands", response={200: OutcomeOut, **ERROR_RESPONSES}, summary="Submit a typed command",
             description="""\
Submits one command as the worker's actor. The body is a command envelope without the fields the
server fills: `actor_id` (from the credential), `admitted_at_ms` (this server's clock),
`schema_version` and `ruleset_version`; sending any of them is `UNKNOWN_FIELD`. Evidence named in
`evidence_hashes` must have been stored first (`POST /internal/evidence`), else `INVALID_REFERENCE`;
so must an attempt's signed bytes (`signed_bytes_hash`), which must say what the attempt states, else
`CONFLICTING_EVIDENCE`. A request refused here stores nothing.

The first request for a `command_id` stores the envelope before the ledger sees it; a retry with
the same body reuses that stored envelope and its admission time, so a command executes at most
once however often it is sent. The same `command_id` with a different body is `COMMAND_ID_CONFLICT`.
A worker's command IDs are its own: the same ID sent by another actor is another command.
A command only the ledger's owner submits (`FreezeDayChunk`) is 403 `OWNER_ONLY` and nothing is stored.
Accepted and rejected outcomes both answer 200. While dispatch is
disabled, `ClaimEffect` and `RecordSignedAttempt` are 503 `DISPATCH_DISABLED` and nothing is stored.""")
def submit_command(request: HttpRequest, command: CommandRequest) -> Report:
    return submit(request.auth, command.model_dump(mode="json"))


@router.post("/effects/{effect_id}/claim", response={200: OutcomeOut, **ERROR_RESPONSES},
             summary="Claim an effect", description="""\
Submits `ClaimEffect` for one effect as the worker's actor: an exclusive lease until
`expires_at_ms` (after the admission time and at most an hour later, else `INVALID_TIME`).
`expected_revision` is the effect's revision as listed; another worker's live claim is
`CLAIM_HELD`, a changed effect `STALE_REVISION`. The holder claiming again renews its lease.
Retries work as for any command: send the same body with the same `command_id`. While dispatch is
disabled the claim is 503 `DISPATCH_DISABLED` and nothing is stored.""")
def claim_effect(request: HttpRequest, claim: EffectClaimRequest,
                 effect_id: str = Path(..., pattern=IDENTIFIER_PATTERN)) -> Report:
    return submit(request.auth, {
        "command_id": claim.command_id,
        "command_type": "ClaimEffect",
        "payload": {"effect_id": effect_id, "expires_at_ms": claim.expires_at_ms},
        "expected_revisions": [expected_effect_revision(effect_id, claim.expected_revision)],
        "evidence_hashes": [],
    })


@router.get("/commands/{command_id}", response={200: OutcomeOut, **ERROR_RESPONSES},
            summary="Resolve a command by ID", description="""\
The journalled outcome of one of this worker's commands: how a worker that lost a response learns
what happened. `NOT_FOUND` means the ledger has not journalled it under this worker's actor;
submitting the same request again executes the stored envelope.""")
def resolve_command(request: HttpRequest, command_id: str = Path(..., pattern=UUID_PATTERN)) -> Report:
    ledger = owner()
    outcome = ledger.resolve(journalled_id(request.auth.actor_id, command_id))
    if outcome is None:
        raise ApiError(ErrorCode.NOT_FOUND, f"no journalled command {command_id} by this worker")
    entry = ledger.journal_entry(outcome.sequence)
    assert entry is not None, outcome.sequence  # resolved from the journal's own index
    if entry["envelope"]["actor_id"] != request.auth.actor_id:
        raise ApiError(ErrorCode.NOT_FOUND, f"no journalled command {command_id} by this worker")
    return _as_sent(outcome, command_id)

"""Request and response bodies of the internal API, as published in its OpenAPI schema."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, field_validator

from ledger_engine.canonical import MAX_SAFE_INTEGER
from ledger_engine.domain.registry import registered_types
from ledger_engine.domain.types import Digest
from ledger_engine.envelope import IDENTIFIER_PATTERN, UUID_PATTERN, ExpectedRevision
from ledger_engine.open_json import CommandResult, RecordData, Unvalidated

_COMPONENT = IDENTIFIER_PATTERN.removeprefix("^").removesuffix("$")
EFFECT_CURSOR = f"^{_COMPONENT}/{_COMPONENT}$"  # "<kind>/<effect_id>" of the last effect on a page


class CommandRequest(Schema):
    """A typed command. The server adds the actor (from the credential), the admission time and the ruleset."""

    model_config = ConfigDict(extra="forbid", strict=True)

    command_id: str = Field(pattern=UUID_PATTERN, description=(
        "A UUIDv4 the worker generates once and sends again, unchanged, on every retry of this command."))
    command_type: str = Field(json_schema_extra={"enum": list(registered_types())}, description=(
        "One of the ledger's command types; the worker's credential must allow it."))
    expected_revisions: list[ExpectedRevision] = Field(default_factory=list, description=(
        "Preconditions: each record's current revision, or null for a record that must not exist."))
    payload: Unvalidated = Field(description="The command type's closed payload; unknown fields are refused.")
    evidence_hashes: list[Digest] = Field(default_factory=list, description=(
        "SHA-256 digests of the evidence the command refers to, stored before it is submitted."))


class BatchRequest(Schema):
    """Evidence and commands of one worker in one round trip (``batches``)."""

    MAX_ITEMS: ClassVar[int] = 100
    model_config = ConfigDict(extra="forbid", strict=True)

    evidence: list[Annotated[str, Field(pattern=r"^([0-9a-f]{2})+$")]] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="Evidence bytes in lowercase hex, stored first.")
    commands: list[CommandRequest] = Field(default_factory=list, max_length=MAX_ITEMS, description=(
        "Commands, each as POST /internal/commands takes it, submitted after the evidence."))

    @field_validator("commands")
    @classmethod
    def _known_types(cls, commands: list[CommandRequest]) -> list[CommandRequest]:
        """A batch is refused whole when it is malformed; a command type no ledger knows makes it so."""
        unknown = sorted({command.command_type for command in commands} - set(registered_types()))
        if unknown:
            raise ValueError(f"unknown command types: {', '.join(unknown)}")
        return commands


class EffectClaimRequest(Schema):
    """A ``ClaimEffect`` command on the effect named in the path."""

    model_config = ConfigDict(extra="forbid", strict=True)

    command_id: str = Field(pattern=UUID_PATTERN, description="As for any command: generated once, sent on every retry.")
    expected_revision: int = Field(ge=1, le=MAX_SAFE_INTEGER, description="The effect's revision as listed.")
    expires_at_ms: int = Field(ge=0, le=MAX_SAFE_INTEGER, description="When the claim lapses (ms since the epoch).")


class ErrorOut(Schema):
    code: str = Field(description="A stable error code: programs branch on this.")
    detail: str = Field(description="What was wrong, for people.")


ERROR_RESPONSES = {status: ErrorOut for status in (400, 401, 403, 404, 409, 413, 422, 503)}


class OutcomeOut(Schema):
    """A command's journalled outcome, the first time or on any retry."""

    command_id: str
    sequence: int = Field(description="The ledger sequence that journalled the command.")
    outcome: Literal["accepted", "rejected"]
    code: str = Field(description='"OK" when accepted, else the stable rejection code.')
    result: CommandResult
    entry_hash: str
    duplicate: bool = Field(description="True when this command ID had already been journalled.")


class BatchResultOut(Schema):
    status: int = Field(description="The HTTP status this command alone would have had.")
    outcome: OutcomeOut | None = Field(description="Its journalled outcome, when status is 200.")
    error: ErrorOut | None = Field(description="Why it was refused, otherwise.")


class BatchOut(Schema):
    evidence: list[str] = Field(description="The SHA-256 digest of each evidence item, in order.")
    results: list[BatchResultOut] = Field(description="One answer per command, in order.")


class HeadOut(Schema):
    sequence: int
    entry_hash: str


class JournalTreeOut(Schema):
    size: int
    root: str


class EffectOut(Schema):
    effect_id: str
    kind: str
    status: str
    revision: int = Field(description="The outbox record's revision, for expected_revisions.")
    payload: RecordData
    claim: RecordData | None
    attempts: int
    result: RecordData | None
    command_id: str = Field(description="The command that created the effect.")
    created_sequence: int


class EvidenceOut(Schema):
    sha256: str = Field(description="The digest to list in a command's evidence_hashes.")


class EffectPage(Schema):
    sequence: int = Field(description="The ledger sequence this page was read at.")
    effects: list[EffectOut]
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last page.")


class DispatchOut(Schema):
    enabled: bool = Field(description="False while a person's pause holds, or after a restore until the ledger "
                                      "is promoted.")
    reason: str


class PaymentOut(Schema):
    sequence: int = Field(description="The ledger sequence the payment and its attempts were read at.")
    payment: RecordData = Field(description="The payment record, with its revision.")
    attempts: list[RecordData] = Field(description="Its signed attempts, oldest first.")


class AttemptPage(Schema):
    sequence: int = Field(description="The ledger sequence this page was read at.")
    attempts: list[RecordData] = Field(description="Attempts whose outcome is pending or submitted.")
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last page.")


class BatchPage(Schema):
    sequence: int = Field(description="The ledger sequence this page was read at.")
    batches: list[RecordData] = Field(description="Batches whose anchor is submitted or uncertain.")
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last page.")


class BackupOut(Schema):
    taken: bool = Field(description="Whether this call took a backup (one was due).")
    snapshot: str = Field(description="The newest good backup's restic snapshot ID.")
    sequence: int = Field(description="The ledger sequence it holds.")
    created_at_ms: int = Field(description="When its checkpoint was taken.")
    age_ms: int

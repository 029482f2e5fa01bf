"""One command, applied: the unit of work between admission and the durable batch.

``execute`` runs the rule against the pending view, turns its changes into
delta rows with revisions, hashes the delta, chains the journal entry and
stages everything (rows, indexes, result, journal, head) into the pending
batch. It writes nothing to disk; the executor does, once per group.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from ledger_engine.application.admission import AdmittedCommand
from ledger_engine.application.journal import EncodedEntry, encode_entry, encoded_delta
from ledger_engine.application.pending import PendingBatch
from ledger_engine.open_json import CommandResult, RecordData, Report
from ledger_engine.storage.value_codec import encode_built_record, encode_built_value, stored_value
from ledger_engine.canonical import engine_bytes
from ledger_engine.domain.actors import require_role
from ledger_engine.domain.changes import Changes, Rejected, require
from ledger_engine.domain.event_audit import payload_digest, with_audit
from ledger_engine.domain.postings import POSTED, assert_balanced
from ledger_engine.domain.registry import RuleContext
from ledger_engine.domain.schema.staff import actor_key
from ledger_engine.errors import ErrorCode, LedgerError, StorageFault
from ledger_engine.keys import seq20
from ledger_engine.layout import (
    COMMAND_RESULT, DELTAS, EVENTS, INDEXES, JOURNAL, META, OUTBOX, RULE_WRITABLE_FAMILIES, STATE,
)
from ledger_engine.projections.maintenance import Built, Entries, IndexMaintainer
from ledger_engine.storage.head import HEAD_KEY, Head
from ledger_engine.storage.rows import DeltaRow

MAX_STATE_WRITES = 10_000
MAX_DELTA_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """What the caller learns: the stored result of a command, first time or again."""

    command_id: str
    sequence: int
    outcome: str
    result: CommandResult
    entry_hash: str
    duplicate: bool = False
    # Outbox intents this execution created, for the owner to announce to workers; not journalled,
    # and empty when the outcome is a stored one (a periodic sweep finds those intents anyway).
    new_effects: tuple[str, ...] = ()

    @property
    def code(self) -> str:
        code: str = self.result["code"]
        return code

    @property
    def accepted(self) -> bool:
        return self.outcome == "accepted"

    def as_json(self) -> Report:
        return {
            "command_id": self.command_id,
            "sequence": self.sequence,
            "outcome": self.outcome,
            "code": self.code,
            "result": self.result,
            "entry_hash": self.entry_hash,
            "duplicate": self.duplicate,
        }


def stored_outcome(pending: PendingBatch, command_id: str, duplicate: bool) -> tuple[RecordData, CommandOutcome] | None:
    raw = pending.get_raw(COMMAND_RESULT, command_id.encode())
    if raw is None:
        return None
    stored = orjson.loads(raw)
    entry_key = seq20(stored["sequence"])
    raw_entry = pending.get_raw(JOURNAL, entry_key.encode())
    if raw_entry is None:
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{JOURNAL}/{entry_key}, a stored result's entry, is missing")
    entry = orjson.loads(raw_entry)
    outcome = CommandOutcome(command_id, stored["sequence"], stored["outcome"], stored["result"],
                             entry["entry_hash"], duplicate)
    return stored, outcome


def execute(command: AdmittedCommand, pending: PendingBatch, head: Head, indexes: IndexMaintainer, *,
            admitted_floor_ms: int = 0, admitted_ceiling_ms: int | None = None,
            index_entries: dict[tuple[str, str], Entries] | None = None) -> tuple[CommandOutcome, Head]:
    """Apply ``command`` after ``head``; an exact duplicate returns its stored outcome.

    A new command admitted before ``admitted_floor_ms`` (the last journalled
    admission time) is refused unjournalled, so its caller may re-admit it; so
    is one admitted after ``admitted_ceiling_ms`` (the owner's clock and its
    skew; replay, which re-executes what was admitted, passes none).
    ``index_entries`` is the index upkeep's memory of records written earlier
    in the same ``pending`` batch (``IndexMaintainer.ops_for``).
    """
    previous = stored_outcome(pending, command.command_id, duplicate=True)
    if previous is not None:
        stored, earlier = previous
        if stored["envelope_hash"] != command.envelope_hash:
            raise LedgerError(ErrorCode.COMMAND_ID_CONFLICT,
                              f"command {command.command_id} was already used for another envelope")
        return earlier, head
    if command.envelope.admitted_at_ms < admitted_floor_ms:
        raise LedgerError(ErrorCode.ADMISSION_TIME_REGRESSED,
                          f"admitted_at_ms {command.envelope.admitted_at_ms} is below the last journalled "
                          f"{admitted_floor_ms}; re-admit the command with a current admission time")
    if admitted_ceiling_ms is not None and command.envelope.admitted_at_ms > admitted_ceiling_ms:
        raise LedgerError(ErrorCode.ADMISSION_TIME_AHEAD,
                          f"admitted_at_ms {command.envelope.admitted_at_ms} is ahead of the ledger's clock; "
                          f"nothing may be admitted after {admitted_ceiling_ms}")

    sequence = head.sequence + 1
    try:
        rows, built, data = _accepted_rows(command, pending, sequence)
        outcome, result = "accepted", {"code": "OK", "data": data}
    except StorageFault:
        raise  # damaged storage is no business answer: the executor halts
    except (Rejected, LedgerError) as rejection:  # a LedgerError from a shared check is a rejection too
        rows, built, outcome = [], {}, "rejected"
        result = {"code": str(rejection.code), "detail": rejection.detail}

    rows, outcome, result, (digest, delta) = _with_result(command, sequence, outcome, result, rows)
    new_effects = tuple(key for family, key, _ in rows if family == OUTBOX and pending.get(OUTBOX, key) is None)
    entry = encode_entry(sequence=sequence, previous=head.entry_hash, envelope=command.canonical,
                         outcome=outcome, result=result, delta=digest)
    _stage(pending, rows, indexes.ops_for(rows, pending.get_raw, built, index_entries), sequence, entry, delta)
    answer = CommandOutcome(command.command_id, sequence, outcome, result, entry.entry_hash, new_effects=new_effects)
    return answer, Head(sequence, entry.entry_hash)


def _accepted_rows(command: AdmittedCommand, pending: PendingBatch,
                   sequence: int) -> tuple[list[DeltaRow], Built, CommandResult]:
    """The rule's changes as delta rows, their values as built (for index upkeep), and the rule's result data."""
    changes = Changes(base=pending)
    ctx = RuleContext(command.envelope, sequence, changes)
    _check_expected_revisions(changes, command)
    # Read before the rule runs, so the group's shared copy is current; require_role only reads it.
    require_role(ctx, command.spec.roles, pending.shared(STATE, actor_key(command.envelope.actor_id)))
    data = command.spec.rule(ctx, command.payload)
    require(len(changes.writes) + len(changes.effects) <= MAX_STATE_WRITES,
            ErrorCode.COMMAND_TOO_LARGE, f"more than {MAX_STATE_WRITES} state writes")

    rows: list[DeltaRow] = []
    built: Built = {}
    payload_hash = payload_digest(command.envelope)
    for (family, key), value in changes.writes.items():
        assert family in RULE_WRITABLE_FAMILIES, family
        revision = pending.revision(family, key) + 1
        rows.append((family, key, None if value is None else encode_built_record(revision, value)))
        if value is not None:
            built[(family, key)] = value
    prefix = seq20(sequence) + "/"
    for index, event in enumerate(changes.events):
        if event["type"] == POSTED:
            assert_balanced(event)
        event = stored_value(with_audit(event, command.envelope, payload_hash))
        event_key = prefix + seq20(index)
        rows.append((EVENTS, event_key, engine_bytes(event)))
        built[(EVENTS, event_key)] = event
    for effect in changes.effects:
        require(changes.get(OUTBOX, effect.effect_id) is None, ErrorCode.ALREADY_EXISTS,
                f"effect {effect.effect_id} already exists")
        record = {
            "effect_id": effect.effect_id,
            "kind": effect.kind,
            "payload": effect.payload,
            "status": "pending",
            "command_id": command.command_id,
            "created_sequence": sequence,
            "claim": None,
            "attempts": 0,
            "result": None,
        }
        rows.append((OUTBOX, effect.effect_id, encode_built_record(1, record)))
        built[(OUTBOX, effect.effect_id)] = record
    return rows, built, data


def _check_expected_revisions(changes: Changes, command: AdmittedCommand) -> None:
    for expected in command.envelope.expected_revisions:
        record = changes.get(expected.cf, expected.key)
        actual = record.revision if record else None
        require(actual == expected.revision, ErrorCode.STALE_REVISION,
                f"{expected.cf}/{expected.key}: expected revision {expected.revision}, found {actual}")


def _with_result(command: AdmittedCommand, sequence: int, outcome: str, result: CommandResult,
                 rows: list[DeltaRow]) -> tuple[list[DeltaRow], str, CommandResult, tuple[str, bytes]]:
    """Add the command result row, sort, hash; an oversized delta becomes a rejection."""
    stored = encode_built_value({"envelope_hash": command.envelope_hash, "sequence": sequence,
                           "outcome": outcome, "result": result})
    rows = sorted([*rows, (COMMAND_RESULT, command.command_id, stored)])
    digest, delta = encoded_delta(rows)
    if len(delta) <= MAX_DELTA_BYTES:
        return rows, outcome, result, (digest, delta)
    too_large = {"code": str(ErrorCode.COMMAND_TOO_LARGE), "detail": "canonical delta exceeds 16 MiB"}
    return _with_result(command, sequence, "rejected", too_large, [])


def _stage(pending: PendingBatch, rows: list[DeltaRow], index_ops: list[tuple[bytes, bytes | None]],
           sequence: int, entry: EncodedEntry, delta: bytes) -> None:
    for index_key, value in index_ops:
        pending.put(INDEXES, index_key, value)
    for family, key, value in rows:
        pending.put(family, key.encode(), value)
    pending.put(JOURNAL, seq20(sequence).encode(), entry.stored)
    pending.put(DELTAS, seq20(sequence).encode(), delta)
    pending.put(META, HEAD_KEY, encode_built_value(Head(sequence, entry.entry_hash).as_json()))

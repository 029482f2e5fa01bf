"""Frozen chunks recomputed: replay and ``verify`` split every frozen chunk again (docs/adr/0073).

``FreezeDayChunk`` does not split: it names its listener-days and states what
their split is (the chunk's SHA-256, size, listener-day count and totals), and
checks only what it can without splitting. So a journal holding an accepted
chunk whose totals are not the split of its listener-days replays, chain and
all. Before such an entry is applied, replay and ``verify`` read its
listener-days from the state as it stands before the entry, split them with
the day allocator's own code (``DayAllocator.split_named``: the reads, the
checks and the split of a build) and encode the chunk; its payload must be
``chunk_payload`` of those bytes and totals, field for field, or the history
is refused with ``CONFLICTING_EVIDENCE`` naming the entry. The chunk's stored
evidence, when the caller has the store and it holds the chunk's hash, must
hash to it. Only an entry the journal records accepted is recomputed: a
refused one changed nothing, and replay makes the same outcome or refuses.

Consecutive chunks are split together, on every core, from the state before
the first of them, while none names a listener-day or budget an earlier one
of the run names. That is the state each would be split from alone: a split
reads its listener-day, that day's allocation sentinel, its period's funding
sentinel, budget and period, the policy and the rights versions its works
name; an accepted chunk writes, of those, only its own listener-days'
sentinels and its own budgets (``freeze.freeze_chunk``). A chunk that names
another's budget starts a new run. A payload naming a budget other than its
listener-day's is refused either way: the split names the listener-day's.

A correction of a frozen listener-day quotes its line of the chunk's
artifact, which the rule cannot read (``corrections.py``). So every accepted
``RequestCorrection`` with a ``frozen_listener_day`` must quote one of the
lines of that chunk's bytes (``corrections.quoted_line_bytes``), or the
history is refused with ``CONFLICTING_EVIDENCE`` at the correction's entry.
The journal is read once ahead for the quoted lines (``quoted_lines``), and
each recomputed chunk keeps those of its lines that are quoted, so memory
grows with the corrections, not with the chunks. A chunk frozen before a
replay's starting checkpoint is not recomputed: its quotes are held to its
stored evidence, and refused when the store does not hold it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

import orjson

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.adapters.files import open_regular_file
from ledger_engine.application.day_allocator import DayAllocator, RawReader, Skipped
from ledger_engine.checkpoint.form import VerificationError
from ledger_engine.domain.allocation_artifact import DayTotals, read_back
from ledger_engine.domain.commands.money.corrections import FrozenListenerDay, quoted_line_bytes
from ledger_engine.domain.commands.money.freeze import FreezeDayChunkPayload, chunk_payload
from ledger_engine.domain.registry import spec_for
from ledger_engine.domain.schema.money_allocation import budget_key
from ledger_engine.domain.schema.streaming import listener_day_key
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import STATE, UNIQUE
from ledger_engine.open_json import Unvalidated

FREEZE = "FreezeDayChunk"
CORRECTION = "RequestCorrection"
QUOTING = b'"frozen_listener_day"'  # in the raw line of every entry whose payload quotes a frozen listener-day
MAX_RUN = 16  # chunks split together: up to 40,000 listener-days read before the first is applied
COMPARED = ("hash", "size", "listener_day_count", "listener_days", "recipients", "budgets")
# What a split reads, by family and key prefix: the rows ``verify`` keeps the values of.
SPLIT_READS = {STATE: ("listener_day/", "budget/", "period/", "rights/", "ruleset/"),
               UNIQUE: ("budget_funding/", "allocation/")}

T = TypeVar("T")
Split = tuple[bytes, DayTotals, list[Skipped]]
ChunkName = tuple[int, int, str]  # its day, number and hash, as a freeze sentinel's artifact names it


@dataclass(frozen=True)
class FrozenChunk:
    """An accepted ``FreezeDayChunk`` entry: its item (``journal.jsonl:17``), its payload as journalled and
    parsed (None when it does not parse: no chunk can be its split)."""

    item: str
    payload: Any  # as journalled: a JSON object when ``parsed`` is not None, anything when it is
    parsed: FreezeDayChunkPayload | None

    def names(self) -> set[str]:
        """The listener-days and budgets it names, by state key."""
        assert self.parsed is not None
        return {name for listener_day in self.parsed.listener_days for name in (
            listener_day_key(listener_day.listener_id, self.parsed.day), budget_key(listener_day.budget_id))}


def frozen_chunk(item: str, entry: Any) -> FrozenChunk | None:
    """The entry's chunk when it is a journal entry recording an accepted ``FreezeDayChunk``."""
    envelope = accepted_envelope(entry, FREEZE)
    if envelope is None:
        return None
    payload: Any = envelope.get("payload")  # as journalled; parsing checks what it is
    try:
        parsed = spec_for(FREEZE).parse_payload(payload)
    except LedgerError:
        return FrozenChunk(item, payload, None)
    assert isinstance(parsed, FreezeDayChunkPayload), "the payload model FreezeDayChunk registers"
    return FrozenChunk(item, payload, parsed)


def accepted_envelope(entry: Any, command_type: str) -> Unvalidated | None:
    """The envelope of a journal entry recording an accepted ``command_type``."""
    envelope = entry.get("envelope") if isinstance(entry, dict) else None
    accepted = isinstance(envelope, dict) and envelope.get("command_type") == command_type
    return envelope if accepted and entry.get("outcome") == "accepted" else None


def frozen_quote(entry: Any) -> tuple[ChunkName, bytes] | None:
    """The chunk and artifact line an accepted ``RequestCorrection`` entry quotes, when it names a frozen
    listener-day; an empty line when its quote does not parse (no chunk holds it)."""
    envelope = accepted_envelope(entry, CORRECTION)
    payload = envelope.get("payload") if envelope is not None else None
    quoted = payload.get("frozen_listener_day") if isinstance(payload, dict) else None
    if quoted is None:
        return None
    try:
        listener_day = FrozenListenerDay.model_validate(quoted)
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        return (-1, -1, ""), b""
    return (listener_day.day, listener_day.chunk, listener_day.hash), quoted_line_bytes(quoted)


def quoted_lines(journal: Path) -> dict[ChunkName, set[bytes]]:
    """Every line the accepted frozen corrections of ``journal`` quote, by chunk. An entry that does not parse
    quotes nothing here: the walk names it."""
    quoted: dict[ChunkName, set[bytes]] = defaultdict(set)
    with open_regular_file(journal) as handle:
        for raw in handle:
            if QUOTING not in raw:
                continue
            try:
                found = frozen_quote(orjson.loads(raw))
            except orjson.JSONDecodeError:
                continue
            if found is not None:
                quoted[found[0]].add(found[1])
    return dict(quoted)


def split_reads(family: str, key: str) -> bool:
    return key.startswith(SPLIT_READS.get(family, ()))


def chunk_runs(items: Iterable[T], chunk_of: Callable[[T], FrozenChunk | None]
               ) -> Iterator[list[tuple[T, FrozenChunk | None]]]:
    """``items`` in order, in runs: consecutive chunks that can be split from the same state, or one other item."""
    run: list[tuple[T, FrozenChunk | None]] = []
    named: set[str] = set()
    for item in items:
        chunk = chunk_of(item)
        names = chunk.names() if chunk is not None and chunk.parsed is not None else None
        if run and (names is None or names & named or len(run) >= MAX_RUN):
            yield run
            run, named = [], set()
        if names is None:
            yield [(item, chunk)]
        else:
            run.append((item, chunk))
            named |= names
    if run:
        yield run


class FrozenChunkCheck:
    """Splits runs of frozen chunks on the day allocator's workers, started with the first run that needs them."""

    def __init__(self, *, evidence: EvidenceStore | None = None, allocator: DayAllocator | None = None,
                 quoted: dict[ChunkName, set[bytes]] | None = None) -> None:
        self.evidence = evidence
        self.allocator = allocator if allocator is not None else DayAllocator()
        self.listener_days = 0  # recomputed so far
        self.quoted = quoted or {}  # the lines frozen corrections quote, by chunk (``quoted_lines``)
        self.recomputed: dict[ChunkName, set[bytes]] = {}  # of each quoted chunk recomputed, the quoted lines it holds

    def __enter__(self) -> "FrozenChunkCheck":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.allocator.close()

    def each_checked(self, reader: RawReader, run: list[tuple[T, FrozenChunk | None]]) -> Iterator[T]:
        """The run's items in order, each chunk compared with its split just before it is yielded (so before
        its caller applies it); every chunk of the run is split first, from ``reader`` as it stands now."""
        splits = iter(self._split(reader, [chunk for _, chunk in run if chunk is not None and chunk.parsed]))
        for item, chunk in run:
            if chunk is not None:
                self._require_split(chunk, next(splits) if chunk.parsed is not None else None)
            yield item

    def _split(self, reader: RawReader, chunks: list[FrozenChunk]) -> list[Split]:
        if not chunks:
            return []
        named = [(chunk.parsed.day, [listener_day.listener_id for listener_day in chunk.parsed.listener_days])
                 for chunk in chunks if chunk.parsed is not None]
        self.listener_days += sum(len(listener_ids) for _, listener_ids in named)
        return self.allocator.split_named(reader, named)

    def _require_split(self, chunk: FrozenChunk, split: Split | None) -> None:
        if split is None:
            raise conflicting(chunk.item, "its payload is not a chunk's")
        p = chunk.parsed
        assert p is not None
        content, _, skipped = split
        expected = chunk_payload(p.request_id, p.day, p.chunk, read_back(content))
        for name in COMPARED:
            if chunk.payload.get(name) != expected[name]:
                raise conflicting(chunk.item, f"its {name} is not that of the split of its listener-days, read as "
                                              f"they stood before it{_skipped(skipped)}")
        self._require_evidence(chunk.item, p.hash)
        self._keep_quoted((p.day, p.chunk, p.hash), content)

    def _keep_quoted(self, name: ChunkName, content: bytes) -> None:
        wanted = self.quoted.get(name)
        if wanted is not None:
            self.recomputed[name] = {line for line in content.splitlines(keepends=True) if line in wanted}

    def require_quote(self, item: str, entry: Any) -> None:
        """An accepted correction of a frozen listener-day (``entry``, at ``item``) quotes a line of its chunk's
        bytes: as recomputed, or as stored for a chunk frozen before the history replayed here starts."""
        found = frozen_quote(entry)
        if found is None:
            return
        (day, number, digest), line = found
        if not line:
            raise quote_refused(item, "its quote of a frozen listener-day does not parse")
        held = self.recomputed.get((day, number, digest))
        if line not in (held if held is not None else self._stored_lines(item, digest)):
            raise quote_refused(item, f"its quote is not a line of chunk {number} of day {day} ({digest})")

    def _stored_lines(self, item: str, digest: str) -> set[bytes]:
        """The lines of a chunk this check did not recompute, as the evidence store holds them."""
        try:
            if self.evidence is not None:
                return set(self.evidence.get(digest).splitlines(keepends=True))
            reason = "there is no evidence store"
        except LedgerError as error:
            reason = error.detail
        raise quote_refused(item, f"chunk {digest} was not recomputed here and its stored bytes cannot be read "
                                  f"({reason}), so its quote cannot be held to them")

    def _require_evidence(self, item: str, digest: str) -> None:
        if self.evidence is None:
            return
        try:
            self.evidence.get(digest)
        except LedgerError as error:
            if error.code != ErrorCode.NOT_FOUND:
                raise conflicting(item, f"its stored evidence: {error.detail}") from None


def conflicting(item: str, reason: str) -> VerificationError:
    return VerificationError(item, f"frozen chunk refused: {reason}", ErrorCode.CONFLICTING_EVIDENCE)


def quote_refused(item: str, reason: str) -> VerificationError:
    return VerificationError(item, f"frozen correction refused: {reason}", ErrorCode.CONFLICTING_EVIDENCE)


def _skipped(skipped: list[Skipped]) -> str:
    if not skipped:
        return ""
    first = skipped[0]
    return f" (the split leaves out listener-day {first.listener_id}: {first.code} {first.detail})"

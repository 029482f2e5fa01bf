"""Funding lots, budgets, allocation lines, corrections and refunds (docs/records/money-allocation.md)."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from ledger_engine.keys import key, seq20
from ledger_engine.open_json import RecordData

LineRole = Literal["artist", "operator", "porto"]
LineStatus = Literal["payable", "reserved", "paid", "reversed"]
# The terms of a budget's conservation equation (ledger_engine/domain/invariants.py).
BudgetTerm = Literal["funded", "additions", "unallocated", "outstanding", "paid", "refunds_reversals", "frozen"]

BUDGET_PREFIX = "budget/"
LINE_PREFIX = "allocation_line/"
LOT_PREFIX = "lot/"
CORRECTION_PREFIX = "correction/"
CORRECTION_REQUEST_PREFIX = "correction_request/"
REFUND_PREFIX = "budget_refund/"
ALLOCATION_SENTINEL_PREFIX = "allocation/"  # in ``unique``: one per allocated listener-day, by either path
DAY_CHUNK_PREFIX = "day_chunk/"  # a frozen chunk of a day (docs/adr/0073), which its day lines total


class Created(TypedDict):
    """Provenance: the command that created a record, its sequence and admission time."""

    command_id: str
    sequence: int
    at_ms: int


class Deposit(TypedDict):
    chain: str
    transaction_hash: str
    event_index: int
    evidence_digest: str


class Lot(TypedDict):
    lot_id: str
    asset: str
    received: str
    allocated: str
    deposit: Deposit
    conversion_ref: str | None
    imported_at_ms: int
    correlation_id: str
    created: Created


class LotDrawRecord(TypedDict):
    lot_id: str
    amount: str
    version: int


class BudgetTerms(TypedDict):
    """What a budget's day slices are computed from: its period's days and its funding versions' lots."""

    first_day: int
    days: int
    lots: list[LotDrawRecord]


class Budget(TypedDict):
    budget_id: str
    period_id: str
    listener_id: str
    asset: str
    days: int
    first_day: int
    funded: str
    additions: str
    unallocated: str
    outstanding: str
    paid: str
    refunds_reversals: str
    # What freezes moved out of ``unallocated`` (docs/adr/0073): absent, so zero, from every budget no freeze touched.
    frozen: NotRequired[str]
    lots: list[LotDrawRecord]
    funding_version: int
    correlation_id: str
    created: Created


class DayLineArtifact(TypedDict):
    """The frozen chunk a day line totals: its day, its number in the day, and the chunk's SHA-256."""

    day: int
    chunk: int
    hash: str


class AllocationLine(TypedDict):
    line_id: str
    listener_id: str | None  # null on a day line (ledger_engine/domain/day_lines.py)
    day: int
    budget_id: str | None  # null on a day line, which names its ``artifact`` instead
    role: LineRole
    recipient_id: str | None
    amount: str
    status: LineStatus
    run_id: str | None
    payment_id: str | None
    correction_id: str | None
    replaces: list[str] | None
    reversed_by: str | None
    pending_correction: str | None
    correlation_id: str
    created: Created
    work_id: NotRequired[str]
    rights_version: NotRequired[int]
    node_id: NotRequired[str]
    artifact: NotRequired[DayLineArtifact]  # a day line's, and only a day line's


class Correction(TypedDict):
    correction_id: str
    budget_id: str
    reason: str
    requested_by: str
    approved_by: str
    request_hash: str
    listener_day: list[Any] | None  # [listener_id, day]; a frozen listener-day's correction always names it
    reverses: list[str]
    replacements: list[str]
    reversed: str
    replaced: str
    released: str
    refunded: str
    refunded_unallocated: str
    recorded_at_ms: int
    correlation_id: str
    created: Created
    # A frozen listener-day's correction (commands/money/corrections.py), and only one: what it took out of the
    # budget's ``frozen`` (its ``reversed``), the chunk, and each recipient's part taken out of its day line.
    unfrozen: NotRequired[str]
    artifact: NotRequired[DayLineArtifact]
    parts: NotRequired[list[RecordData]]  # {"role", "recipient_id", "amount", "line_id", "remainder_id"}


class JournalEntry(TypedDict):
    """A posting line as a record keeps it (domain/postings.py)."""

    account: str
    side: Literal["debit", "credit"]
    amount: str


class CorrectionRequest(TypedDict, total=False):
    """A correction as requested and frozen, waiting for a second finance user's decision."""

    correction_id: str
    budget_id: str
    reason: str
    listener_day: list[Any] | None  # [listener_id, day]
    reverses: list[RecordData]  # each reversed line as frozen, by ``line_id``
    replacements: list[RecordData]  # each as its payload gave it (corrections.Replacement)
    remainder_to: Literal["unallocated", "refund"]
    refund_unallocated: str
    amounts: dict[str, str]  # reversed, replaced, released, refunded, refunded_unallocated
    entries: list[JournalEntry]  # the balancing journal approval posts
    frozen_listener_day: RecordData  # a frozen listener-day's, as its payload quoted it
    parts: list[dict[str, str]]  # a frozen listener-day's: line_id, amount
    request_hash: str
    status: Literal["requested", "approved", "declined"]
    requested_by: str
    requested_at_ms: int
    decision: RecordData | None
    correlation_id: str
    created: Created


class BudgetRefund(TypedDict):
    budget_id: str
    period_id: str
    amount: str
    billing_event_id: str
    refunded_at_ms: int
    correlation_id: str
    created: Created


class AllocationSentinel(TypedDict):
    """``unique/allocation/<listener_id>/<seq20(day)>``: one listener-day's slice, allocated by one path."""

    budget_id: str
    amount: str
    line_ids: NotRequired[list[str]]  # AllocateListenerDay's
    artifact: NotRequired[DayLineArtifact]  # a freeze's (docs/adr/0073)


def lot_key(lot_id: str) -> str:
    return key("lot", lot_id)


def budget_key(budget_id: str) -> str:
    return key("budget", budget_id)


def line_key(line_id: str) -> str:
    return key("allocation_line", line_id)


def correction_key(correction_id: str) -> str:
    return key("correction", correction_id)


def correction_request_key(correction_id: str) -> str:
    return key("correction_request", correction_id)


def budget_refund_key(budget_id: str) -> str:
    return key("budget_refund", budget_id)


def funding_sentinel_key(period_id: str, version: int) -> str:
    """``unique/budget_funding/<period>/<seq20(version)>``: version 1 names the period's budget."""
    return key("budget_funding", period_id, seq20(version))


def allocation_sentinel_key(listener_id: str, day: int) -> str:
    return key("allocation", listener_id, seq20(day))


def unfrozen_sentinel_key(listener_id: str, day: int) -> str:
    """``unique/unfrozen/<listener>/<seq20(day)>``: the one correction that took a frozen listener-day out."""
    return key("unfrozen", listener_id, seq20(day))


class DayChunkRecipient(TypedDict):
    role: LineRole
    recipient_id: str | None
    amount: str
    line_id: str  # its day line, ``day_lines.day_line_id(day, chunk, role, recipient_id)``


class DayChunk(TypedDict):
    """A frozen chunk of a day's allocation artifact (commands/money/freeze.py): what its day lines total."""

    day: int
    chunk: int
    hash: str  # SHA-256 of the chunk's artifact bytes, stored as evidence
    request_id: str
    size: int
    listener_days: int
    amount: str
    recipients: list[DayChunkRecipient]
    budgets: list[dict[str, str]]  # {"budget_id", "amount"}, by budget
    correlation_id: str
    created: Created


DayAllocationStatus = Literal["requested", "running", "done"]


class DayAllocationDay(TypedDict):
    day: int
    status: DayAllocationStatus
    listener_days_split: int
    listener_days_frozen: int
    amount: str
    chunks: list[int]  # the frozen chunks counted, by number


class DayAllocationRefusal(TypedDict):
    """A listener-day of the day the owner did not freeze, with the code that refused it."""

    day: int
    listener_id: str
    code: str
    detail: str


class DayAllocation(TypedDict):
    """``state/day_allocation/<request_id>``: an AllocateDay request and how far the owner got
    (commands/money/allocate_day.py)."""

    request_id: str
    first_day: int
    last_day: int
    status: DayAllocationStatus
    requested_by: str
    days: list[DayAllocationDay]
    listener_days_split: int
    listener_days_frozen: int
    chunks_frozen: int
    amount: str
    refused: list[DayAllocationRefusal]
    correlation_id: str
    created: Created


def day_chunk_key(day: int, chunk: int) -> str:
    return key("day_chunk", seq20(day), seq20(chunk))

"""Conservation invariants and the payout block they control.

Every funded budget satisfies the conservation equation (docs/spec/ledger-invariants.md §2)

    funded + additions == unallocated + outstanding + paid + refunds_reversals + frozen

where ``outstanding`` is the payable and reserved allocation lines, ``paid``
the paid lines (Porto's retained share is paid when it is allocated),
``refunds_reversals`` what corrections and a refund of the period took out of
the budget, each counted once, and ``frozen`` what freezes moved out of
``unallocated`` (docs/adr/0073): the ``amount`` of the allocation sentinels a
freeze claimed, each naming its ``artifact``, less what corrections of frozen
listener-days took out of it again (each correction's ``unfrozen``).
``frozen`` is absent from every budget no freeze touched and counts as zero
there. A *day line* (an allocation
line with no budget, ledger_engine/domain/day_lines.py) counts in no budget
term: paying it moves none. Two checks hold the terms to the records they summarise:

- ``command_mismatches(changes)``: after one command, for every budget it
  touched (wrote, or wrote a line, correction, freeze sentinel or
  ``budget_unallocated`` posting of), the equation holds, and each term changed
  by exactly what the command's lot draws, line status changes, corrections,
  freeze sentinels and postings account for; every line it wrote is an
  ordinary line of a budget or a well-formed day line. Accounting rules end
  with ``require_conserved``: a command that would break conservation is
  rejected with INVARIANT_VIOLATION and changes nothing.
- ``ledger_mismatches(view)``: the full check (docs/spec/ledger-invariants.md §4), every budget, lot, line,
  correction, freeze sentinel and frozen chunk from scratch. ``CheckConservation`` runs it and records its verdict
  at ``state/conservation``; while that says ``blocked``, ``require_payouts_unblocked`` rejects with
  PAYOUTS_BLOCKED. Only a later clean check lifts the block.

The full check is ``FULL_CHECK``: one named pure function per invariant, each given the ledger as read
(``LedgerState``, built over a read-only view) and returning its mismatches, run in this order. An
``EachRecord`` runs its invariants record by record over one kind of record, so a record's mismatches stay
together; the verdict keeps the first mismatches in this order and is journalled, so the order never changes.

Every allocation line:
- ``line_names_its_budget_or_is_a_day_line``: an ordinary line of a budget, or a well-formed day line.
Every correction:
- ``correction_accounts_for_what_it_reversed``: replaced + released + refunded reversal = reversed.
- ``frozen_correction_unfreezes_its_parts``: reversed = unfrozen = its parts, for a frozen listener-day.
Every corrected frozen listener-day:
- ``listener_day_leaves_its_freeze_once``: one correction at most takes it out of its freeze.
- ``correction_unfreezes_what_its_listener_day_froze``: that chunk, that budget, its whole slice.
Every frozen chunk (``state/day_chunk/``, commands/money/freeze.py):
- ``chunk_corrections_take_from_recipients_it_pays``: no part of a (role, recipient) it pays nothing.
- ``chunk_totals_are_paid_by_its_day_lines``: one day line per total, its derived ID and amount; its live day
  line and the parts corrections took out of it add up to the total.
- ``chunk_day_lines_are_in_its_totals``: no day line naming it beyond those and its corrections' remainders.
- ``chunk_totals_agree``: amount = recipients' totals = budgets' totals.
- ``chunk_budgets_are_its_freeze_sentinels``: its budget totals are the slices of the sentinels naming it.
- ``chunk_listener_days_are_its_freeze_sentinels``: its listener-day count is the sentinels naming it.
- ``records_name_the_chunk_by_its_hash``: day lines, sentinels and corrections name it with its hash.
- ``named_chunks_are_recorded``: every chunk they name is recorded.
Every budget:
- ``budget_balances``: the conservation equation.
- ``budget_funding_is_its_lot_draws``: funded and additions against the lot draws it records.
- ``budget_terms_are_their_records``: outstanding, paid, refunds_reversals and frozen against its lines,
  corrections, refund and freeze sentinels, each counted once.
- ``refunded_budget_holds_nothing_unallocated``: units back in it could never be allocated nor refunded.
- ``records_name_existing_budgets``: every budget those records name exists.
Every lot, against the budgets and its deposit evidence (deposits.py):
- ``lot_allocates_no_more_than_it_received``: allocated <= received.
- ``lot_allocated_is_its_budgets_draws``: allocated = what budgets draw on it.
- ``budgets_draw_on_existing_lots``: every lot budgets draw on exists.
- ``lot_is_its_own_canonical_deposit``: a canonical deposit whose two sentinels name it, else a phantom.
- ``deposits_fund_one_lot_each``: no deposit funds two lots.
- ``deposit_sentinels_name_existing_lots``: every deposit sentinel names a lot that exists.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Iterable, Iterator

from ledger_engine.amounts import parse_amount
from ledger_engine.domain.changes import Changes, Rejected
from ledger_engine.domain.deposits import (
    EVIDENCE_PREFIX, UNIT_PREFIX, DepositSentinel, deposit_evidence_key, deposit_unit_key, is_canonical,
)
from ledger_engine.domain.chart import UNALLOCATED_PREFIX
from ledger_engine.domain.day_lines import day_line_id, is_day_line, line_budget, line_problems
from ledger_engine.domain.postings import POSTED
from ledger_engine.domain.schema.money_allocation import (
    ALLOCATION_SENTINEL_PREFIX, BUDGET_PREFIX, CORRECTION_PREFIX, DAY_CHUNK_PREFIX, LINE_PREFIX, LOT_PREFIX,
    REFUND_PREFIX, AllocationLine, AllocationSentinel, Budget, BudgetRefund, BudgetTerm, Correction, DayChunk,
    DayChunkRecipient, DayLineArtifact, Lot, allocation_sentinel_key, day_chunk_key,
)
from ledger_engine.domain.view import Shape, StateView, shaped
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE, UNIQUE
from ledger_engine.open_json import JournalEvent

CONSERVATION_KEY = "conservation"
FUNDING_TERMS: tuple[BudgetTerm, ...] = ("funded", "additions")
HOLDING_TERMS: tuple[BudgetTerm, ...] = ("unallocated", "outstanding", "paid", "refunds_reversals", "frozen")
TERMS = (*FUNDING_TERMS, *HOLDING_TERMS)
# Terms a budget records only once something moved them: absent is zero, so older records keep their bytes.
OPTIONAL_TERMS: frozenset[BudgetTerm] = frozenset({"frozen"})
# Which budget term an allocation line's amount counts in, by the line's status.
LINE_TERM: dict[str, BudgetTerm] = {"payable": "outstanding", "reserved": "outstanding", "paid": "paid"}


@dataclass(frozen=True, slots=True)
class Mismatch:
    subject: str
    check: str
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"subject": self.subject, "check": self.check, "detail": self.detail}


def require_conserved(changes: Changes) -> None:
    """Reject with INVARIANT_VIOLATION if this command breaks conservation of a budget it touched."""
    _require_none(command_mismatches(changes), ErrorCode.INVARIANT_VIOLATION)


def require_payouts_unblocked(changes: Changes) -> None:
    """Reject with PAYOUTS_BLOCKED while the last full check failed, or if this command's
    writes so far break conservation; call it after the command's own writes."""
    record = changes.get(STATE, CONSERVATION_KEY)
    if record is not None and record.data["status"] != "clear":
        raise Rejected(ErrorCode.PAYOUTS_BLOCKED, f"conservation check {record.data['check_id']} found "
                                                  f"{record.data['mismatch_count']} mismatches")
    _require_none(command_mismatches(changes), ErrorCode.PAYOUTS_BLOCKED)


def _require_none(mismatches: list[Mismatch], code: ErrorCode) -> None:
    if mismatches:
        first = mismatches[0]
        raise Rejected(code, f"{len(mismatches)} conservation mismatches; first: "
                             f"{first.subject} {first.check}: {first.detail}")


def term_amount(budget: Budget, term: BudgetTerm) -> int:
    return parse_amount(budget.get(term, "0") if term in OPTIONAL_TERMS else budget[term])


def budget_terms(data: Budget | None) -> dict[str, int]:
    return {term: term_amount(data, term) if data else 0 for term in TERMS}


def is_freeze_sentinel(owner: AllocationSentinel) -> bool:
    """An allocation sentinel a freeze claimed: it names the artifact, where AllocateListenerDay's names line IDs."""
    return "artifact" in owner


def unfrozen(correction: Correction) -> int:
    """What a correction took out of its budget's ``frozen``: a frozen listener-day's slice, else nothing."""
    return parse_amount(correction.get("unfrozen", "0"))


def equation_mismatches(subject: str, budget: Budget, terms: dict[str, int] | None = None) -> list[Mismatch]:
    """The equation, and the funding terms against the lot draws the budget records (``terms``: its
    ``budget_terms``, when the caller has them already)."""
    terms = budget_terms(budget) if terms is None else terms
    return _unbalanced(subject, terms) + _undrawn(subject, budget, terms)


def _unbalanced(subject: str, terms: dict[str, int]) -> list[Mismatch]:
    funding = sum(terms[term] for term in FUNDING_TERMS)
    holding = sum(terms[term] for term in HOLDING_TERMS)
    if funding == holding:
        return []
    return [Mismatch(subject, "equation", f"funded + additions {funding} != holdings {holding}")]


def _undrawn(subject: str, budget: Budget, terms: dict[str, int]) -> list[Mismatch]:
    found = []
    drawn: dict[str, int] = defaultdict(int)
    for entry in budget["lots"]:
        drawn["funded" if entry["version"] == 1 else "additions"] += parse_amount(entry["amount"])
    for term in ("funded", "additions"):
        if drawn[term] != terms[term]:
            found.append(Mismatch(subject, term, f"{term} {terms[term]} != lot draws {drawn[term]}"))
    return found


# After one command.

def command_mismatches(changes: Changes) -> list[Mismatch]:
    moved = _movements(changes)
    found, funding_received = [], 0
    for budget_id in sorted(moved.budgets):
        subject = BUDGET_PREFIX + budget_id
        before, after = changes.base.get(STATE, subject), changes.get(STATE, subject)
        if after is None:
            found.append(Mismatch(subject, "exists", "money moved for a budget that does not exist"))
            continue
        budget = after.data_as(Budget)
        old, new = budget_terms(before.data_as(Budget) if before else None), budget_terms(budget)
        found += equation_mismatches(subject, budget, new)
        funding_received += new["funded"] + new["additions"] - old["funded"] - old["additions"]
        for term in HOLDING_TERMS:
            change, expected = new[term] - old[term], moved.terms.get((budget_id, term), 0)
            if change != expected:
                found.append(Mismatch(subject, term,
                                      f"changed by {change}; the command's records account for {expected}"))
    if funding_received != moved.lots_gave:
        found.append(Mismatch("lots", "allocated", f"lots gave {moved.lots_gave}, budgets received {funding_received}"))
    return found + moved.mismatches


@dataclass
class _Movements:
    """What one command's lines, corrections, freeze sentinels, lot draws and postings say budget terms moved by."""

    budgets: set[str] = field(default_factory=set)
    terms: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    lots_gave: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)  # the lots' bounds, and the lines' shapes

    def line(self, subject: str, before: AllocationLine | None, after: AllocationLine) -> None:
        self.mismatches += shape_mismatches(subject, after)
        for sign, line in ((-1, before), (1, after)):
            if line is None or is_day_line(line):  # a day line counts in no budget
                continue
            budget_id = line_budget(line)
            self.budgets.add(budget_id)
            if line["status"] in LINE_TERM:
                self.terms[(budget_id, LINE_TERM[line["status"]])] += sign * parse_amount(line["amount"])

    def frozen(self, owner: AllocationSentinel) -> None:
        """A new freeze sentinel: its listener-day's slice moved to its budget's ``frozen``."""
        self.budgets.add(owner["budget_id"])
        self.terms[(owner["budget_id"], "frozen")] += parse_amount(owner["amount"])

    def taken_out(self, budget_id: str, amount: str) -> None:
        """A new correction's refund, or the refund of the budget's period."""
        self.budgets.add(budget_id)
        self.terms[(budget_id, "refunds_reversals")] += parse_amount(amount)

    def correction(self, correction: Correction) -> None:
        """A new correction: its refund, and what a frozen listener-day's took out of ``frozen``."""
        self.taken_out(correction["budget_id"], correction["refunded"])
        self.terms[(correction["budget_id"], "frozen")] -= unfrozen(correction)

    def lot(self, subject: str, before: Lot | None, after: Lot) -> None:
        self.lots_gave += parse_amount(after["allocated"]) - (parse_amount(before["allocated"]) if before else 0)
        self.mismatches += _lot_bound(subject, after)

    def postings(self, events: Iterable[JournalEvent]) -> None:
        """Net credits to each ``budget_unallocated:<budget>`` account."""
        for event in events:
            if event["type"] != POSTED:
                continue
            for line in event["lines"]:
                if line["account"].startswith(UNALLOCATED_PREFIX):
                    budget_id = line["account"][len(UNALLOCATED_PREFIX):]
                    sign = 1 if line["side"] == "credit" else -1
                    self.budgets.add(budget_id)
                    self.terms[(budget_id, "unallocated")] += sign * parse_amount(line["amount"])


def _movements(changes: Changes) -> _Movements:
    moved = _Movements()
    for (family, record_key), data in sorted(changes.writes.items()):
        if data is None or family not in (STATE, UNIQUE):
            continue
        # The record as it was is read only where it counts: a budget's is read by the check itself, and a
        # freeze writes thousands of budgets and sentinels in one command.
        if family == UNIQUE:
            owner = shaped(data, AllocationSentinel)
            if (record_key.startswith(ALLOCATION_SENTINEL_PREFIX) and is_freeze_sentinel(owner)
                    and _is_new(changes, family, record_key)):
                moved.frozen(owner)
        elif record_key.startswith(LINE_PREFIX):
            moved.line(record_key, _before(changes, family, record_key, AllocationLine), shaped(data, AllocationLine))
        elif record_key.startswith(CORRECTION_PREFIX) and _is_new(changes, family, record_key):
            moved.correction(shaped(data, Correction))
        elif record_key.startswith(REFUND_PREFIX) and _is_new(changes, family, record_key):
            moved.taken_out(data["budget_id"], data["amount"])
        elif record_key.startswith(BUDGET_PREFIX):
            moved.budgets.add(record_key[len(BUDGET_PREFIX):])
        elif record_key.startswith(LOT_PREFIX):
            moved.lot(record_key, _before(changes, family, record_key, Lot), shaped(data, Lot))
    moved.postings(changes.events)
    return moved


def _before(changes: Changes, family: str, record_key: str, shape: type[Shape]) -> Shape | None:
    before = changes.base.get(family, record_key)
    return before.data_as(shape) if before else None


def _is_new(changes: Changes, family: str, record_key: str) -> bool:
    return changes.base.get(family, record_key) is None


def shape_mismatches(subject: str, line: AllocationLine) -> list[Mismatch]:
    """An ordinary line names its budget; a line without one is a day line with its artifact and derived ID."""
    return [Mismatch(subject, "day_line" if is_day_line(line) else "budget", problem)
            for problem in line_problems(line)]


def _lot_bound(subject: str, lot: Lot) -> list[Mismatch]:
    if parse_amount(lot["allocated"]) <= parse_amount(lot["received"]):
        return []
    return [Mismatch(subject, "received", f"allocated {lot['allocated']} exceeds received {lot['received']}")]


# The whole ledger, as read.

ChunkId = tuple[int, int]  # (day, chunk)
Recipient = tuple[str, str | None]  # (role, recipient_id)


def chunk_id(record: DayChunk | DayLineArtifact) -> ChunkId:
    """The chunk a chunk record is, or an ``artifact`` names."""
    return record["day"], record["chunk"]


@dataclass
class FrozenChunks:
    """The well-formed day lines, freeze sentinels and corrections of frozen listener-days, by the chunk their
    ``artifact`` names."""

    lines: dict[ChunkId, dict[str, AllocationLine]] = field(default_factory=lambda: defaultdict(dict))
    slices: dict[ChunkId, dict[str, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    counts: dict[ChunkId, int] = field(default_factory=lambda: defaultdict(int))
    # Every record naming a chunk, with the hash it names it by.
    hashes: dict[ChunkId, set[tuple[str, str]]] = field(default_factory=lambda: defaultdict(set))
    # What corrections of frozen listener-days took out of each chunk's day lines, by (role, recipient).
    corrected: dict[ChunkId, dict[Recipient, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    corrections: dict[ChunkId, set[str]] = field(default_factory=lambda: defaultdict(set))
    listener_days: dict[tuple[str, int], list[tuple[str, Correction]]] = field(
        default_factory=lambda: defaultdict(list))

    def line(self, subject: str, line: AllocationLine) -> None:
        chunk = chunk_id(line["artifact"])
        self.lines[chunk][line["line_id"]] = line
        self.hashes[chunk].add((subject, line["artifact"]["hash"]))

    def sentinel(self, subject: str, owner: AllocationSentinel) -> None:
        chunk = chunk_id(owner["artifact"])
        self.slices[chunk][owner["budget_id"]] += parse_amount(owner["amount"])
        self.counts[chunk] += 1
        self.hashes[chunk].add((subject, owner["artifact"]["hash"]))

    def correction(self, subject: str, correction: Correction) -> None:
        """A correction of a frozen listener-day: the parts it took out of its chunk's day lines."""
        chunk = chunk_id(correction["artifact"])
        for part in correction["parts"]:
            self.corrected[chunk][(part["role"], part["recipient_id"])] += parse_amount(part["amount"])
        self.corrections[chunk].add(correction["correction_id"])
        self.hashes[chunk].add((subject, correction["artifact"]["hash"]))
        listener_day = correction["listener_day"]
        assert listener_day is not None, subject  # a frozen listener-day's correction names it
        self.listener_days[tuple(listener_day)].append((subject, correction))


@dataclass
class Tally:
    """What the lines, freeze sentinels, corrections and refunds say each budget term holds, which budgets were
    refunded, the frozen chunks, and the lines that are neither an ordinary line nor a well-formed day line."""

    recorded: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    refunded: set[str] = field(default_factory=set)
    frozen: FrozenChunks = field(default_factory=FrozenChunks)
    misshapen: list[tuple[str, AllocationLine]] = field(default_factory=list)

    def line(self, subject: str, line: AllocationLine) -> None:
        problems = line_problems(line)
        if problems:
            self.misshapen.append((subject, line))
        if is_day_line(line):
            if not problems:
                self.frozen.line(subject, line)
            return
        budget_id = line_budget(line)
        if line["status"] in LINE_TERM:
            self.recorded[(budget_id, LINE_TERM[line["status"]])] += parse_amount(line["amount"])

    def sentinel(self, subject: str, owner: AllocationSentinel) -> None:
        if is_freeze_sentinel(owner):
            self.recorded[(owner["budget_id"], "frozen")] += parse_amount(owner["amount"])
            self.frozen.sentinel(subject, owner)

    def correction(self, subject: str, correction: Correction) -> None:
        self.recorded[(correction["budget_id"], "refunds_reversals")] += parse_amount(correction["refunded"])
        self.recorded[(correction["budget_id"], "frozen")] -= unfrozen(correction)
        if "unfrozen" in correction:
            self.frozen.correction(subject, correction)

    def refund(self, refund: BudgetRefund) -> None:
        self.recorded[(refund["budget_id"], "refunds_reversals")] += parse_amount(refund["amount"])
        self.refunded.add(refund["budget_id"])


class LedgerState:
    """The ledger as the full check reads it through a read-only view: its records of each kind in key order, and
    what they add up to (``tally``, ``lot_draws``), each summed once, when an invariant first asks. The lines, most
    of a ledger, are read once, into the tally: no invariant walks them again."""

    def __init__(self, view: StateView) -> None:
        self._view = view

    def get(self, family: str, key: str, shape: type[Shape]) -> Shape | None:
        record = self._view.get(family, key)
        return None if record is None else record.data_as(shape)

    def scan(self, family: str, prefix: str, shape: type[Shape]) -> Iterator[tuple[str, Shape]]:
        return ((key, record.data_as(shape)) for key, record in self._view.scan(family, prefix))

    def corrections(self) -> Iterator[tuple[str, Correction]]:
        return self.scan(STATE, CORRECTION_PREFIX, Correction)

    def corrected_listener_days(self) -> list[tuple[tuple[str, int], list[tuple[str, Correction]]]]:
        """Each frozen listener-day corrections took out of its freeze, with those corrections."""
        return sorted(self.tally.frozen.listener_days.items())

    def chunks(self) -> tuple[tuple[str, DayChunk], ...]:
        return self._chunks

    def budgets(self) -> tuple[tuple[str, Budget], ...]:
        return self._budgets

    def lots(self) -> tuple[tuple[str, Lot], ...]:
        return self._lots

    @cached_property
    def tally(self) -> Tally:
        tally = Tally()
        for subject, line in self.scan(STATE, LINE_PREFIX, AllocationLine):
            tally.line(subject, line)
        for subject, owner in self.scan(UNIQUE, ALLOCATION_SENTINEL_PREFIX, AllocationSentinel):
            tally.sentinel(subject, owner)
        for subject, correction in self.corrections():
            tally.correction(subject, correction)
        for _, refund in self.scan(STATE, REFUND_PREFIX, BudgetRefund):
            tally.refund(refund)
        return tally

    @cached_property
    def lot_draws(self) -> dict[str, int]:
        """What the budgets draw on each lot they name."""
        drawn: dict[str, int] = defaultdict(int)
        for _, budget in self.budgets():
            for entry in budget["lots"]:
                drawn[entry["lot_id"]] += parse_amount(entry["amount"])
        return drawn

    @cached_property
    def _chunks(self) -> tuple[tuple[str, DayChunk], ...]:
        return tuple(self.scan(STATE, DAY_CHUNK_PREFIX, DayChunk))

    @cached_property
    def _budgets(self) -> tuple[tuple[str, Budget], ...]:
        return tuple(self.scan(STATE, BUDGET_PREFIX, Budget))

    @cached_property
    def _lots(self) -> tuple[tuple[str, Lot], ...]:
        return tuple(self.scan(STATE, LOT_PREFIX, Lot))


LedgerInvariant = Callable[[LedgerState], list[Mismatch]]
RecordInvariant = Callable[[LedgerState, Any, Any], list[Mismatch]]


@dataclass(frozen=True, slots=True)
class EachRecord:
    """Invariants of every record ``records`` walks: a record's mismatches come out together, in the order of
    ``invariants``."""

    records: Callable[[LedgerState], Iterable[tuple[Any, Any]]]
    invariants: tuple[RecordInvariant, ...]

    def __call__(self, state: LedgerState) -> list[Mismatch]:
        return [mismatch for subject, record in self.records(state) for invariant in self.invariants
                for mismatch in invariant(state, subject, record)]


# Every allocation line.

def line_names_its_budget_or_is_a_day_line(state: LedgerState) -> list[Mismatch]:
    """Every allocation line is an ordinary line of a budget, or a day line with its artifact and derived ID."""
    return [mismatch for subject, line in state.tally.misshapen for mismatch in shape_mismatches(subject, line)]


# Every correction.

def correction_accounts_for_what_it_reversed(state: LedgerState, subject: str,
                                             correction: Correction) -> list[Mismatch]:
    """What a correction reversed went to replacements, back to unallocated, or out as a refund."""
    reversed_amount = parse_amount(correction["reversed"])
    accounted = (parse_amount(correction["replaced"]) + parse_amount(correction["released"])
                 + parse_amount(correction["refunded"]) - parse_amount(correction["refunded_unallocated"]))
    if reversed_amount == accounted:
        return []
    return [Mismatch(CORRECTION_PREFIX + correction["correction_id"], "arithmetic",
                     f"reversed {reversed_amount} != replaced + released + refunded reversal {accounted}")]


def frozen_correction_unfreezes_its_parts(state: LedgerState, subject: str, correction: Correction) -> list[Mismatch]:
    """A correction of a frozen listener-day reversed, unfroze and took out of its day lines one amount."""
    if "unfrozen" not in correction:
        return []
    reversed_amount = parse_amount(correction["reversed"])
    parts = sum(parse_amount(part["amount"]) for part in correction["parts"])
    if reversed_amount == unfrozen(correction) == parts:
        return []
    return [Mismatch(CORRECTION_PREFIX + correction["correction_id"], "unfrozen",
                     f"reversed {reversed_amount}, unfrozen {correction['unfrozen']}, parts {parts}")]


# Every corrected frozen listener-day.

def listener_day_leaves_its_freeze_once(state: LedgerState, listener_day: tuple[str, int],
                                        corrections: list[tuple[str, Correction]]) -> list[Mismatch]:
    """A frozen listener-day is taken out of its freeze by one correction at most."""
    if len(corrections) <= 1:
        return []
    listener_id, day = listener_day
    return [Mismatch(corrections[0][0], "listener_day", f"listener-day {listener_id}/{day} is taken out of its "
                                                        f"freeze by {len(corrections)} corrections")]


def correction_unfreezes_what_its_listener_day_froze(state: LedgerState, listener_day: tuple[str, int],
                                                     corrections: list[tuple[str, Correction]]) -> list[Mismatch]:
    """A frozen listener-day's correction unfreezes what its freeze sentinel froze: that chunk, budget and slice."""
    listener_id, day = listener_day
    owner = state.get(UNIQUE, allocation_sentinel_key(listener_id, day), AllocationSentinel)
    return [Mismatch(subject, "listener_day", f"unfroze {correction['unfrozen']} of listener-day {listener_id}/{day} "
                                              f"in budget {correction['budget_id']} from chunk "
                                              f"{correction['artifact']}, its freeze sentinel says {owner or None}")
            for subject, correction in corrections
            if owner is None or not is_freeze_sentinel(owner) or owner["artifact"] != correction["artifact"]
            or (owner["budget_id"], owner["amount"]) != (correction["budget_id"], correction["unfrozen"])]


# Every frozen chunk.

def chunk_corrections_take_from_recipients_it_pays(state: LedgerState, subject: str,
                                                   chunk: DayChunk) -> list[Mismatch]:
    """Corrections take parts out of a chunk's day lines only for a (role, recipient) it pays."""
    totals = {(total["role"], total["recipient_id"]) for total in chunk["recipients"]}
    corrected = state.tally.frozen.corrected.get(chunk_id(chunk), {})
    return [Mismatch(subject, "day_lines", f"corrections took {amount} of {role} {recipient_id}, whom it pays nothing")
            for (role, recipient_id), amount in corrected.items() if (role, recipient_id) not in totals]


def chunk_totals_are_paid_by_its_day_lines(state: LedgerState, subject: str, chunk: DayChunk) -> list[Mismatch]:
    """Each chunk total has its derived day line; its live day line and the parts corrected out add up to it."""
    frozen, found = state.tally.frozen, []
    lines = frozen.lines.get(chunk_id(chunk), {})
    corrected = frozen.corrected.get(chunk_id(chunk), {})
    remainders = _remainders(lines, frozen.corrections.get(chunk_id(chunk), set()))
    for total in chunk["recipients"]:
        line_id = day_line_id(chunk["day"], chunk["chunk"], total["role"], total["recipient_id"])
        found += _total_mismatches(subject, total, line_id, lines, remainders,
                                   corrected.get((total["role"], total["recipient_id"]), 0))
    return found


def chunk_day_lines_are_in_its_totals(state: LedgerState, subject: str, chunk: DayChunk) -> list[Mismatch]:
    """Every day line naming a chunk is the day line of one of its totals, or a remainder its corrections left."""
    frozen = state.tally.frozen
    lines = frozen.lines.get(chunk_id(chunk), {})
    named = _remainders(lines, frozen.corrections.get(chunk_id(chunk), set())) | {
        day_line_id(chunk["day"], chunk["chunk"], total["role"], total["recipient_id"])
        for total in chunk["recipients"]}
    return [Mismatch(LINE_PREFIX + line_id, "artifact", f"is in no total of {subject}")
            for line_id in sorted(lines.keys() - named)]


def chunk_totals_agree(state: LedgerState, subject: str, chunk: DayChunk) -> list[Mismatch]:
    """A chunk's amount, the sum of its recipients' totals and the sum of its budgets' totals are one amount."""
    paid = sum(parse_amount(total["amount"]) for total in chunk["recipients"])
    budgets = _chunk_budgets(chunk)
    amount = parse_amount(chunk["amount"])
    if paid == sum(budgets.values()) == amount:
        return []
    return [Mismatch(subject, "totals", f"amount {amount}, recipients {paid}, budgets {sum(budgets.values())}")]


def chunk_budgets_are_its_freeze_sentinels(state: LedgerState, subject: str, chunk: DayChunk) -> list[Mismatch]:
    """A chunk's budget totals are the slices of the freeze sentinels naming it, budget by budget."""
    budgets, slices = _chunk_budgets(chunk), state.tally.frozen.slices.get(chunk_id(chunk), {})
    if budgets == slices:
        return []
    return [Mismatch(subject, "budgets", f"budget totals {sorted(budgets.items())} != the freeze sentinels naming it "
                                         f"{sorted(slices.items())}")]


def chunk_listener_days_are_its_freeze_sentinels(state: LedgerState, subject: str, chunk: DayChunk) -> list[Mismatch]:
    """A chunk's listener-day count is the number of freeze sentinels naming it."""
    sentinels = state.tally.frozen.counts.get(chunk_id(chunk), 0)
    if chunk["listener_days"] == sentinels:
        return []
    return [Mismatch(subject, "listener_days", f"{chunk['listener_days']} listener-days != {sentinels} freeze "
                                               "sentinels naming it")]


def records_name_the_chunk_by_its_hash(state: LedgerState, subject: str, chunk: DayChunk) -> list[Mismatch]:
    """Every day line, freeze sentinel and correction naming a chunk names it with the hash it was frozen with."""
    day, number = chunk_id(chunk)
    return [Mismatch(named, "artifact", f"names chunk {number} of day {day} with hash {digest}, which is frozen with "
                                        f"{chunk['hash']}")
            for named, digest in sorted(state.tally.frozen.hashes.get((day, number), ())) if digest != chunk["hash"]]


def named_chunks_are_recorded(state: LedgerState) -> list[Mismatch]:
    """Every chunk a day line, freeze sentinel or correction names is recorded."""
    hashes, found = state.tally.frozen.hashes, []
    for day, number in sorted(hashes.keys() - {chunk_id(chunk) for _, chunk in state.chunks()}):
        found += [Mismatch(named, "artifact", f"names chunk {number} of day {day}, which is not recorded "
                                              f"({day_chunk_key(day, number)})")
                  for named, _ in sorted(hashes[(day, number)])]
    return found


def _remainders(lines: dict[str, AllocationLine], corrections: set[str]) -> set[str]:
    """The day lines of a chunk that its corrections left as remainders."""
    return {line_id for line_id, line in lines.items() if line["correction_id"] in corrections}


def _chunk_budgets(chunk: DayChunk) -> dict[str, int]:
    return {entry["budget_id"]: parse_amount(entry["amount"]) for entry in chunk["budgets"]}


def _total_mismatches(subject: str, total: DayChunkRecipient, line_id: str, lines: dict[str, AllocationLine],
                      remainders: set[str], corrected: int) -> list[Mismatch]:
    """A chunk's total for a (role, recipient) against the day line ``line_id`` derived for it, and what is live of
    its day lines, with what corrections took out of them, against the total."""
    line = lines.get(line_id)
    if total["line_id"] != line_id:
        return [Mismatch(subject, "day_lines", f"names {total['line_id']} for {total['role']} "
                                               f"{total['recipient_id']}, not the derived {line_id}")]
    if line is None:
        return [Mismatch(subject, "day_lines", f"no day line {line_id} pays {total['role']} "
                                               f"{total['recipient_id']} its {total['amount']}")]
    if (line["role"], line["recipient_id"], line["amount"]) != (total["role"], total["recipient_id"], total["amount"]):
        return [Mismatch(subject, "day_lines", f"day line {line_id} pays {line['role']} {line['recipient_id']} "
                                               f"{line['amount']}, the chunk {total['role']} {total['recipient_id']} "
                                               f"{total['amount']}")]
    live = _live_day_lines(total, lines, remainders)
    amount = sum(parse_amount(line["amount"]) for line in live)
    if len(live) <= 1 and amount + corrected == parse_amount(total["amount"]):
        return []
    return [Mismatch(subject, "day_lines", f"{total['role']} {total['recipient_id']}: {len(live)} live day lines of "
                                           f"{amount} and {corrected} corrected out of them, not its total "
                                           f"{total['amount']}")]


def _live_day_lines(total: DayChunkRecipient, lines: dict[str, AllocationLine],
                    remainders: set[str]) -> list[AllocationLine]:
    """A (role, recipient)'s day lines not reversed: the freeze's, and the remainders its corrections left."""
    recipient = (total["role"], total["recipient_id"])
    return [line for line_id, line in lines.items()
            if (line["role"], line["recipient_id"]) == recipient and line["status"] != "reversed"
            and (line["correction_id"] is None or line_id in remainders)]


# Every budget.

def budget_balances(state: LedgerState, subject: str, budget: Budget) -> list[Mismatch]:
    """funded + additions == unallocated + outstanding + paid + refunds_reversals + frozen."""
    return _unbalanced(subject, budget_terms(budget))


def budget_funding_is_its_lot_draws(state: LedgerState, subject: str, budget: Budget) -> list[Mismatch]:
    """A budget's ``funded`` and ``additions`` are the lot draws it records for its first and later versions."""
    return _undrawn(subject, budget, budget_terms(budget))


def budget_terms_are_their_records(state: LedgerState, subject: str, budget: Budget) -> list[Mismatch]:
    """A budget's outstanding, paid, refunds_reversals and frozen are what its records add up to, each once."""
    terms, budget_id, recorded = budget_terms(budget), subject[len(BUDGET_PREFIX):], state.tally.recorded
    return [Mismatch(subject, term, f"{term} {terms[term]} != records {recorded.get((budget_id, term), 0)}")
            for term in ("outstanding", "paid", "refunds_reversals", "frozen")
            if terms[term] != recorded.get((budget_id, term), 0)]


def refunded_budget_holds_nothing_unallocated(state: LedgerState, subject: str, budget: Budget) -> list[Mismatch]:
    """A refunded budget holds nothing unallocated: units back in it could never be allocated nor refunded."""
    if subject[len(BUDGET_PREFIX):] not in state.tally.refunded or parse_amount(budget["unallocated"]) == 0:
        return []
    return [Mismatch(subject, "unallocated", f"the budget was refunded, yet holds {budget['unallocated']} "
                                             "unallocated that nothing may allocate and no refund covers")]


def records_name_existing_budgets(state: LedgerState) -> list[Mismatch]:
    """Every budget a line, correction, refund or freeze sentinel names exists."""
    budget_ids = {subject[len(BUDGET_PREFIX):] for subject, _ in state.budgets()}
    return [Mismatch(BUDGET_PREFIX + budget_id, "exists", "lines, corrections or freezes name a missing budget")
            for budget_id in sorted({budget_id for budget_id, _ in state.tally.recorded} - budget_ids)]


# Every lot.

def lot_allocates_no_more_than_it_received(state: LedgerState, subject: str, lot: Lot) -> list[Mismatch]:
    """A lot has allocated no more than it received."""
    return _lot_bound(subject, lot)


def lot_allocated_is_its_budgets_draws(state: LedgerState, subject: str, lot: Lot) -> list[Mismatch]:
    """What a lot says it allocated is what the budgets draw on it."""
    draws = state.lot_draws.get(subject[len(LOT_PREFIX):], 0)
    if parse_amount(lot["allocated"]) == draws:
        return []
    return [Mismatch(subject, "allocated", f"allocated {lot['allocated']} != budget draws {draws}")]


def budgets_draw_on_existing_lots(state: LedgerState) -> list[Mismatch]:
    """Every lot a budget draws on exists."""
    lot_ids = {subject[len(LOT_PREFIX):] for subject, _ in state.lots()}
    return [Mismatch(LOT_PREFIX + lot_id, "exists", "budgets draw on a missing lot")
            for lot_id in sorted(state.lot_draws.keys() - lot_ids)]


def lot_is_its_own_canonical_deposit(state: LedgerState, subject: str, lot: Lot) -> list[Mismatch]:
    """A lot is a deposit in its canonical form whose unit and evidence sentinels both name it: else a phantom."""
    lot_id, deposit = lot["lot_id"], lot["deposit"]
    if not is_canonical(deposit):
        return [Mismatch(subject, "deposit", f"deposit {deposit} is not in its canonical form")]
    found = []
    for sentinel in (deposit_unit_key(deposit), deposit_evidence_key(deposit)):
        owner = state.get(UNIQUE, sentinel, DepositSentinel)
        if owner is None or owner["lot_id"] != lot_id:
            found.append(Mismatch(subject, "deposit", f"{sentinel} names {owner and owner['lot_id']}, not this lot: "
                                                      "the lot has no deposit of its own"))
    return found


def deposits_fund_one_lot_each(state: LedgerState) -> list[Mismatch]:
    """No deposit funds two lots."""
    lots_by_sentinel: dict[str, list[str]] = defaultdict(list)
    for _, lot in state.lots():
        if is_canonical(lot["deposit"]):
            for sentinel in (deposit_unit_key(lot["deposit"]), deposit_evidence_key(lot["deposit"])):
                lots_by_sentinel[sentinel].append(lot["lot_id"])
    return [Mismatch(sentinel, "lots", f"one deposit funds lots {sorted(lot_ids)}")
            for sentinel, lot_ids in sorted(lots_by_sentinel.items()) if len(lot_ids) > 1]


def deposit_sentinels_name_existing_lots(state: LedgerState) -> list[Mismatch]:
    """Every deposit's unit and evidence sentinel names a lot that exists."""
    return [Mismatch(sentinel, "lot", f"names lot {owner['lot_id']}, which does not exist")
            for prefix in (UNIT_PREFIX, EVIDENCE_PREFIX)
            for sentinel, owner in state.scan(UNIQUE, prefix, DepositSentinel)
            if state.get(STATE, LOT_PREFIX + owner["lot_id"], Lot) is None]


# The full check: every invariant, in the order it reports (the module docstring lists them).

FULL_CHECK: tuple[LedgerInvariant | EachRecord, ...] = (
    line_names_its_budget_or_is_a_day_line,
    EachRecord(LedgerState.corrections, (correction_accounts_for_what_it_reversed,
                                         frozen_correction_unfreezes_its_parts)),
    EachRecord(LedgerState.corrected_listener_days, (listener_day_leaves_its_freeze_once,
                                                     correction_unfreezes_what_its_listener_day_froze)),
    EachRecord(LedgerState.chunks, (chunk_corrections_take_from_recipients_it_pays,
                                    chunk_totals_are_paid_by_its_day_lines,
                                    chunk_day_lines_are_in_its_totals,
                                    chunk_totals_agree,
                                    chunk_budgets_are_its_freeze_sentinels,
                                    chunk_listener_days_are_its_freeze_sentinels,
                                    records_name_the_chunk_by_its_hash)),
    named_chunks_are_recorded,
    EachRecord(LedgerState.budgets, (budget_balances,
                                     budget_funding_is_its_lot_draws,
                                     budget_terms_are_their_records,
                                     refunded_budget_holds_nothing_unallocated)),
    records_name_existing_budgets,
    EachRecord(LedgerState.lots, (lot_allocates_no_more_than_it_received,
                                  lot_allocated_is_its_budgets_draws)),
    budgets_draw_on_existing_lots,
    EachRecord(LedgerState.lots, (lot_is_its_own_canonical_deposit,)),
    deposits_fund_one_lot_each,
    deposit_sentinels_name_existing_lots,
)


def ledger_mismatches(view: StateView) -> list[Mismatch]:
    """Every invariant of ``FULL_CHECK``, in its order, over the ledger ``view`` shows."""
    state = LedgerState(view)
    return [mismatch for invariant in FULL_CHECK for mismatch in invariant(state)]

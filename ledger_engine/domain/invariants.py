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
- ``ledger_mismatches(view)``: every budget, lot, line, correction and freeze
  sentinel from scratch; every frozen chunk's record (``state/day_chunk/``,
  commands/money/freeze.py) against its day lines, one per (role, recipient)
  total with its amount, whose live day line (the freeze's or the remainder
  corrections left of it) and the parts corrections of frozen listener-days
  took out of it add up to that total; against the freeze sentinels naming
  it, its listener-day count and budget totals; each such correction against
  its listener-day's freeze sentinel (that chunk, its whole slice, corrected
  once); every day line well formed, with its derived ID, naming a recorded
  chunk (``chunk_mismatches``); and
  every lot against its deposit evidence: a lot whose deposit sentinels do not
  name it, or that shares a deposit with another lot, is a phantom
  (deposits.py), and every refunded budget holds nothing unallocated: units
  back in it could never be allocated nor refunded. ``CheckConservation`` runs
  it and records its verdict at ``state/conservation``; while that says
  ``blocked``, ``require_payouts_unblocked`` rejects with PAYOUTS_BLOCKED. Only
  a later clean check lifts the block.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from ledger_engine.amounts import parse_amount
from ledger_engine.domain.changes import Changes, Rejected
from ledger_engine.domain.deposits import (
    EVIDENCE_PREFIX, UNIT_PREFIX, deposit_evidence_key, deposit_unit_key, is_canonical,
)
from ledger_engine.domain.chart import UNALLOCATED_PREFIX
from ledger_engine.domain.day_lines import day_line_id, is_day_line, line_problems
from ledger_engine.domain.postings import POSTED
from ledger_engine.domain.schema.money_allocation import (
    ALLOCATION_SENTINEL_PREFIX, BUDGET_PREFIX, CORRECTION_PREFIX, DAY_CHUNK_PREFIX, LINE_PREFIX, LOT_PREFIX,
    REFUND_PREFIX, AllocationLine, Budget, Correction, DayChunk, Lot, allocation_sentinel_key, day_chunk_key,
)
from ledger_engine.domain.view import StateView
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE, UNIQUE

CONSERVATION_KEY = "conservation"
FUNDING_TERMS = ("funded", "additions")
HOLDING_TERMS = ("unallocated", "outstanding", "paid", "refunds_reversals", "frozen")
TERMS = (*FUNDING_TERMS, *HOLDING_TERMS)
# Terms a budget records only once something moved them: absent is zero, so older records keep their bytes.
OPTIONAL_TERMS = frozenset({"frozen"})
# Which budget term an allocation line's amount counts in, by the line's status.
LINE_TERM = {"payable": "outstanding", "reserved": "outstanding", "paid": "paid"}


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


def term_amount(budget: Budget, term: str) -> int:
    return parse_amount(budget.get(term, "0") if term in OPTIONAL_TERMS else budget[term])


def budget_terms(data: Budget | None) -> dict[str, int]:
    return {term: term_amount(data, term) if data else 0 for term in TERMS}


def is_freeze_sentinel(owner: dict) -> bool:
    """An allocation sentinel a freeze claimed: it names the artifact, where AllocateListenerDay's names line IDs."""
    return "artifact" in owner


def unfrozen(correction: Correction) -> int:
    """What a correction took out of its budget's ``frozen``: a frozen listener-day's slice, else nothing."""
    return parse_amount(correction.get("unfrozen", "0"))


def equation_mismatches(subject: str, budget: Budget, terms: dict[str, int] | None = None) -> list[Mismatch]:
    """The equation, and the funding terms against the lot draws the budget records (``terms``: its
    ``budget_terms``, when the caller has them already)."""
    terms = budget_terms(budget) if terms is None else terms
    found = []
    funding = sum(terms[term] for term in FUNDING_TERMS)
    holding = sum(terms[term] for term in HOLDING_TERMS)
    if funding != holding:
        found.append(Mismatch(subject, "equation", f"funded + additions {funding} != holdings {holding}"))
    drawn = defaultdict(int)
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
        old, new = budget_terms(before and before.data), budget_terms(after.data)
        found += equation_mismatches(subject, after.data, new)
        funding_received += new["funded"] + new["additions"] - old["funded"] - old["additions"]
        for term in HOLDING_TERMS:
            change, expected = new[term] - old[term], moved.terms.get((budget_id, term), 0)
            if change != expected:
                found.append(Mismatch(subject, term, f"changed by {change}; the command's records account for {expected}"))
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
            self.budgets.add(line["budget_id"])
            if line["status"] in LINE_TERM:
                self.terms[(line["budget_id"], LINE_TERM[line["status"]])] += sign * parse_amount(line["amount"])

    def frozen(self, owner: dict) -> None:
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

    def postings(self, events: Iterable[dict]) -> None:
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
            if (record_key.startswith(ALLOCATION_SENTINEL_PREFIX) and is_freeze_sentinel(data)
                    and _is_new(changes, family, record_key)):
                moved.frozen(data)
        elif record_key.startswith(LINE_PREFIX):
            moved.line(record_key, _before(changes, family, record_key), data)
        elif record_key.startswith(CORRECTION_PREFIX) and _is_new(changes, family, record_key):
            moved.correction(data)
        elif record_key.startswith(REFUND_PREFIX) and _is_new(changes, family, record_key):
            moved.taken_out(data["budget_id"], data["amount"])
        elif record_key.startswith(BUDGET_PREFIX):
            moved.budgets.add(record_key[len(BUDGET_PREFIX):])
        elif record_key.startswith(LOT_PREFIX):
            moved.lot(record_key, _before(changes, family, record_key), data)
    moved.postings(changes.events)
    return moved


def _before(changes: Changes, family: str, record_key: str) -> dict | None:
    before = changes.base.get(family, record_key)
    return before.data if before else None


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


# The whole ledger.

def ledger_mismatches(view: StateView) -> list[Mismatch]:
    """Every budget's equation and terms against its lines, corrections and freeze sentinels, every line's shape,
    every lot against its draws."""
    found: list[Mismatch] = []
    recorded: dict[tuple[str, str], int] = defaultdict(int)
    chunks = _FrozenChunks()
    for record_key, record in view.scan(STATE, LINE_PREFIX):
        line = record.data
        shape = shape_mismatches(record_key, line)
        found += shape
        if is_day_line(line):
            if not shape:
                chunks.line(record_key, line)
        elif line["status"] in LINE_TERM:
            recorded[(line["budget_id"], LINE_TERM[line["status"]])] += parse_amount(line["amount"])
    for sentinel, owner in view.scan(UNIQUE, ALLOCATION_SENTINEL_PREFIX):
        if is_freeze_sentinel(owner.data):
            recorded[(owner.data["budget_id"], "frozen")] += parse_amount(owner.data["amount"])
            chunks.sentinel(sentinel, owner.data)
    for record_key, record in view.scan(STATE, CORRECTION_PREFIX):
        recorded[(record.data["budget_id"], "refunds_reversals")] += parse_amount(record.data["refunded"])
        recorded[(record.data["budget_id"], "frozen")] -= unfrozen(record.data)
        found += _correction_arithmetic(record.data)
        if "unfrozen" in record.data:
            chunks.correction(record_key, record.data)
    found += chunks.mismatches(view)
    refunded = set()
    for _, record in view.scan(STATE, REFUND_PREFIX):
        recorded[(record.data["budget_id"], "refunds_reversals")] += parse_amount(record.data["amount"])
        refunded.add(record.data["budget_id"])
    drawn: dict[str, int] = defaultdict(int)
    budget_ids = set()
    for record_key, record in view.scan(STATE, BUDGET_PREFIX):
        budget_id, budget = record_key[len(BUDGET_PREFIX):], record.data
        budget_ids.add(budget_id)
        found += equation_mismatches(record_key, budget) + _recorded_terms(record_key, budget, recorded)
        if budget_id in refunded:
            found += _stranded_in_a_refunded_budget(record_key, budget)
        for entry in budget["lots"]:
            drawn[entry["lot_id"]] += parse_amount(entry["amount"])
    found += [Mismatch(BUDGET_PREFIX + budget_id, "exists", "lines, corrections or freezes name a missing budget")
              for budget_id in sorted({budget for budget, _ in recorded} - budget_ids)]
    for record_key, record in view.scan(STATE, LOT_PREFIX):
        found += _lot_bound(record_key, record.data)
        draws = drawn.pop(record_key[len(LOT_PREFIX):], 0)
        if parse_amount(record.data["allocated"]) != draws:
            found.append(Mismatch(record_key, "allocated", f"allocated {record.data['allocated']} != budget draws {draws}"))
    found += [Mismatch(LOT_PREFIX + lot_id, "exists", "budgets draw on a missing lot") for lot_id in sorted(drawn)]
    return found + lot_deposit_mismatches(view)


@dataclass
class _FrozenChunks:
    """The well-formed day lines and the freeze sentinels, by the chunk their ``artifact`` names."""

    lines: dict[tuple[int, int], dict[str, AllocationLine]] = field(default_factory=lambda: defaultdict(dict))
    slices: dict[tuple[int, int], dict[str, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    counts: dict[tuple[int, int], int] = field(default_factory=lambda: defaultdict(int))
    hashes: dict[tuple[int, int], set[tuple[str, str]]] = field(default_factory=lambda: defaultdict(set))
    # What corrections of frozen listener-days took out of each chunk's day lines, by (role, recipient).
    corrected: dict[tuple[int, int], dict[tuple[str, str | None], int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    corrections: dict[tuple[int, int], set[str]] = field(default_factory=lambda: defaultdict(set))
    listener_days: dict[tuple[str, int], list[str]] = field(default_factory=lambda: defaultdict(list))

    def line(self, subject: str, line: AllocationLine) -> None:
        chunk = (line["artifact"]["day"], line["artifact"]["chunk"])
        self.lines[chunk][line["line_id"]] = line
        self.hashes[chunk].add((subject, line["artifact"]["hash"]))

    def sentinel(self, subject: str, owner: dict) -> None:
        artifact = owner["artifact"]
        chunk = (artifact["day"], artifact["chunk"])
        self.slices[chunk][owner["budget_id"]] += parse_amount(owner["amount"])
        self.counts[chunk] += 1
        self.hashes[chunk].add((subject, artifact["hash"]))

    def correction(self, subject: str, correction: Correction) -> None:
        """A correction of a frozen listener-day: the parts it took out of its chunk's day lines."""
        artifact = correction["artifact"]
        chunk = (artifact["day"], artifact["chunk"])
        for part in correction["parts"]:
            self.corrected[chunk][(part["role"], part["recipient_id"])] += parse_amount(part["amount"])
        self.corrections[chunk].add(correction["correction_id"])
        self.hashes[chunk].add((subject, artifact["hash"]))
        self.listener_days[tuple(correction["listener_day"])].append(subject)

    def mismatches(self, view: StateView) -> list[Mismatch]:
        found, recorded = self._listener_day_mismatches(view), set()
        for record_key, record in view.scan(STATE, DAY_CHUNK_PREFIX):
            chunk = (record.data["day"], record.data["chunk"])
            recorded.add(chunk)
            found += chunk_mismatches(record_key, record.data, self.lines.get(chunk, {}), self.slices.get(chunk, {}),
                                      self.counts.get(chunk, 0), self.corrected.get(chunk, {}),
                                      self.corrections.get(chunk, set()))
            found += [Mismatch(subject, "artifact", f"names chunk {chunk[1]} of day {chunk[0]} with hash {digest}, "
                                                    f"which is frozen with {record.data['hash']}")
                      for subject, digest in sorted(self.hashes.get(chunk, ())) if digest != record.data["hash"]]
        for day, chunk in sorted(self.hashes.keys() - recorded):
            found += [Mismatch(subject, "artifact", f"names chunk {chunk} of day {day}, which is not recorded "
                                                    f"({day_chunk_key(day, chunk)})")
                      for subject, _ in sorted(self.hashes[(day, chunk)])]
        return found

    def _listener_day_mismatches(self, view: StateView) -> list[Mismatch]:
        """Each corrected frozen listener-day was frozen in the chunk its correction names, which took its whole
        slice out of ``frozen``, and was corrected so once."""
        found = []
        for (listener_id, day), subjects in sorted(self.listener_days.items()):
            if len(subjects) > 1:
                found.append(Mismatch(subjects[0], "listener_day", f"listener-day {listener_id}/{day} is taken out "
                                                                   f"of its freeze by {len(subjects)} corrections"))
            sentinel = view.get(UNIQUE, allocation_sentinel_key(listener_id, day))
            owner = sentinel.data if sentinel is not None else {}
            for subject in subjects:
                correction = view.get(STATE, subject).data
                if not is_freeze_sentinel(owner) or owner["artifact"] != correction["artifact"] \
                        or (owner["budget_id"], owner["amount"]) != (correction["budget_id"], correction["unfrozen"]):
                    found.append(Mismatch(subject, "listener_day", f"unfroze {correction['unfrozen']} of listener-day "
                                                                   f"{listener_id}/{day} in budget "
                                                                   f"{correction['budget_id']} from chunk "
                                                                   f"{correction['artifact']}, its freeze sentinel "
                                                                   f"says {owner or None}"))
        return found


def chunk_mismatches(subject: str, chunk: DayChunk, lines: dict[str, AllocationLine], slices: dict[str, int],
                     listener_days: int, corrected: dict[tuple[str, str | None], int] | None = None,
                     corrections: set[str] = frozenset()) -> list[Mismatch]:
    """A frozen chunk's record against its day lines (one per total, of that amount; its live day line and the parts
    ``corrected`` took out of it add up to that total; no other line but the remainders its ``corrections`` left)
    and against the freeze sentinels naming it (its listener-day count and budget totals); its totals against each
    other."""
    found = []
    corrected = corrected or {}
    named = {line_id for line_id, line in lines.items() if line["correction_id"] in corrections}
    totals = {(total["role"], total["recipient_id"]) for total in chunk["recipients"]}
    found += [Mismatch(subject, "day_lines", f"corrections took {amount} of {role} {recipient_id}, whom it pays "
                                             "nothing")
              for (role, recipient_id), amount in corrected.items() if (role, recipient_id) not in totals]
    for total in chunk["recipients"]:
        line_id = day_line_id(chunk["day"], chunk["chunk"], total["role"], total["recipient_id"])
        named.add(line_id)
        line = lines.get(line_id)
        if total["line_id"] != line_id:
            found.append(Mismatch(subject, "day_lines", f"names {total['line_id']} for {total['role']} "
                                                        f"{total['recipient_id']}, not the derived {line_id}"))
        elif line is None:
            found.append(Mismatch(subject, "day_lines", f"no day line {line_id} pays {total['role']} "
                                                        f"{total['recipient_id']} its {total['amount']}"))
        elif (line["role"], line["recipient_id"], line["amount"]) != (total["role"], total["recipient_id"],
                                                                       total["amount"]):
            found.append(Mismatch(subject, "day_lines", f"day line {line_id} pays {line['role']} "
                                                        f"{line['recipient_id']} {line['amount']}, the chunk "
                                                        f"{total['role']} {total['recipient_id']} {total['amount']}"))
        else:
            found += _corrected_total_mismatches(subject, total, lines, named,
                                                 corrected.get((total["role"], total["recipient_id"]), 0))
    found += [Mismatch(LINE_PREFIX + line_id, "artifact", f"is in no total of {subject}")
              for line_id in sorted(lines.keys() - named)]
    paid = sum(parse_amount(total["amount"]) for total in chunk["recipients"])
    budgets = {entry["budget_id"]: parse_amount(entry["amount"]) for entry in chunk["budgets"]}
    amount = parse_amount(chunk["amount"])
    if not paid == sum(budgets.values()) == amount:
        found.append(Mismatch(subject, "totals", f"amount {amount}, recipients {paid}, "
                                                 f"budgets {sum(budgets.values())}"))
    if budgets != slices:
        found.append(Mismatch(subject, "budgets", f"budget totals {sorted(budgets.items())} != the freeze "
                                                  f"sentinels naming it {sorted(slices.items())}"))
    if chunk["listener_days"] != listener_days:
        found.append(Mismatch(subject, "listener_days", f"{chunk['listener_days']} listener-days != "
                                                        f"{listener_days} freeze sentinels naming it"))
    return found


def _corrected_total_mismatches(subject: str, total: dict, lines: dict[str, AllocationLine], remainders: set[str],
                                corrected: int) -> list[Mismatch]:
    """What is live of a (role, recipient)'s day lines, the freeze's and the remainders, and what corrections took
    out of them, add up to the chunk's total for it."""
    recipient = (total["role"], total["recipient_id"])
    live = [line for line_id, line in lines.items()
            if (line["role"], line["recipient_id"]) == recipient and line["status"] != "reversed"
            and (line["correction_id"] is None or line_id in remainders)]
    amount = sum(parse_amount(line["amount"]) for line in live)
    if len(live) <= 1 and amount + corrected == parse_amount(total["amount"]):
        return []
    return [Mismatch(subject, "day_lines", f"{total['role']} {total['recipient_id']}: {len(live)} live day lines of "
                                           f"{amount} and {corrected} corrected out of them, not its total "
                                           f"{total['amount']}")]


def lot_deposit_mismatches(view: StateView) -> list[Mismatch]:
    """Each lot is one canonical deposit whose two sentinels name it; each deposit sentinel names such a lot."""
    found, lots_by_sentinel = [], defaultdict(list)
    for record_key, record in view.scan(STATE, LOT_PREFIX):
        lot_id, deposit = record.data["lot_id"], record.data["deposit"]
        if not is_canonical(deposit):
            found.append(Mismatch(record_key, "deposit", f"deposit {deposit} is not in its canonical form"))
            continue
        for sentinel in (deposit_unit_key(deposit), deposit_evidence_key(deposit)):
            lots_by_sentinel[sentinel].append(lot_id)
            owner = view.get(UNIQUE, sentinel)
            if owner is None or owner.data["lot_id"] != lot_id:
                found.append(Mismatch(record_key, "deposit", f"{sentinel} names {owner and owner.data['lot_id']}, "
                                                             f"not this lot: the lot has no deposit of its own"))
    for sentinel, lot_ids in sorted(lots_by_sentinel.items()):
        if len(lot_ids) > 1:
            found.append(Mismatch(sentinel, "lots", f"one deposit funds lots {sorted(lot_ids)}"))
    for prefix in (UNIT_PREFIX, EVIDENCE_PREFIX):
        for sentinel, owner in view.scan(UNIQUE, prefix):
            if view.get(STATE, LOT_PREFIX + owner.data["lot_id"]) is None:
                found.append(Mismatch(sentinel, "lot", f"names lot {owner.data['lot_id']}, which does not exist"))
    return found


def _recorded_terms(subject: str, budget: Budget, recorded: dict[tuple[str, str], int]) -> list[Mismatch]:
    terms, budget_id = budget_terms(budget), subject[len(BUDGET_PREFIX):]
    return [Mismatch(subject, term, f"{term} {terms[term]} != records {recorded.get((budget_id, term), 0)}")
            for term in ("outstanding", "paid", "refunds_reversals", "frozen")
            if terms[term] != recorded.get((budget_id, term), 0)]


def _stranded_in_a_refunded_budget(subject: str, budget: Budget) -> list[Mismatch]:
    if parse_amount(budget["unallocated"]) == 0:
        return []
    return [Mismatch(subject, "unallocated", f"the budget was refunded, yet holds {budget['unallocated']} "
                                             "unallocated that nothing may allocate and no refund covers")]


def _correction_arithmetic(correction: Correction) -> list[Mismatch]:
    """What a correction reversed went to replacements, back to unallocated, or out as a refund."""
    reversed_amount = parse_amount(correction["reversed"])
    accounted = (parse_amount(correction["replaced"]) + parse_amount(correction["released"])
                 + parse_amount(correction["refunded"]) - parse_amount(correction["refunded_unallocated"]))
    found = []
    if reversed_amount != accounted:
        found.append(Mismatch(CORRECTION_PREFIX + correction["correction_id"], "arithmetic",
                              f"reversed {reversed_amount} != replaced + released + refunded reversal {accounted}"))
    if "unfrozen" in correction:
        parts = sum(parse_amount(part["amount"]) for part in correction["parts"])
        if not reversed_amount == unfrozen(correction) == parts:
            found.append(Mismatch(CORRECTION_PREFIX + correction["correction_id"], "unfrozen",
                                  f"reversed {reversed_amount}, unfrozen {correction['unfrozen']}, parts {parts}"))
    return found

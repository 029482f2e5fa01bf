"""The full conservation check as one list (``FULL_CHECK`` in ledger_engine/domain/invariants.py): every invariant it
runs is named, documented, and reports a ledger that breaks it, alone.

The ledger here has every kind of record the check reads: two frozen chunks of three listener-days with their day
lines and freeze sentinels, a correction of a frozen listener-day with its remainders, ordinary lines allocated by
AllocateListenerDay, two lots with their deposits, and a budget whose period was refunded. It is read once at a
command boundary; each test forges a copy of what was read so that one invariant breaks, and runs every invariant on
it on its own.
"""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from ledger_engine.application.pending import PendingBatch
from ledger_engine.domain import invariants
from ledger_engine.domain.day_lines import day_line_id
from ledger_engine.domain.deposits import EVIDENCE_PREFIX, deposit_unit_key
from ledger_engine.domain.invariants import FULL_CHECK, EachRecord, LedgerState, Mismatch, ledger_mismatches
from ledger_engine.domain.schema.money_allocation import day_chunk_key
from ledger_engine.domain.view import Record
from ledger_engine.layout import STATE, UNIQUE
from tests.money_allocation.test_freeze import (  # noqa: F401 (day_one: a fixture)
    LISTENERS, build, close_second_day, day_one, freeze, payload_of,
)
from tests.money_allocation.test_frozen_corrections import (  # noqa: F401 (frozen: a fixture)
    CORRECTED, frozen, quote, request, rights_fixed,
)
from tests.money_allocation.world import FIRST_DAY, MoneyWorld

ROOT = Path(__file__).resolve().parents[2]
Records = dict[tuple[str, str], Record]
CHUNK_2 = day_chunk_key(FIRST_DAY + 1, 0)
FIX_1 = "correction/fix-1"


# The ledger, as read.

class Snapshot:
    """Records read at a command boundary, as a read-only view in key byte order, as the ledger's own."""

    def __init__(self, records: Records) -> None:
        self.records = records

    def get(self, family: str, key: str) -> Record | None:
        return self.records.get((family, key))

    def scan(self, family: str, prefix: str) -> Iterator[tuple[str, Record]]:
        keys = sorted((key for kind, key in self.records if kind == family and key.startswith(prefix)), key=str.encode)
        return ((key, self.records[(family, key)]) for key in keys)


def read(world: MoneyWorld) -> Records:
    def records(store):
        view = PendingBatch(store)
        return {(family, key): record for family in (STATE, UNIQUE) for key, record in view.scan(family, "")}
    return world.owner.at_boundary(records)


def every_kind_of_record(world: MoneyWorld, artifact) -> Records:
    """Day one frozen and listener-a's listener-day corrected out of it, day two frozen, listener-b's third day
    allocated by lines, a second lot; read, with listener-c's period refunded as refund_period_budget does."""
    quoted = quote(artifact, CORRECTED)
    assert request(world, "fix-1", quoted, replacements=rights_fixed(quoted, "fix-1")).accepted
    assert world.decide_correction("fix-1").accepted
    close_second_day(world)
    assert freeze(world, payload_of(build(world, FIRST_DAY + 1), request_id="request-2")).accepted
    world.closed_day("listener-b", FIRST_DAY + 2, "period-listener-b", LISTENERS["listener-b"][0])
    assert world.allocate("listener-b", FIRST_DAY + 2, "budget-listener-b").accepted
    assert world.lot("lot-2", 5_000).accepted
    assert world.check("check-1").result["data"] == {"status": "clear", "mismatch_count": 0}
    return refunded(read(world), "budget-listener-c")


def refunded(records: Records, budget_id: str) -> Records:
    budget = data(records, f"budget/{budget_id}")
    refund = {"budget_id": budget_id, "period_id": budget["period_id"], "amount": budget["unallocated"],
              "billing_event_id": "refund-1", "refunded_at_ms": 0, "correlation_id": f"period:{budget['period_id']}",
              "created": budget["created"]}
    records = changed(records, f"budget/{budget_id}", unallocated="0",
                      refunds_reversals=plus(budget["refunds_reversals"], int(budget["unallocated"])))
    return put(records, f"budget_refund/{budget_id}", refund)


_READ: dict[str, Records] = {}


@pytest.fixture
def ledger(request) -> Records:
    """The ledger read once for this module, by the first test that asks; the tests forge copies of it."""
    if not _READ:
        _READ["records"] = every_kind_of_record(*request.getfixturevalue("frozen"))
    return _READ["records"]


# Forging a copy.

def data(records: Records, key: str, family: str = STATE) -> dict[str, Any]:
    return copy.deepcopy(records[(family, key)].data)


def put(records: Records, key: str, value: dict[str, Any], family: str = STATE) -> Records:
    return {**records, (family, key): Record(1, value)}


def changed(records: Records, key: str, family: str = STATE, **fields: Any) -> Records:
    return put(records, key, {**data(records, key, family), **fields}, family)


def without(records: Records, key: str) -> Records:
    return {address: record for address, record in records.items() if address != (STATE, key)}


def plus(amount: str, units: int) -> str:
    return str(int(amount) + units)


def line_key(records: Records, **match: Any) -> str:
    return next(key for family, key in sorted(records) if key.startswith("allocation_line/")
                and all(records[(family, key)].data.get(name) == value for name, value in match.items()))


def lot_deposit(records: Records, lot_id: str) -> dict[str, Any]:
    return data(records, f"lot/{lot_id}")["deposit"]


def an_ordinary_line_names_an_artifact(records: Records) -> Records:
    key = line_key(records, budget_id="budget-listener-b", day=FIRST_DAY + 2)
    return changed(records, key, artifact={"day": FIRST_DAY + 1, "chunk": 0, "hash": data(records, CHUNK_2)["hash"]})


def a_correction_reverses_more_than_it_replaced(records: Records) -> Records:
    return changed(records, FIX_1, replaced=plus(data(records, FIX_1)["replaced"], 1))


def a_frozen_correction_reverses_more_than_it_unfroze(records: Records) -> Records:
    correction = data(records, FIX_1)
    return changed(records, FIX_1, reversed=plus(correction["reversed"], 1), replaced=plus(correction["replaced"], 1))


def a_second_correction_takes_the_listener_day_out(records: Records) -> Records:
    """A copy of fix-1, the budget's terms made to agree with it; its parts come out of the chunk's day lines twice,
    which no day line can make up for."""
    correction, budget = data(records, FIX_1), data(records, f"budget/{data(records, FIX_1)['budget_id']}")
    records = put(records, "correction/fix-2", {**correction, "correction_id": "fix-2"})
    return changed(records, f"budget/{correction['budget_id']}",
                   frozen=plus(budget["frozen"], -int(correction["unfrozen"])),
                   refunds_reversals=plus(budget["refunds_reversals"], int(correction["refunded"])),
                   unallocated=plus(budget["unallocated"], int(correction["unfrozen"]) - int(correction["refunded"])))


def a_correction_names_another_listener_day(records: Records) -> Records:
    return changed(records, FIX_1, listener_day=["listener-c", FIRST_DAY])


def a_correction_takes_a_part_of_nobody_the_chunk_pays(records: Records) -> Records:
    parts = data(records, FIX_1)["parts"]
    return changed(records, FIX_1, parts=[*parts, {**parts[0], "recipient_id": "artist-nobody", "amount": "0"}])


def a_day_line_pays_more_than_its_total(records: Records) -> Records:
    key = f"allocation_line/{data(records, CHUNK_2)['recipients'][0]['line_id']}"
    return changed(records, key, amount=plus(data(records, key)["amount"], 1))


def a_day_line_is_in_no_total(records: Records) -> Records:
    line = data(records, f"allocation_line/{data(records, CHUNK_2)['recipients'][0]['line_id']}")
    line_id = day_line_id(FIRST_DAY + 1, 0, line["role"], line["recipient_id"], "fix-9")
    return put(records, f"allocation_line/{line_id}", {**line, "line_id": line_id, "correction_id": "fix-9",
                                                       "status": "reversed"})


def a_chunk_amount_is_not_its_totals(records: Records) -> Records:
    return changed(records, CHUNK_2, amount=plus(data(records, CHUNK_2)["amount"], 1))


def a_chunk_moves_a_unit_between_budgets(records: Records) -> Records:
    budgets = data(records, CHUNK_2)["budgets"]
    budgets[0]["amount"], budgets[1]["amount"] = plus(budgets[0]["amount"], 1), plus(budgets[1]["amount"], -1)
    return changed(records, CHUNK_2, budgets=budgets)


def a_chunk_counts_a_listener_day_more(records: Records) -> Records:
    return changed(records, CHUNK_2, listener_days=data(records, CHUNK_2)["listener_days"] + 1)


def a_chunk_is_recorded_with_another_hash(records: Records) -> Records:
    return changed(records, CHUNK_2, hash=hashlib.sha256(b"another chunk").hexdigest())


def a_chunk_is_not_recorded(records: Records) -> Records:
    return without(records, CHUNK_2)


def a_budget_holds_a_unit_more(records: Records) -> Records:
    return changed(records, "budget/budget-listener-a",
                   unallocated=plus(data(records, "budget/budget-listener-a")["unallocated"], 1))


def a_budget_is_funded_a_unit_more_than_drawn(records: Records) -> Records:
    budget = data(records, "budget/budget-listener-a")
    return changed(records, "budget/budget-listener-a", funded=plus(budget["funded"], 1),
                   unallocated=plus(budget["unallocated"], 1))


def a_budget_counts_a_unit_outstanding_no_line_holds(records: Records) -> Records:
    budget = data(records, "budget/budget-listener-b")
    return changed(records, "budget/budget-listener-b", outstanding=plus(budget["outstanding"], 1),
                   unallocated=plus(budget["unallocated"], -1))


def a_refunded_budget_keeps_a_unit(records: Records) -> Records:
    budget, refund = data(records, "budget/budget-listener-c"), data(records, "budget_refund/budget-listener-c")
    records = changed(records, "budget_refund/budget-listener-c", amount=plus(refund["amount"], -1))
    return changed(records, "budget/budget-listener-c", unallocated=plus(budget["unallocated"], 1),
                   refunds_reversals=plus(budget["refunds_reversals"], -1))


def a_refund_names_a_missing_budget(records: Records) -> Records:
    refund = data(records, "budget_refund/budget-listener-c")
    return put(records, "budget_refund/budget-nobody", {**refund, "budget_id": "budget-nobody", "amount": "0"})


def a_lot_allocated_more_than_it_received(records: Records) -> Records:
    return changed(records, "lot/lot-1", received=plus(data(records, "lot/lot-1")["allocated"], -1))


def a_lot_allocated_what_no_budget_draws(records: Records) -> Records:
    return changed(records, "lot/lot-2", allocated="1")


def a_budget_draws_on_a_missing_lot(records: Records) -> Records:
    draws = data(records, "budget/budget-listener-a")["lots"]
    return changed(records, "budget/budget-listener-a",
                   lots=[*draws, {**draws[0], "lot_id": "lot-nobody", "version": 2, "amount": "0"}])


def a_lots_deposit_names_another_lot(records: Records) -> Records:
    return changed(records, deposit_unit_key(lot_deposit(records, "lot-2")), UNIQUE, lot_id="lot-1")


def two_lots_share_a_deposit(records: Records) -> Records:
    """lot-2 records lot-1's deposit, whose sentinels cannot name lot-2 too."""
    return changed(records, "lot/lot-2", deposit=lot_deposit(records, "lot-1"))


def a_deposit_names_a_missing_lot(records: Records) -> Records:
    sentinel = data(records, deposit_unit_key(lot_deposit(records, "lot-2")), UNIQUE)
    return put(records, f"{EVIDENCE_PREFIX}nobody", {**sentinel, "lot_id": "lot-nobody"}, UNIQUE)


# Each invariant: a forgery that breaks it, the check codes it reports, and the invariants the forgery cannot help
# breaking too.
FORGERIES: dict[str, tuple[Callable[[Records], Records], set[str], set[str]]] = {
    "line_names_its_budget_or_is_a_day_line": (an_ordinary_line_names_an_artifact, {"budget"}, set()),
    "correction_accounts_for_what_it_reversed": (a_correction_reverses_more_than_it_replaced, {"arithmetic"}, set()),
    "frozen_correction_unfreezes_its_parts": (a_frozen_correction_reverses_more_than_it_unfroze, {"unfrozen"}, set()),
    "listener_day_leaves_its_freeze_once": (a_second_correction_takes_the_listener_day_out, {"listener_day"},
                                            {"chunk_totals_are_paid_by_its_day_lines"}),
    "correction_unfreezes_what_its_listener_day_froze": (a_correction_names_another_listener_day, {"listener_day"},
                                                         set()),
    "chunk_corrections_take_from_recipients_it_pays": (a_correction_takes_a_part_of_nobody_the_chunk_pays,
                                                       {"day_lines"}, set()),
    "chunk_totals_are_paid_by_its_day_lines": (a_day_line_pays_more_than_its_total, {"day_lines"}, set()),
    "chunk_day_lines_are_in_its_totals": (a_day_line_is_in_no_total, {"artifact"}, set()),
    "chunk_totals_agree": (a_chunk_amount_is_not_its_totals, {"totals"}, set()),
    "chunk_budgets_are_its_freeze_sentinels": (a_chunk_moves_a_unit_between_budgets, {"budgets"}, set()),
    "chunk_listener_days_are_its_freeze_sentinels": (a_chunk_counts_a_listener_day_more, {"listener_days"}, set()),
    "records_name_the_chunk_by_its_hash": (a_chunk_is_recorded_with_another_hash, {"artifact"}, set()),
    "named_chunks_are_recorded": (a_chunk_is_not_recorded, {"artifact"}, set()),
    "budget_balances": (a_budget_holds_a_unit_more, {"equation"}, set()),
    "budget_funding_is_its_lot_draws": (a_budget_is_funded_a_unit_more_than_drawn, {"funded"}, set()),
    "budget_terms_are_their_records": (a_budget_counts_a_unit_outstanding_no_line_holds, {"outstanding"}, set()),
    "refunded_budget_holds_nothing_unallocated": (a_refunded_budget_keeps_a_unit, {"unallocated"}, set()),
    "records_name_existing_budgets": (a_refund_names_a_missing_budget, {"exists"}, set()),
    "lot_allocates_no_more_than_it_received": (a_lot_allocated_more_than_it_received, {"received"}, set()),
    "lot_allocated_is_its_budgets_draws": (a_lot_allocated_what_no_budget_draws, {"allocated"}, set()),
    "budgets_draw_on_existing_lots": (a_budget_draws_on_a_missing_lot, {"exists"}, set()),
    "lot_is_its_own_canonical_deposit": (a_lots_deposit_names_another_lot, {"deposit"}, set()),
    "deposits_fund_one_lot_each": (two_lots_share_a_deposit, {"lots"}, {"lot_is_its_own_canonical_deposit"}),
    "deposit_sentinels_name_existing_lots": (a_deposit_names_a_missing_lot, {"lot"}, set()),
}


# Running each invariant on its own.

def listed() -> dict[str, Callable[..., list[Mismatch]]]:
    """Every invariant of the full check by name, in the order it runs them."""
    return {invariant.__name__: invariant for entry in FULL_CHECK
            for invariant in (entry.invariants if isinstance(entry, EachRecord) else (entry,))}


def alone(invariant: Callable[..., list[Mismatch]]) -> Callable[[LedgerState], list[Mismatch]]:
    """``invariant`` run on its own over the whole ledger: over the records it is checked on, if it is one record's."""
    walking = next((entry for entry in FULL_CHECK if isinstance(entry, EachRecord) and invariant in entry.invariants),
                   None)
    return invariant if walking is None else EachRecord(walking.records, (invariant,))


def reported(records: Records) -> dict[str, list[Mismatch]]:
    """What each invariant reports, run alone on ``records``: the invariants that report anything."""
    state = LedgerState(Snapshot(records))
    return {name: found for name, invariant in listed().items() if (found := alone(invariant)(state))}


def test_the_ledger_here_breaks_no_invariant(ledger):
    assert reported(ledger) == {}
    assert ledger_mismatches(Snapshot(ledger)) == []


@pytest.mark.parametrize("name", list(FORGERIES))
def test_a_ledger_breaking_one_invariant_is_reported_by_that_invariant(ledger, name):
    forgery, checks, cannot_help_breaking = FORGERIES[name]
    forged = forgery(ledger)
    reports = reported(forged)
    assert set(reports) == {name, *cannot_help_breaking}, reports
    assert {mismatch.check for mismatch in reports[name]} == checks, reports[name]
    if not cannot_help_breaking:
        assert ledger_mismatches(Snapshot(forged)) == reports[name]


def test_every_invariant_has_a_ledger_here_that_breaks_it():
    assert list(FORGERIES) == list(listed())


def test_a_records_mismatches_come_out_together_in_key_order(ledger):
    """budget-listener-a's terms disagree with its records, budget-listener-b does not balance: the full check reports
    budget by budget, so a's mismatch comes first though its invariant comes later in the list."""
    forged = changed(ledger, "budget/budget-listener-b",
                     unallocated=plus(data(ledger, "budget/budget-listener-b")["unallocated"], 1))
    budget = data(ledger, "budget/budget-listener-a")
    forged = changed(forged, "budget/budget-listener-a", paid=plus(budget["paid"], 1),
                     unallocated=plus(budget["unallocated"], -1))
    assert [(m.subject, m.check) for m in ledger_mismatches(Snapshot(forged))] == [
        ("budget/budget-listener-a", "paid"), ("budget/budget-listener-b", "equation")]


# The list, as documented.

# What docs/spec/ledger-invariants.md says the full check holds, and the invariants that hold it.
SPECIFIED = {
    "funded + additions == unallocated + outstanding + paid + refunds_reversals + frozen": ("budget_balances",),
    "`outstanding` is the payable and reserved allocation lines": ("budget_terms_are_their_records",),
    "`paid` is the paid lines": ("budget_terms_are_their_records",),
    "`refunds_reversals` is what corrections and refunds took out of the budget": ("budget_terms_are_their_records",),
    "`frozen` is what freezes moved out of `unallocated`": ("budget_terms_are_their_records",),
    "A day line, an allocation line without a budget, counts in no budget term": (
        "line_names_its_budget_or_is_a_day_line", "budget_terms_are_their_records"),
    "Each correction is counted exactly once": ("budget_terms_are_their_records",
                                                "listener_day_leaves_its_freeze_once"),
    "recomputes every budget, lot, line and correction from scratch": (
        "budget_funding_is_its_lot_draws", "lot_allocated_is_its_budgets_draws",
        "line_names_its_budget_or_is_a_day_line", "correction_accounts_for_what_it_reversed"),
    "a lot whose deposit sentinels do not name it": ("lot_is_its_own_canonical_deposit",),
    "or that shares a deposit with another lot, is a phantom": ("deposits_fund_one_lot_each",),
}


def test_every_invariant_the_specification_names_is_in_the_list():
    spec = " ".join((ROOT / "docs/spec/ledger-invariants.md").read_text().split())
    assert [phrase for phrase in SPECIFIED if phrase not in spec] == []
    assert {name for names in SPECIFIED.values() for name in names} - set(listed()) == set()


def test_the_modules_docstring_lists_every_invariant_in_the_order_the_check_runs_them():
    documented = re.findall(r"^- ``(\w+)``:", invariants.__doc__, re.MULTILINE)
    assert documented == list(listed())


def test_every_invariant_says_what_it_holds_in_one_line():
    unsaid = [name for name, invariant in listed().items() if not invariant.__doc__ or "\n" in invariant.__doc__]
    assert unsaid == []

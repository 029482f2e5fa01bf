"""Reading a ledger's column families directly, to see exactly what a command changed."""

from __future__ import annotations

import orjson

from ledger_engine.application.journal_tree import appended_keys
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.keys import seq20
from ledger_engine.layout import ALL_FAMILIES, COMMAND_RESULT, DELTAS, EVENTS, JOURNAL, META
from ledger_engine.storage.rocks import WRITES_KEY, RocksStore

Dump = dict[str, dict[bytes, bytes]]


def dump(store: RocksStore) -> Dump:
    """Every key and value of every column family."""
    return {family: dict(store.scan(family)) for family in ALL_FAMILIES}


def owner_dump(owner: LedgerOwner) -> Dump:
    """A dump taken at a command boundary of a live owner."""
    return owner.at_boundary(dump)


def changed_keys(before: Dump, after: Dump) -> set[tuple[str, str]]:
    """(family, key) of every row added, changed or removed."""
    changed = set()
    for family in ALL_FAMILIES:
        old, new = before[family], after[family]
        for key in old.keys() | new.keys():
            if old.get(key) != new.get(key):
                changed.add((family, key.decode()))
    return changed


def rejection_footprint(command_id: str, sequence: int) -> set[tuple[str, str]]:
    """What a journalled rejection may write: its result, its journal entry and delta, the head, the
    journal tree's nodes the entry completes (when it fills a block of 16), and the store's write number."""
    return {(COMMAND_RESULT, command_id), (JOURNAL, seq20(sequence)), (DELTAS, seq20(sequence)), (META, "head"),
            (META, WRITES_KEY.decode()), *((META, key.decode()) for key in appended_keys(sequence))}


def consistency_problems(rows: Dump) -> list[str]:
    """Ways a ledger is half-applied: results, journal entries, events and head out of step."""
    head = orjson.loads(rows[META][b"head"])
    journal = {int(key): orjson.loads(value) for key, value in rows[JOURNAL].items()}
    results = {key.decode(): orjson.loads(value) for key, value in rows[COMMAND_RESULT].items()}
    problems = []
    if sorted(journal) != list(range(1, head["sequence"] + 1)):
        problems.append(f"journal sequences are not 1..{head['sequence']}")
    if journal and journal[max(journal)]["entry_hash"] != head["entry_hash"]:
        problems.append("head is not the last journal entry")
    for command_id, result in results.items():
        entry = journal.get(result["sequence"])
        if entry is None or entry["envelope"]["command_id"] != command_id or entry["outcome"] != result["outcome"]:
            problems.append(f"command_result/{command_id} has no matching journal entry")
    for sequence, entry in journal.items():
        result = results.get(entry["envelope"]["command_id"])
        if result is None or result["sequence"] != sequence:
            problems.append(f"journal entry {sequence} has no matching command_result")
    for key in rows[EVENTS]:
        if int(key.split(b"/")[0]) not in journal:
            problems.append(f"event {key.decode()} belongs to no journalled sequence")
    return problems

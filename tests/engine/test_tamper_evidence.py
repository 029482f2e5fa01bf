"""``porto-ledger verify-export`` catches any change to an export and names the first bad item."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest
import rfc8785

from ledger_engine.checkpoint.export import DELTAS_FILE, EVENTS_FILE, GENESIS_FILE, JOURNAL_FILE, METADATA_FILE, ROWS_FILE
from tests.support import cli, seed000


def refused_item(export: Path) -> str:
    """The item ``verify-export`` names, asserting that it failed as a verification."""
    run = cli.porto_ledger("verify-export", export)
    assert run.status == 1, run.lines
    assert (run.last["ok"], run.last["code"]) == (False, "VERIFICATION_FAILED")
    return run.last["item"]


def lines_of(export: Path, name: str) -> list[bytes]:
    return (export / name).read_bytes().splitlines(keepends=True)


def rewrite(export: Path, name: str, lines: list[bytes]) -> None:
    """Replace a file and record its new hash in the metadata, as a careful forger would."""
    data = b"".join(lines)
    (export / name).write_bytes(data)
    update_metadata(export, lambda metadata: metadata["files"][name].update(
        sha256=hashlib.sha256(data).hexdigest(), bytes=len(data)))


def update_metadata(export: Path, change: Callable[[dict[str, Any]], None]) -> None:
    metadata = orjson.loads((export / METADATA_FILE).read_bytes())
    change(metadata)
    (export / METADATA_FILE).write_bytes(rfc8785.dumps(metadata) + b"\n")


def edit_entry(export: Path, number: int, change: Callable[[dict[str, Any]], None]) -> None:
    lines = lines_of(export, JOURNAL_FILE)
    entry = orjson.loads(lines[number - 1])
    change(entry)
    lines[number - 1] = rfc8785.dumps(entry) + b"\n"
    rewrite(export, JOURNAL_FILE, lines)


def later_admission(entry: dict[str, Any]) -> None:
    entry["envelope"]["admitted_at_ms"] += 1


def later_admission_rehashed(entry: dict[str, Any]) -> None:
    later_admission(entry)
    entry["entry_hash"] = seed000.entry_hash(entry)


def test_the_untouched_export_verifies(export):
    assert cli.succeeded(cli.porto_ledger("verify-export", export)).last["ok"] is True


@pytest.mark.parametrize("name", [JOURNAL_FILE, DELTAS_FILE, ROWS_FILE, EVENTS_FILE, GENESIS_FILE])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_one_flipped_byte_names_its_file(export, name, where):
    data = bytearray((export / name).read_bytes())
    data[{"first": 0, "middle": len(data) // 2, "last": -1}[where]] ^= 0x01
    (export / name).write_bytes(data)
    assert refused_item(export) == name


@pytest.mark.parametrize("name", [JOURNAL_FILE, DELTAS_FILE, ROWS_FILE, EVENTS_FILE, GENESIS_FILE])
def test_a_missing_file_is_named(export, name):
    (export / name).unlink()
    assert refused_item(export) == name


def test_an_edited_entry_with_its_file_hash_fixed_is_a_hash_mismatch_on_its_line(export):
    edit_entry(export, 5, later_admission)
    assert refused_item(export) == f"{JOURNAL_FILE}:5"


def test_an_edited_entry_with_its_entry_hash_recomputed_no_longer_matches_its_command_result(export):
    """The delta's command result pins the envelope hash, so the edited entry itself is named."""
    edit_entry(export, 5, later_admission_rehashed)
    assert refused_item(export) == f"{JOURNAL_FILE}:5"


def test_a_rehashed_last_entry_is_named(export):
    last = len(lines_of(export, JOURNAL_FILE))
    edit_entry(export, last, later_admission_rehashed)
    assert refused_item(export) == f"{JOURNAL_FILE}:{last}"


def test_a_dropped_entry_is_named(export):
    lines = lines_of(export, JOURNAL_FILE)
    rewrite(export, JOURNAL_FILE, lines[:4] + lines[5:])
    assert refused_item(export) == f"{JOURNAL_FILE}:5"


@pytest.mark.parametrize("name, swapped, named_line", [
    (ROWS_FILE, 11, 12),  # the second row of the pair is the first out of order
    (EVENTS_FILE, 4, 5),
    (JOURNAL_FILE, 6, 6),  # the first entry of the pair has the wrong sequence
])
def test_reordered_lines_are_named_even_with_the_file_hash_fixed(export, name, swapped, named_line):
    lines = lines_of(export, name)
    lines[swapped - 1], lines[swapped] = lines[swapped], lines[swapped - 1]
    rewrite(export, name, lines)
    assert refused_item(export) == f"{name}:{named_line}"


def test_an_edited_state_row_with_the_state_hash_recomputed_is_named(export):
    """The fold of the journal's deltas, not the metadata, decides what the state rows must be."""
    lines = lines_of(export, ROWS_FILE)
    position = next(number for number, line in enumerate(lines) if orjson.loads(line)["column_family"] == "state")
    row = orjson.loads(lines[position])
    row["value"]["revision"] += 1
    lines[position] = rfc8785.dumps(row) + b"\n"
    rewrite(export, ROWS_FILE, lines)
    rows = [orjson.loads(line) for line in lines]
    update_metadata(export, lambda metadata: metadata.update(logical_state_hash=seed000.prefixed_hash(
        seed000.STATE_PREFIX, rows)))
    assert refused_item(export) == f"{ROWS_FILE}:{position + 1}"


@pytest.mark.parametrize("spelling", [
    lambda raw: raw.replace(b'"v":', b'"v": ', 1),  # not compact
    lambda raw: raw.replace(b'"v":1}', b'"v":1.0}', 1),  # a float where an integer was
    lambda raw: raw.replace(b'"v":1}', b'"v":9007199254740993}', 1),  # beyond the safe integers
    lambda raw: b'{"value":' + raw[raw.index(b'"value":') + 8:-1] + b"," + raw[1:raw.index(b',"value":')] + b"}",
], ids=["whitespace", "float", "unsafe-integer", "key-order"])
def test_a_line_that_is_not_canonical_json_is_named_even_with_its_file_hash_fixed(export, spelling):
    """Each line is checked whole once; its parts are then encoded without a second walk, so this is the check."""
    lines = lines_of(export, ROWS_FILE)
    position = next(number for number, line in enumerate(lines) if line.rstrip(b"\n").endswith(b'"v":1}}'))
    raw = lines[position].rstrip(b"\n")
    lines[position] = spelling(raw) + b"\n"
    assert lines[position] != raw + b"\n" and orjson.loads(lines[position]) is not None
    rewrite(export, ROWS_FILE, lines)
    assert refused_item(export) == f"{ROWS_FILE}:{position + 1}"


def test_a_different_genesis_is_named(export):
    genesis = orjson.loads((export / GENESIS_FILE).read_bytes())
    genesis["label"] += " (edited)"
    rewrite(export, GENESIS_FILE, [rfc8785.dumps(genesis) + b"\n"])
    assert refused_item(export) == GENESIS_FILE


def test_a_different_head_in_the_metadata_is_caught(export):
    update_metadata(export, lambda metadata: metadata.update(sequence=metadata["sequence"] - 1))
    assert refused_item(export) == JOURNAL_FILE


def test_a_different_state_hash_in_the_metadata_is_caught(export):
    update_metadata(export, lambda metadata: metadata.update(logical_state_hash="0" * 64))
    assert refused_item(export) == ROWS_FILE

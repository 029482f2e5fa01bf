"""Any single edited, dropped or reordered line of an export fails ``verify-export``, which names it.

The forger is careful: after the change every metadata field is recomputed
(file hashes, sizes and line counts, the state digest of the rows as they now
are, and the head from the journal's last line). Only the fold of the journal's
deltas, the delta hashes and the chain stand in the way.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings, strategies as st

from ledger_engine.checkpoint.export import DELTAS_FILE, EVENTS_FILE, JOURNAL_FILE, METADATA_FILE, ROWS_FILE
from ledger_engine.checkpoint.verify import VerificationError, verify_export
from tests.support import cli, seed000
from tests.support.tiers import examples

LINE_FILES = (ROWS_FILE, EVENTS_FILE, JOURNAL_FILE, DELTAS_FILE)


@pytest.fixture(scope="module")
def small_export(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("export-properties")
    cli.export(cli.demo_ledger(root, 5, listeners=1, days=1), root / "export")
    verify_export(root / "export")
    return root / "export"


def leaves(value: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(value, dict):
        return [leaf for name in sorted(value) for leaf in leaves(value[name], (*path, name))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in leaves(item, (*path, index))]
    return [path]


def edited(line: bytes, choice: int) -> bytes:
    """The line with one leaf changed: a number moved by one, a string extended, a flag flipped."""
    value = orjson.loads(line)
    paths = leaves(value)
    *parents, last = paths[choice % len(paths)]
    holder = value
    for step in parents:
        holder = holder[step]
    old = holder[last]
    holder[last] = (not old if isinstance(old, bool) else old + 1 if isinstance(old, int)
                    else old + "0" if isinstance(old, str) else 0)
    return rfc8785.dumps(value) + b"\n"


def recompute_metadata(export: Path) -> None:
    metadata = orjson.loads((export / METADATA_FILE).read_bytes())
    for name in metadata["files"]:
        data = (export / name).read_bytes()
        metadata["files"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                                   "lines": data.count(b"\n")}
    rows = [orjson.loads(line) for line in (export / ROWS_FILE).read_bytes().splitlines()]
    metadata["logical_state_hash"] = seed000.prefixed_hash(seed000.STATE_PREFIX, rows)
    last = orjson.loads((export / JOURNAL_FILE).read_bytes().splitlines()[-1])
    metadata["sequence"], metadata["last_entry_hash"] = last.get("sequence"), last.get("entry_hash")
    (export / METADATA_FILE).write_bytes(rfc8785.dumps(metadata) + b"\n")


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(LINE_FILES), change=st.sampled_from(["edit", "drop", "reorder"]),
       position=st.integers(min_value=0), other=st.integers(min_value=0), choice=st.integers(min_value=0))
def test_one_changed_line_fails_and_is_named(small_export, tmp_path_factory, name, change, position, other, choice):
    export = tmp_path_factory.mktemp("forged") / "export"
    shutil.copytree(small_export, export)
    lines = (export / name).read_bytes().splitlines(keepends=True)
    index = position % len(lines)
    if change == "edit":
        lines[index] = edited(lines[index], choice)
    elif change == "drop":
        del lines[index]
    else:
        target = other % len(lines)
        if target == index:
            target = (index + 1) % len(lines)
        lines.insert(target, lines.pop(index))
    (export / name).write_bytes(b"".join(lines))
    recompute_metadata(export)

    with pytest.raises(VerificationError) as refused:
        verify_export(export)
    item = refused.value.item
    assert item == name or item.startswith(name + ":"), (change, index, refused.value.detail)
    if change == "edit":
        assert item == f"{name}:{index + 1}", refused.value.detail


def test_a_journal_line_without_previous_entry_hash_is_named_not_a_crash(small_export, tmp_path):
    export = tmp_path / "export"
    shutil.copytree(small_export, export)
    lines = (export / JOURNAL_FILE).read_bytes().splitlines(keepends=True)
    entry = orjson.loads(lines[2])
    del entry["previous_entry_hash"]
    lines[2] = rfc8785.dumps(entry) + b"\n"
    (export / JOURNAL_FILE).write_bytes(b"".join(lines))
    recompute_metadata(export)
    run = cli.porto_ledger("verify-export", export)
    assert run.status == 1 and (run.last["code"], run.last["item"]) == ("VERIFICATION_FAILED", f"{JOURNAL_FILE}:3")
    assert "Traceback" not in run.stderr


def test_a_state_amount_multiplied_by_ten_with_metadata_recomputed_fails(small_export, tmp_path):
    """The issue's forgery: replay caught it, verify-export did not."""
    export = tmp_path / "export"
    shutil.copytree(small_export, export)
    lines = (export / ROWS_FILE).read_bytes().splitlines(keepends=True)
    number, row = next((number, row) for number, row in enumerate(map(orjson.loads, lines))
                       if "amount" in row["value"].get("data", {}))
    row["value"]["data"]["amount"] = str(int(row["value"]["data"]["amount"]) * 10)
    lines[number] = rfc8785.dumps(row) + b"\n"
    (export / ROWS_FILE).write_bytes(b"".join(lines))
    recompute_metadata(export)
    with pytest.raises(VerificationError) as refused:
        verify_export(export)
    assert refused.value.item == f"{ROWS_FILE}:{number + 1}"
    assert row["key"] in refused.value.reason

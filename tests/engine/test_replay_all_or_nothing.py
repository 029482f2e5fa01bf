"""A replay that fails part way leaves nothing at its target: the ledger appears only once it verified."""

from __future__ import annotations

import shutil

import orjson
import pytest
import rfc8785

from ledger_engine.checkpoint.export import JOURNAL_FILE
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.checkpoint.verify import VerificationError
from tests.engine.test_export_properties import recompute_metadata, small_export  # noqa: F401 (fixture)


def test_a_replay_refused_half_way_leaves_no_ledger_and_no_scratch(small_export, tmp_path):  # noqa: F811
    """The recorded entry hash is kept, so every command re-executes; the edited line is found only when the
    rebuilt ledger's journal is compared with the export, after the whole ledger was built beside the target."""
    export = tmp_path / "export"
    shutil.copytree(small_export, export)
    lines = (export / JOURNAL_FILE).read_bytes().splitlines(keepends=True)
    middle = len(lines) // 2
    entry = orjson.loads(lines[middle])
    entry["result"] = {**entry["result"], "code": "FORGED"}
    lines[middle] = rfc8785.dumps(entry) + b"\n"
    (export / JOURNAL_FILE).write_bytes(b"".join(lines))
    recompute_metadata(export)
    target = tmp_path / "parent" / "replayed"
    target.parent.mkdir()

    with pytest.raises(VerificationError) as refused:
        replay_export(export, target)

    assert refused.value.item == f"{JOURNAL_FILE}:{middle + 1}"
    assert list((tmp_path / "parent").iterdir()) == []

"""Replay streams: the memory it needs does not grow with the number of commands it replays."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.demo import demo_genesis
from ledger_engine.demo.builder import DemoBuilder
from ledger_engine.demo.foundation import build_foundation

SMALL = 150
MAX_GROWTH = 1.5  # peak Python memory replaying 4 x SMALL commands over replaying SMALL


def _registrations(count: int) -> list[dict]:
    builder = DemoBuilder(20261001)
    build_foundation(builder, listeners=count, days=1)
    return builder.envelopes[:count]


def _export(root: Path, commands: int) -> Path:
    with LedgerOwner.open(root / "live", genesis=demo_genesis()) as owner:
        for future in [owner.submit_async(envelope) for envelope in _registrations(commands)]:
            assert future.result().accepted
        owner.with_checkpoint(lambda store: export_store(store, root / "export"))
    return root / "export"


def _replay_peak(export: Path, target: Path, commands: int) -> int:
    tracemalloc.start()
    try:
        assert replay_export(export, target)["sequence"] == commands
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_replaying_four_times_the_commands_needs_about_the_same_memory(tmp_path):
    small, large = (_export(tmp_path / f"n{count}", count) for count in (SMALL, 4 * SMALL))
    _replay_peak(small, tmp_path / "warm", SMALL)  # modules loaded and caches filled before measuring
    peaks = _replay_peak(small, tmp_path / "small", SMALL), _replay_peak(large, tmp_path / "large", 4 * SMALL)
    assert peaks[1] <= MAX_GROWTH * peaks[0], f"peak memory {peaks[0]:,} B at {SMALL}, {peaks[1]:,} B at {4 * SMALL}"

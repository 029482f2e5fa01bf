"""Engine fixtures: the demo scenario run once through the CLI, and a test-only bulk command."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ledger_engine.domain import registry
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.types import Count
from ledger_engine.keys import key, seq20
from tests.support import cli

DEMO_SEED = 7
DEMO_LISTENERS = 4
DEMO_DAYS = 2


def demo_scenario_lines(hash_seed: int | None = None) -> list[bytes]:
    return cli.demo_lines(DEMO_SEED, listeners=DEMO_LISTENERS, days=DEMO_DAYS, hash_seed=hash_seed)


@dataclass(frozen=True)
class DemoLedger:
    """A stopped ledger holding the whole demo scenario; copy it before changing it."""

    stream: Path
    data: Path
    outcomes: list[dict[str, Any]]
    head: dict[str, Any]


@pytest.fixture(scope="session")
def demo_ledger(tmp_path_factory) -> DemoLedger:
    root = tmp_path_factory.mktemp("demo")
    stream = cli.write_stream(root / "demo.jsonl", demo_scenario_lines())
    data = root / "ledger"
    cli.init_demo(data)
    outcomes = cli.submit(data, stream)
    return DemoLedger(stream, data, outcomes, cli.head(data))


@pytest.fixture
def stopped_ledger(demo_ledger, tmp_path) -> Path:
    """A copy of the demo ledger to change at will."""
    copy = tmp_path / "ledger"
    shutil.copytree(demo_ledger.data, copy)
    return copy


class BulkWritePayload(Payload):
    records: Count
    pad_bytes: Count = 0
    writes_per_record: Count = 1
    effects: Count = 0


BULK_WRITE = "TestBulkWrite"


def bulk_key(number: int) -> str:
    return key("bulk", seq20(number))


def bulk_write(ctx: RuleContext, p: BulkWritePayload) -> dict:
    """Writes ``records`` state records (each ``writes_per_record`` times) and ``effects`` outbox intents."""
    for number in range(p.records):
        for _ in range(p.writes_per_record):
            ctx.changes.put_state(bulk_key(number), {"pad": "x" * p.pad_bytes})
    for number in range(p.effects):
        ctx.changes.effect(key("bulk-effect", seq20(number)), "bulk", {})
    return {}


@pytest.fixture
def bulk_command():
    """Registers ``TestBulkWrite`` (admin only) for the test, and removes it afterwards."""
    command(BULK_WRITE, payload=BulkWritePayload, roles={"admin"})(bulk_write)
    yield BULK_WRITE
    registry._REGISTRY.pop(BULK_WRITE)


@pytest.fixture(scope="module")
def pristine_export(demo_ledger, tmp_path_factory) -> Path:
    """An export of the demo ledger; copy it (``export``) before changing it."""
    destination = tmp_path_factory.mktemp("export") / "export"
    cli.export(demo_ledger.data, destination)
    return destination


@pytest.fixture
def export(pristine_export, tmp_path) -> Path:
    copy = tmp_path / "export"
    shutil.copytree(pristine_export, copy)
    return copy

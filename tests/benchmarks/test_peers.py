"""The peers benchmark on tiny counts: every side records every deposit, and only durable PostgreSQL counts."""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from pathlib import Path

import pytest

from benchmarks.peer_harness import PeerFailed, database_url
from benchmarks.peers import GROUP, Plan, compare
from benchmarks.report import Report
from tests.support.postgres import TemporaryCluster, postgres_server, temporary_database

pytestmark = pytest.mark.slow  # two peer processes, hordak's migrations and a ledger: about 20 s

TINY = Plan(cycles=1, per_round={1: 3, GROUP: GROUP + 2}, warm_up={1: 1, GROUP: 1})
PEERS = ("hordak", "eventsourcing")


def _databases(stack: ExitStack, server: str) -> dict[str, str]:
    return {name: stack.enter_context(temporary_database(server, prefix=f"porto_peer_{name}")) for name in PEERS}


def test_every_side_records_every_deposit_on_durable_postgres_and_the_ratios_are_reported(tmp_path):
    report = Report("peers", "tiny")
    with postgres_server(durable=True) as server, ExitStack() as stack:
        compare(report, tmp_path, _databases(stack, server), TINY)

    recorded = (1 + 2 * 3) + (1 + 2 * (GROUP + 2))  # each mode: a warm-up, then two rounds in the cycle
    assert f"hordak: {recorded} transactions of two legs, the treasury debited the sum of the deposits" in report.checks
    assert f"eventsourcing: {recorded} events stored, one for each of {recorded} aggregates" in report.checks
    for peer in PEERS:
        for when in ("before", "after"):
            assert f"{peer}: PostgreSQL synchronous_commit = on, fsync = on {when} the rounds" in report.checks
    ratios = {key: metric.value for key, metric in report.metrics.items() if "_engine_over_" in key}
    assert sorted(ratios) == sorted(f"per_commit_{mode}_engine_over_{peer}" for mode in (1, GROUP) for peer in PEERS)
    assert all(value > 0 for value in ratios.values())
    assert [target.threshold for target in report.targets] == [5.0, 1.5, 5.0, 1.5]
    assert report.metrics["per_commit_1_engine_commands_per_fsync"].value == 1
    assert report.metrics["per_commit_64_engine_commands_per_fsync"].value > 1


def test_a_server_that_acknowledges_commits_before_fsync_fails_the_benchmark(tmp_path):
    cluster = TemporaryCluster(Path(tempfile.mkdtemp(prefix="porto-pg-")), durable=False).start()
    try:
        refused = "(?s)^hordak: .*not durable on this connection: .*'synchronous_commit': 'off'"
        with ExitStack() as stack, pytest.raises(PeerFailed, match=refused):
            compare(Report("peers", "tiny"), tmp_path, _databases(stack, cluster.url), TINY)
    finally:
        cluster.stop()


def test_a_peer_that_cannot_reach_its_database_fails_the_benchmark(tmp_path):
    with postgres_server(durable=True) as server:
        urls = {name: database_url(server, "porto_peer_missing") for name in PEERS}
        with pytest.raises(PeerFailed, match='(?s)^hordak: .*database "porto_peer_missing" does not exist'):
            compare(Report("peers", "tiny"), tmp_path, urls, TINY)

"""Receipts: signed receipts verified, stored and recorded per second, as a ratio to bare commands.

Each receipt goes the whole admission path: parse, Ed25519 verification with
the node's key in force at the served time, the signed bytes stored durably
by digest, the envelope stored durably by command ID, then resolve-or-submit
to the ledger owner, where the rule binds it to its consumed grant. Bare
commands are account registrations submitted straight to the owner. Both use
the same number of caller threads, so the ledger groups commits alike; rounds
alternate between the two and the ratio is taken per round. A last batch of
receipts is submitted as prepared envelopes, to show the ledger's share.

The ledger refuses an admission time below the last one it journalled, so
every envelope takes its time from one clock: the gateway's for receipts, and
for a batch of bare or prepared envelopes one reading stamped on them all
just before the batch is submitted (equal times are in order).
"""

from __future__ import annotations

import itertools
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson

from benchmarks.measure import interleaved, seconds
from benchmarks.report import Report
from benchmarks.workload import SEED, open_ledger, submit_windowed
from ledger_engine.adapters.gateway import CommandGateway
from ledger_engine.adapters.node_evidence import NodeEvidenceAdapter
from ledger_engine.adapters.signatures import SignedDocument, public_key_hex
from ledger_engine.demo.builder import DemoBuilder, fixture_digest
from ledger_engine.demo.foundation import ADMIN, INGEST, build_foundation
from ledger_engine.demo.streaming import Grant, StreamingScenario, node_signing_key

LISTENERS = 300
ROUNDS = 5
CALLERS = 64
VERIFICATION_SAMPLES = 500


def run(report: Report, workdir: Path) -> None:
    builder = DemoBuilder(SEED)
    scenario, grants = _consumed_grants(builder)
    setup = list(builder.envelopes)
    per_round = len(grants) // (ROUNDS + 1)
    signed = [scenario.signed_receipt(grant) for grant in grants[:ROUNDS * per_round]]
    receipt_batches = _batches(signed, per_round)
    bare_batches = _batches(_added(builder, lambda: _registrations(builder, ROUNDS * per_round)), per_round)
    prepared = _added(builder, lambda: [scenario.receipt(grant) for grant in grants[ROUNDS * per_round:]])
    clock = itertools.count(builder.clock_ms + 1_000)
    outcomes: dict[str, list] = {"bare": [], "receipts": [], "prepared": []}

    with open_ledger(workdir / "ledger") as owner, ThreadPoolExecutor(CALLERS) as callers:
        set_up = submit_windowed(owner, setup, depth=256)
        report.check(all(o.accepted for o in set_up), f"{len(setup)} setup commands accepted")
        adapter = NodeEvidenceAdapter(CommandGateway(owner, workdir / "admission", clock=lambda: next(clock)),
                                      actor_id=INGEST)

        def bare_round() -> float:
            batch = _stamped(next(bare_batches), next(clock))
            elapsed = seconds(lambda: outcomes["bare"].extend(callers.map(owner.submit, batch)))
            return len(batch) / elapsed

        def receipt_round() -> float:
            batch = next(receipt_batches)
            elapsed = seconds(lambda: outcomes["receipts"].extend(
                callers.map(lambda document: adapter.record_receipt(document.body, document.signature), batch)))
            return len(batch) / elapsed

        rounds = interleaved(ROUNDS, bare_round, receipt_round)
        prepared = _stamped(prepared, next(clock))
        prepared_s = seconds(lambda: outcomes["prepared"].extend(callers.map(owner.submit, prepared)))

    report.check(all(o.accepted and not o.duplicate for o in outcomes["bare"]),
                 f"all {len(outcomes['bare'])} bare commands accepted")
    for kind in ("receipts", "prepared"):
        counted = [o for o in outcomes[kind] if o.accepted and o.result["data"]["disposition"] == "accepted"]
        report.check(len(counted) == len(outcomes[kind]) > 0, f"all {len(counted)} {kind} recorded and counted")
    verifications = _verifications(signed[:VERIFICATION_SAMPLES])
    report.check(all(verified for verified, _ in verifications),
                 f"{len(verifications)} sampled receipt signatures verify")

    report.metric("receipts_per_s", "receipts verified, stored and recorded per second", rounds.engine_rate,
                  "receipts/s")
    report.metric("bare_commands_per_s", "bare commands per second, same callers", rounds.floor_rate, "commands/s")
    report.metric("ratio_to_bare", "receipts / bare commands", rounds.ratio, "x")
    report.metric("prepared_receipts_per_s", "prepared RecordReceipt envelopes per second (one batch)",
                  len(prepared) / prepared_s, "receipts/s")
    report.metric("verify_us", "one Ed25519 verification (median)",
                  statistics.median(elapsed for _, elapsed in verifications) * 1e6, "µs")
    report.note(f"   {CALLERS} caller threads; {per_round} receipts and {per_round} bare commands per round")


def _consumed_grants(builder: DemoBuilder) -> tuple[StreamingScenario, list[Grant]]:
    """One session per listener with a consumed grant for each chunk of its work, on three nodes."""
    cast = build_foundation(builder, listeners=LISTENERS, days=1)
    scenario = StreamingScenario(builder, cast, days=1)
    scenario.operators()
    scenario.billing()
    scenario.admit_nodes()
    grants = []
    for number, listener_id in enumerate(cast.listeners):
        work = scenario.pick_work(number)
        session = scenario.open_session(listener_id, work)
        node_id = ("demo-node-00", "demo-node-01", "demo-node-02")[number % 3]
        grants.extend(scenario.consume(scenario.grant(node_id, index, session=session))
                      for index in range(scenario.chunk_count(work)))
    return scenario, grants


def _registrations(builder: DemoBuilder, count: int) -> None:
    for number in range(count):
        account_id = f"demo-bench-listener-{number:06d}"
        builder.add("RegisterAccount", {"account_id": account_id, "kind": "listener", "roles": [],
                                        "identity_digest": fixture_digest("identity", account_id)}, actor=ADMIN)


def _stamped(envelopes: list[dict], admitted_at_ms: int) -> list[dict]:
    return [{**envelope, "admitted_at_ms": admitted_at_ms} for envelope in envelopes]


def _added(builder: DemoBuilder, add) -> list[dict]:
    """The envelopes ``add()`` appends to the builder."""
    first = len(builder.envelopes)
    add()
    return builder.envelopes[first:]


def _batches(items: list, size: int):
    return iter([items[start:start + size] for start in range(0, size * ROUNDS, size)])


def _verifications(documents: list[SignedDocument]) -> list[tuple[bool, float]]:
    """Each receipt's verification result and its seconds, with its node key derived beforehand."""
    keys = [public_key_hex(node_signing_key(body["node_id"], body["key_version"]))
            for body in (orjson.loads(document.body) for document in documents)]
    timings = []
    for document, public_key in zip(documents, keys):
        started = time.perf_counter()
        verified = document.verified_by(public_key)
        timings.append((verified, time.perf_counter() - started))
    return timings

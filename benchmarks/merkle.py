"""Merkle proofs: generation and verification at 10^3, 10^5 and 10^6 journal entries, and the tree's cost per command.

One journal tree of 10^6 synthetic entry hashes is built by appending to the
frontier (keeping every node, as a node store would); the trees of 10^3 and
10^5 entries are its prefixes. At each size, inclusion and consistency proofs
for random entries are generated from the stored nodes and verified, and
inclusion proofs are read again from the nodes written into RocksDB under the
engine's keys, as ``prove-inclusion`` reads them. The
tree's upkeep per command (leaf hash, frontier append, the completed nodes) is
set beside what a group-committed command costs in the same run, and the
engine's group commit is run with and without the tree (rounds interleaved),
and the upkeep is timed where it runs, inside the executor's group commit, as
a share of a group-committed command in the same run. (The with/without
difference of medians is printed too; on a loaded machine it is dominated by
fsync noise.)
"""

from __future__ import annotations

import gc
import hashlib
import math
import random
import statistics
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from benchmarks.report import Report
from benchmarks.workload import (
    SAMPLE_COMMANDS, check_committed, next_registrations, open_ledger, submit_windowed, warm_up,
)
from ledger_engine.application import executor
from ledger_engine.application.journal_tree import StoredNodes, node_key, node_value
from ledger_engine.layout import META
from ledger_engine.storage.rocks import RocksStore
from ledger_engine.merkle import tree
from ledger_engine.merkle.frontier import Frontier, MemoryNodes
from ledger_engine.merkle.journal import journal_leaf_hash

SIZES = (10**3, 10**5, 10**6)
PROOFS = 2_000
ROUNDS = 5
UPKEEP_ENTRIES = 100_000
COMMIT_COMMANDS = 3_000
COMMIT_DEPTH = 64
COMMIT_ROUNDS = 8
SEED = 16


def run(report: Report, workdir: Path) -> None:
    entry_hashes = [hashlib.sha256(b"entry %d" % sequence).hexdigest() for sequence in range(1, SIZES[-1] + 1)]
    nodes = _build(report, entry_hashes)
    # In the engine the nodes live in RocksDB, not on the Python heap: keep the collector from walking them.
    gc.freeze()
    timings = {size: _proofs(report, nodes, size) for size in SIZES}
    _growth(report, timings)
    _stored_proofs(report, workdir, nodes)
    upkeep_us = _upkeep(report, entry_hashes[:UPKEEP_ENTRIES])
    with_tree_us, without_us = _group_commit(report, workdir)
    report.metric("commit_over_upkeep", "group-committed command / tree upkeep per command", with_tree_us / upkeep_us,
                  "x")
    report.target("tree upkeep under 5% of a group-committed command (ratio >= 20)", with_tree_us / upkeep_us, 20, "x")
    report.metric("engine_ab_share_pct", "with vs without the tree: difference of the medians (noise-bound)",
                  100 * (with_tree_us - without_us) / with_tree_us, "%")
    share = _timed_upkeep_us[0] / _timed_upkeep_us[1] / with_tree_us
    report.metric("engine_upkeep_us", "the executor's tree upkeep per command, timed inside group commit",
                  _timed_upkeep_us[0] / _timed_upkeep_us[1], "µs")
    report.metric("engine_tree_share_pct", "that upkeep as a share of a group-committed command, same run",
                  100 * share, "%")
    report.target("the engine's tree upkeep under 5% of a group-committed command (5% / share >= 1)",
                  0.05 / share, 1.0, "x")
    gc.unfreeze()


def _build(report: Report, entry_hashes: list[str]) -> MemoryNodes:
    started = time.perf_counter()
    nodes = MemoryNodes.from_leaf_hashes([journal_leaf_hash(h) for h in entry_hashes])
    report.metric("build_10e6_s", f"journal tree of {len(entry_hashes):,} entries built (every node kept)",
                  time.perf_counter() - started, "s")
    report.check(nodes.size == len(entry_hashes) and nodes.root() == tree.root_at(nodes, nodes.size)
                 == Frontier.from_nodes(nodes, nodes.size).root(),
                 f"the tree holds {nodes.size:,} leaves; frontier root equals the root read from the nodes")
    return nodes


def _proofs(report: Report, nodes: MemoryNodes, size: int) -> dict[str, float]:
    chosen = random.Random(SEED + size)
    indices = [chosen.randrange(size) for _ in range(PROOFS)]
    firsts = [chosen.randrange(1, size) for _ in range(PROOFS)]
    root = tree.root_at(nodes, size)
    roots = {first: tree.root_at(nodes, first) for first in firsts}
    inclusion, consistency = [], []
    prove_in = _per_op(lambda: inclusion.extend(tree.inclusion_proof(nodes, i, size) for i in indices))
    prove_co = _per_op(lambda: consistency.extend(tree.consistency_proof(nodes, m, size) for m in firsts))
    paths, proofs = inclusion[:PROOFS], consistency[:PROOFS]
    verify_in = _per_op(lambda: [tree.verify_inclusion(nodes(0, i), i, size, p, root) for i, p in zip(indices, paths)])
    verify_co = _per_op(lambda: [tree.verify_consistency(m, size, roots[m], root, p) for m, p in zip(firsts, proofs)])
    longest = max(len(path) for path in paths)
    report.check(longest <= math.ceil(math.log2(size)) and all(len(p) <= 2 * math.ceil(math.log2(size)) for p in proofs),
                 f"{size:,} entries: {PROOFS:,} inclusion and {PROOFS:,} consistency proofs verified, paths of at most "
                 f"{longest} hashes (log2 n = {math.log2(size):.1f})")
    label = f"{size:,} entries:"
    for key, text, value in (("prove_inclusion", "inclusion proof generated", prove_in),
                             ("verify_inclusion", "inclusion proof verified", verify_in),
                             ("prove_consistency", "consistency proof generated", prove_co),
                             ("verify_consistency", "consistency proof verified", verify_co)):
        report.metric(f"{key}_{size}_us", f"{label} {text}", value, "µs")
    return {"prove_inclusion": prove_in, "verify_inclusion": verify_in, "prove_consistency": prove_co,
            "verify_consistency": verify_co}


def _stored_proofs(report: Report, workdir: Path, nodes: MemoryNodes) -> None:
    """Inclusion proofs read from RocksDB, as ``prove-inclusion`` reads them: the engine's node keys in ``meta``."""
    with RocksStore(workdir / "nodes", create=True) as store:
        ops = []
        for level, hashes in enumerate(nodes.levels):
            for index, node in enumerate(hashes):
                ops.append((META, node_key(level, index), node_value(node)))
                if len(ops) >= 100_000:
                    store.write(ops)
                    ops = []
        store.write(ops)
        stored = StoredNodes(store.get)
        for size in SIZES:
            chosen = random.Random(SEED + size)
            indices = [chosen.randrange(size) for _ in range(PROOFS)]
            paths: list = []
            per_proof = _per_op(lambda: paths.extend(tree.inclusion_proof(stored, i, size) for i in indices))
            report.check(paths[:PROOFS] == [tree.inclusion_proof(nodes, i, size) for i in indices],
                         f"{size:,} entries: proofs read from RocksDB equal those from memory")
            report.metric(f"prove_inclusion_stored_{size}_us", f"{size:,} entries: inclusion proof read from RocksDB",
                          per_proof, "µs")


def _per_op(work) -> float:
    """Median over rounds of one round's time per proof, in microseconds."""
    per_round = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        work()
        per_round.append((time.perf_counter() - started) * 1e6 / PROOFS)
    return statistics.median(per_round)


def _growth(report: Report, timings: dict[int, dict[str, float]]) -> None:
    small, large = SIZES[0], SIZES[-1]
    log_ratio = math.log2(large) / math.log2(small)
    for key in ("prove_inclusion", "verify_inclusion", "prove_consistency", "verify_consistency"):
        ratio = timings[large][key] / timings[small][key]
        report.metric(f"{key}_growth", f"{key.replace('_', ' ')}: time at {large:,} / at {small:,}", ratio, "x")
        report.target(f"{key.replace('_', ' ')} grows as log n: {large:,}/{small:,} within 1.5 x log ratio "
                      f"({log_ratio:.1f}), as headroom", 1.5 * log_ratio / ratio, 1.0, "x")
    report.note(f"   a linear cost would grow {large // small:,}x from {small:,} to {large:,} entries; log n grows "
                f"{log_ratio:.1f}x")


def _upkeep(report: Report, entry_hashes: list[str]) -> float:
    """What the engine adds per command: the entry's leaf hash, the append, the completed nodes kept."""
    frontier_only, with_nodes, agreed = [], [], []
    for _ in range(ROUNDS):
        frontier = Frontier()
        started = time.perf_counter()
        for entry_hash in entry_hashes:
            frontier, _ = frontier.append(journal_leaf_hash(entry_hash))
        frontier_only.append((time.perf_counter() - started) * 1e6 / len(entry_hashes))
        nodes = MemoryNodes()
        started = time.perf_counter()
        for entry_hash in entry_hashes:
            nodes.append(journal_leaf_hash(entry_hash))
        with_nodes.append((time.perf_counter() - started) * 1e6 / len(entry_hashes))
        agreed.append(frontier.root() == nodes.root() == tree.root_at(nodes, len(entry_hashes)))
    report.check(all(agreed), f"{ROUNDS} x {len(entry_hashes):,} appends: frontier and node store reach the same root")
    report.metric("append_us", "frontier append per entry (leaf hash included)", statistics.median(frontier_only), "µs")
    report.metric("append_with_nodes_us", "append keeping the completed nodes (the engine's upkeep)",
                  statistics.median(with_nodes), "µs")
    return statistics.median(with_nodes)


def _group_commit(report: Report, workdir: Path) -> tuple[float, float]:
    """Median per-command group-commit time with the journal tree and with it switched off, rounds interleaved
    in alternating order (ABBA), so neither side always runs first on a cold machine."""
    timings: dict[bool, list[float]] = {True: [], False: []}
    for number in range(COMMIT_ROUNDS):
        for keep_tree in ((True, False) if number % 2 == 0 else (False, True)):
            with _tree_kept(keep_tree):
                timings[keep_tree].append(_commit_round(report, workdir / f"ledger-{number}-{keep_tree}"))
    with_tree, without = statistics.median(timings[True]), statistics.median(timings[False])
    report.metric("group_commit_us", f"group commit (depth {COMMIT_DEPTH}) with the journal tree: per command",
                  with_tree, "µs")
    report.metric("group_commit_no_tree_us", "the same with the tree switched off (interleaved rounds)", without, "µs")
    return with_tree, without


def _commit_round(report: Report, path: Path) -> float:
    with open_ledger(path) as owner:
        warm_up(owner)
        envelopes = next_registrations(owner, COMMIT_COMMANDS)
        started = time.perf_counter()
        outcomes = submit_windowed(owner, envelopes, COMMIT_DEPTH)
        elapsed = time.perf_counter() - started
        check_committed(report, owner, outcomes, SAMPLE_COMMANDS + COMMIT_COMMANDS)
    return elapsed * 1e6 / COMMIT_COMMANDS


class _Uncounted:
    """Stands in for the frontier when the tree is switched off: only the size advances."""

    def __init__(self, size: int) -> None:
        self.size = size


_timed_upkeep_us = [0.0, 0]  # microseconds spent in the executor's tree upkeep, and entries appended


@contextmanager
def _tree_kept(keep: bool) -> Iterator[None]:
    """Time the executor's tree upkeep where it runs (in the leader thread, inside group commit), or switch it
    off for a baseline; the benchmark's ledgers are thrown away."""
    stage_append, frontier_op = executor.stage_append, executor.frontier_op
    if keep:
        def timed_append(stage, frontier, entry_hash):
            started = time.perf_counter()
            after = stage_append(stage, frontier, entry_hash)
            _timed_upkeep_us[0] += (time.perf_counter() - started) * 1e6
            _timed_upkeep_us[1] += 1
            return after

        def timed_frontier(frontier):
            started = time.perf_counter()
            op = frontier_op(frontier)
            _timed_upkeep_us[0] += (time.perf_counter() - started) * 1e6
            return op

        executor.stage_append, executor.frontier_op = timed_append, timed_frontier
        try:
            yield
        finally:
            executor.stage_append, executor.frontier_op = stage_append, frontier_op
        return
    executor.stage_append = lambda stage, frontier, entry_hash: _Uncounted(frontier.size + 1)
    executor.frontier_op = lambda frontier: ("meta", b"benchmark/no-tree", b"")
    try:
        yield
    finally:
        executor.stage_append, executor.frontier_op = stage_append, frontier_op

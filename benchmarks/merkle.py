"""Merkle proofs: generation and verification at 10^3, 10^5 and 10^6 journal entries, and the tree's cost per command.

One journal tree of 10^6 synthetic entry hashes is built by appending to the
frontier (keeping every node, as a node store would); the trees of 10^3 and
10^5 entries are its prefixes. At each size, inclusion and consistency proofs
for random entries are generated from the stored nodes and verified. The
tree's upkeep per command (leaf hash, frontier append, the completed nodes) is
set beside what a group-committed command costs in the same run.
"""

from __future__ import annotations

import gc
import hashlib
import math
import random
import statistics
import time
from pathlib import Path

from benchmarks.report import Report
from benchmarks.workload import (
    SAMPLE_COMMANDS, check_committed, next_registrations, open_ledger, submit_windowed, warm_up,
)
from ledger_engine.merkle import tree
from ledger_engine.merkle.frontier import Frontier, MemoryNodes
from ledger_engine.merkle.journal import journal_leaf_hash

SIZES = (10**3, 10**5, 10**6)
PROOFS = 2_000
ROUNDS = 5
UPKEEP_ENTRIES = 100_000
COMMIT_COMMANDS = 3_000
COMMIT_DEPTH = 64
SEED = 16


def run(report: Report, workdir: Path) -> None:
    entry_hashes = [hashlib.sha256(b"entry %d" % sequence).hexdigest() for sequence in range(1, SIZES[-1] + 1)]
    nodes = _build(report, entry_hashes)
    # In the engine the nodes live in RocksDB, not on the Python heap: keep the collector from walking them.
    gc.freeze()
    timings = {size: _proofs(report, nodes, size) for size in SIZES}
    _growth(report, timings)
    upkeep_us = _upkeep(report, entry_hashes[:UPKEEP_ENTRIES])
    commit_us = _group_commit(report, workdir)
    report.metric("commit_over_upkeep", "group-committed command / tree upkeep per command", commit_us / upkeep_us, "x")
    report.target("tree upkeep under 5% of a group-committed command (ratio >= 20)", commit_us / upkeep_us, 20, "x")
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


def _group_commit(report: Report, workdir: Path) -> float:
    with open_ledger(workdir / "ledger") as owner:
        warm_up(owner)
        envelopes = next_registrations(owner, COMMIT_COMMANDS)
        started = time.perf_counter()
        outcomes = submit_windowed(owner, envelopes, COMMIT_DEPTH)
        elapsed = time.perf_counter() - started
        check_committed(report, owner, outcomes, SAMPLE_COMMANDS + COMMIT_COMMANDS)
    per_command_us = elapsed * 1e6 / COMMIT_COMMANDS
    report.metric("group_commit_us", f"group commit (depth {COMMIT_DEPTH}), same run: per command", per_command_us, "µs")
    return per_command_us

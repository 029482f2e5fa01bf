"""Merkle proofs: generation and verification at 10^3, 10^5 and 10^6 journal entries, and the tree's cost per command.

One journal tree of 10^6 synthetic entry hashes is built by appending to the
frontier (keeping every node, in memory); the trees of 10^3 and 10^5 entries
are its prefixes. At each size, inclusion and consistency proofs for random
entries are generated from the nodes and verified, and inclusion proofs are
read again from RocksDB in the engine's layout, as ``prove-inclusion`` reads
them: the nodes from level 4 up, the lower ones recomputed from the 16 journal
entries of a block. The tree's upkeep per entry (the engine's ``stage_append``)
is set beside what a group-committed command costs.

The engine's group commit is then run on three fresh ledgers at a time, fed
the same commands chunk by chunk: the tree kept and the tree switched off back
to back (alternating which goes first: ABBA), so the with/without ratio is
taken per chunk, seconds apart on the same machine, by the wall clock and by
the CPU clock of the thread leading each group (which the fsync wait does not
advance); and the third ledger times the executor's upkeep itself, in that
CPU clock, as a share of the same chunk's command.
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
from typing import Iterator, NamedTuple

from benchmarks.report import Report
from benchmarks.workload import (
    SAMPLE_COMMANDS, check_committed, next_registrations, open_ledger, submit_windowed, warm_up,
)
from ledger_engine.application import journal_tree
from ledger_engine.keys import seq20
from ledger_engine.layout import JOURNAL, META
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
COMMIT_SETS = 5
CHUNK_COMMANDS = 150
SEED = 16


def run(report: Report, workdir: Path) -> None:
    entry_hashes = _entry_hashes(SIZES[-1])
    nodes = _build(report, entry_hashes)
    # In the engine the nodes live in RocksDB, not on the Python heap: keep the collector from walking them.
    gc.freeze()
    _growth(report, _proofs(report, nodes))
    _stored_proofs(report, workdir, nodes)
    upkeep_us = _upkeep(report, entry_hashes[:UPKEEP_ENTRIES])
    with_tree_us = _group_commit(report, workdir)
    report.metric("commit_over_upkeep", "group-committed command / tree upkeep per entry", with_tree_us / upkeep_us,
                  "x")
    report.target("tree upkeep under 5% of a group-committed command (ratio >= 20)", with_tree_us / upkeep_us, 20, "x")
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


OPERATIONS = {"prove_inclusion": "inclusion proof generated", "verify_inclusion": "inclusion proof verified",
              "prove_consistency": "consistency proof generated", "verify_consistency": "consistency proof verified"}


class _ProofCase:
    """One tree size's random proofs: what each operation needs, made once, and the work of each operation."""

    def __init__(self, nodes: MemoryNodes, size: int) -> None:
        chosen = random.Random(SEED + size)
        self.size, self.nodes = size, nodes
        self.indices = [chosen.randrange(size) for _ in range(PROOFS)]
        self.firsts = [chosen.randrange(1, size) for _ in range(PROOFS)]
        self.root = tree.root_at(nodes, size)
        self.roots = {first: tree.root_at(nodes, first) for first in self.firsts}
        self.paths = [tree.inclusion_proof(nodes, i, size) for i in self.indices]
        self.proofs = [tree.consistency_proof(nodes, m, size) for m in self.firsts]

    def work(self, operation: str) -> None:
        nodes, size, root = self.nodes, self.size, self.root
        if operation == "prove_inclusion":
            [tree.inclusion_proof(nodes, i, size) for i in self.indices]
        elif operation == "verify_inclusion":
            [tree.verify_inclusion(nodes(0, i), i, size, p, root) for i, p in zip(self.indices, self.paths)]
        elif operation == "prove_consistency":
            [tree.consistency_proof(nodes, m, size) for m in self.firsts]
        else:
            [tree.verify_consistency(m, size, self.roots[m], root, p) for m, p in zip(self.firsts, self.proofs)]


def _proofs(report: Report, nodes: MemoryNodes) -> dict[int, dict[str, list[float]]]:
    """Each operation's time per proof (µs) at every size, round by round: in each round the sizes run back to
    back, so a growth ratio taken within a round compares sizes on the same machine."""
    cases = [_ProofCase(nodes, size) for size in SIZES]
    for case in cases:
        longest = max(len(path) for path in case.paths)
        report.check(longest <= math.ceil(math.log2(case.size))
                     and all(len(p) <= 2 * math.ceil(math.log2(case.size)) for p in case.proofs),
                     f"{case.size:,} entries: {PROOFS:,} inclusion and {PROOFS:,} consistency proofs made, paths of at "
                     f"most {longest} hashes (log2 n = {math.log2(case.size):.1f})")
    rounds: dict[int, dict[str, list[float]]] = {size: {operation: [] for operation in OPERATIONS} for size in SIZES}
    for _ in range(ROUNDS):
        for operation in OPERATIONS:
            for case in cases:
                rounds[case.size][operation].append(_per_proof_us(lambda: case.work(operation)))
    for size in SIZES:
        for operation in OPERATIONS:
            report.metric(f"{operation}_{size}_us", f"{size:,} entries: {OPERATIONS[operation]}",
                          statistics.median(rounds[size][operation]), "µs")
    return rounds


def _stored_proofs(report: Report, workdir: Path, nodes: MemoryNodes) -> None:
    """Inclusion proofs read from RocksDB in the engine's layout: block nodes and above in ``meta``, the entries'
    hashes in ``journal`` (each entry here only ``{"entry_hash": ...}``, smaller than a real entry)."""
    with RocksStore(workdir / "nodes", create=True) as store:
        ops = []
        for level, hashes in enumerate(nodes.levels):
            for index, node in enumerate(hashes if level >= journal_tree.STORED_FROM_LEVEL else ()):
                ops.append((META, journal_tree.node_key(level, index), journal_tree.node_value(node)))
        ops.extend((JOURNAL, seq20(sequence).encode(), b'{"entry_hash":"%s"}' % entry_hash.encode())
                   for sequence, entry_hash in enumerate(_entry_hashes(nodes.size), start=1))
        for first in range(0, len(ops), 100_000):
            store.write(ops[first:first + 100_000])
        for size in SIZES:
            chosen = random.Random(SEED + size)
            indices = [chosen.randrange(size) for _ in range(PROOFS)]
            paths: list = []
            per_proof = _per_op(lambda: paths.extend(_prove_from_store(store, i, size) for i in indices))
            report.check(paths[:PROOFS] == [tree.inclusion_proof(nodes, i, size) for i in indices],
                         f"{size:,} entries: proofs read from RocksDB equal those from memory")
            report.metric(f"prove_inclusion_stored_{size}_us", f"{size:,} entries: inclusion proof read from RocksDB",
                          per_proof, "µs")


def _prove_from_store(store: RocksStore, index: int, size: int) -> list[bytes]:
    """One proof as the CLI makes it: a fresh reader, so each proof reads its own blocks' entries."""
    return tree.inclusion_proof(journal_tree.StoredNodes(store.get), index, size)


def _entry_hashes(count: int) -> list[str]:
    return [hashlib.sha256(b"entry %d" % sequence).hexdigest() for sequence in range(1, count + 1)]


def _per_op(work) -> float:
    """Median over rounds of one round's time per proof, in microseconds."""
    return statistics.median(_per_proof_us(work) for _ in range(ROUNDS))


def _per_proof_us(work) -> float:
    """One run of ``work`` (``PROOFS`` proofs), in microseconds per proof."""
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1e6 / PROOFS


def _growth(report: Report, rounds: dict[int, dict[str, list[float]]]) -> None:
    small, large = SIZES[0], SIZES[-1]
    log_ratio = math.log2(large) / math.log2(small)
    for key in OPERATIONS:
        ratio = statistics.median(big / little for big, little in zip(rounds[large][key], rounds[small][key]))
        report.metric(f"{key}_growth", f"{key.replace('_', ' ')}: time at {large:,} / at {small:,}, median of the "
                                       f"rounds' ratios", ratio, "x")
        report.target(f"{key.replace('_', ' ')} grows as log n: {large:,}/{small:,} within 1.5 x log ratio "
                      f"({log_ratio:.1f}), as headroom", 1.5 * log_ratio / ratio, 1.0, "x")
    report.note(f"   a linear cost would grow {large // small:,}x from {small:,} to {large:,} entries; log n grows "
                f"{log_ratio:.1f}x")


def _upkeep(report: Report, entry_hashes: list[str]) -> float:
    """What the engine adds per command, outside it: the entry's leaf hash and append, the block nodes staged."""
    full_frontier, engine, agreed = [], [], []
    for _ in range(ROUNDS):
        frontier = Frontier()
        started = time.process_time()
        for entry_hash in entry_hashes:
            frontier, _ = frontier.append(journal_leaf_hash(entry_hash))
        full_frontier.append((time.process_time() - started) * 1e6 / len(entry_hashes))
        staged: dict = {}
        kept, stage = journal_tree.empty_tree(), lambda family, key, value: staged.__setitem__((family, key), value)
        started = time.process_time()
        for entry_hash in entry_hashes:
            kept = journal_tree.stage_append(stage, kept, entry_hash)
        engine.append((time.process_time() - started) * 1e6 / len(entry_hashes))
        agreed.append(frontier.root() == kept.root() and len(staged) < len(entry_hashes) // 8)
    report.check(all(agreed), f"{ROUNDS} x {len(entry_hashes):,} appends: the engine's upkeep reaches the frontier's "
                              f"root, staging under one node per 8 entries")
    report.metric("append_us", "frontier append per entry (leaf hash included), CPU", statistics.median(full_frontier),
                  "µs")
    report.metric("append_with_nodes_us", "the engine's upkeep per entry (stage_append, block nodes staged), CPU",
                  statistics.median(engine), "µs")
    return statistics.median(engine)


def _group_commit(report: Report, workdir: Path) -> float:
    """Three fresh ledgers at a time, fed the same commands chunk by chunk: the tree kept and switched off back
    to back (ABBA), then the upkeep timed. Returns the median per-command wall time with the tree (untimed)."""
    chunks: list[_Chunk] = []
    for number in range(COMMIT_SETS):
        with (open_ledger(workdir / f"with-{number}") as kept, open_ledger(workdir / f"without-{number}") as bare,
              open_ledger(workdir / f"timed-{number}") as timed_owner):
            ledgers = (kept, bare, timed_owner)
            for owner in ledgers:
                warm_up(owner)
                _count_leader_cpu(owner)
            envelopes = next_registrations(kept, COMMIT_COMMANDS)
            outcomes: dict[int, list] = {id(owner): [] for owner in ledgers}
            for index in range(0, COMMIT_COMMANDS, CHUNK_COMMANDS):
                chunk = envelopes[index:index + CHUNK_COMMANDS]
                sides = {}
                for keep_tree in ((True, False) if index // CHUNK_COMMANDS % 2 == 0 else (False, True)):
                    with _tree_kept(keep_tree):
                        sides[keep_tree] = _timed_chunk(kept if keep_tree else bare, chunk, outcomes)
                with _upkeep_timed() as upkeep:
                    wall, cpu = _timed_chunk(timed_owner, chunk, outcomes)
                chunks.append(_Chunk(*sides[True], *sides[False], upkeep.per_entry_us(), wall, cpu))
            for owner in ledgers:
                check_committed(report, owner, outcomes[id(owner)], SAMPLE_COMMANDS + COMMIT_COMMANDS)
    report.facts["chunks"] = [chunk._asdict() for chunk in chunks]
    _report_chunks(report, chunks)
    return statistics.median(chunk.with_wall for chunk in chunks)


def _timed_chunk(owner, envelopes: list, outcomes: dict[int, list]) -> tuple[float, float]:
    """Per-command wall time and leader-thread CPU time (µs) of a windowed group commit of ``envelopes``.

    The collector runs first, so no chunk pays for the garbage of the one before it (the other side's).
    """
    gc.collect()
    started, cpu = time.perf_counter(), owner.executor.leader_cpu[0]
    outcomes[id(owner)].extend(submit_windowed(owner, envelopes, COMMIT_DEPTH))
    elapsed, cpu = time.perf_counter() - started, owner.executor.leader_cpu[0] - cpu
    return elapsed * 1e6 / len(envelopes), cpu * 1e6 / len(envelopes)


def _count_leader_cpu(owner) -> None:
    """Add up the CPU clock of whichever thread leads each group commit (the fsync wait is not CPU): the
    command's whole cost in the executor, without the submitting thread's or RocksDB's background work."""
    executor, spent = owner.executor, [0.0]
    commit = executor._commit

    def timed(group):
        started = time.thread_time()
        try:
            commit(group)
        finally:
            spent[0] += time.thread_time() - started

    executor._commit, executor.leader_cpu = timed, spent


class _Chunk(NamedTuple):
    """One chunk's per-command figures in µs: wall and executor CPU with and without the tree, back to back, and
    the timed ledger's upkeep (leader thread CPU) beside its own wall and executor CPU per command."""

    with_wall: float
    with_cpu: float
    without_wall: float
    without_cpu: float
    upkeep: float
    timed_wall: float
    timed_cpu: float


def _report_chunks(report: Report, chunks: list[_Chunk]) -> None:
    def spread(key: str, label: str, values: list[float], unit: str) -> None:
        report.metric(key, f"{label}: median", statistics.median(values), unit)
        report.metric(f"{key}_min", f"{label}: lowest of {len(values)} chunks", min(values), unit)
        report.metric(f"{key}_max", f"{label}: highest of {len(values)} chunks", max(values), unit)

    spread("group_commit_us", f"group commit (depth {COMMIT_DEPTH}) with the journal tree, per command",
           [c.with_wall for c in chunks], "µs")
    spread("group_commit_no_tree_us", "the same with the tree switched off", [c.without_wall for c in chunks], "µs")
    wall = [c.with_wall / c.without_wall for c in chunks]
    cpu = [c.with_cpu / c.without_cpu for c in chunks]
    spread("ab_wall_ratio", "with / without the tree, wall clock, per chunk", wall, "x")
    spread("ab_cpu_ratio", "with / without the tree, executor CPU, per chunk", cpu, "x")
    spread("engine_upkeep_us", "the executor's tree upkeep per command, leader thread CPU inside group commit",
           [c.upkeep for c in chunks], "µs")
    share = [100 * c.upkeep / c.timed_wall for c in chunks]
    spread("engine_tree_share_pct", "that upkeep as a share of a group-committed command (wall), same ledger", share,
           "%")
    spread("engine_tree_cpu_share_pct", "that upkeep as a share of the command's executor CPU, same ledger",
           [100 * c.upkeep / c.timed_cpu for c in chunks], "%")
    report.target("group commit with the tree under 5% slower than without: median per-chunk wall ratio (1.05 / "
                  "ratio >= 1)", 1.05 / statistics.median(wall), 1.0, "x")
    report.target("the same by executor CPU, median per-chunk ratio (1.05 / ratio >= 1)", 1.05 / statistics.median(cpu),
                  1.0, "x")
    report.target("the executor's upkeep under 5% of a group-committed command in every chunk (5% / highest share "
                  ">= 1)", 5 / max(share), 1.0, "x")


class _Uncounted:
    """Stands in for the frontier when the tree is switched off: only the size advances."""

    def __init__(self, size: int) -> None:
        self.size = size


@contextmanager
def _tree_kept(keep: bool) -> Iterator[None]:
    """The executor as it is, or with its tree upkeep switched off for a baseline; the ledgers are thrown away."""
    stage_append = journal_tree.stage_append
    if not keep:
        journal_tree.stage_append = lambda stage, frontier, *entry_hashes: _Uncounted(frontier.size + len(entry_hashes))
    try:
        yield
    finally:
        journal_tree.stage_append = stage_append


class _Timed:
    def __init__(self) -> None:
        self.seconds, self.clock_seconds, self.entries = 0.0, 0.0, 0

    def per_entry_us(self) -> float:
        """The upkeep per entry, less what the clock itself adds to each interval (an empty interval's time)."""
        return (self.seconds - self.clock_seconds) * 1e6 / self.entries


@contextmanager
def _upkeep_timed() -> Iterator[_Timed]:
    """The executor's ``stage_append`` timed where it runs, in the leader thread's CPU clock (which a wait for
    the GIL does not advance); an empty interval after each measures the clock's own cost."""
    stage_append, timed = journal_tree.stage_append, _Timed()

    def timed_append(stage, frontier, *entry_hashes):
        started = time.thread_time()
        after = stage_append(stage, frontier, *entry_hashes)
        ended = time.thread_time()
        timed.clock_seconds += time.thread_time() - ended
        timed.seconds += ended - started
        timed.entries += len(entry_hashes)
        return after

    journal_tree.stage_append = timed_append
    try:
        yield timed
    finally:
        journal_tree.stage_append = stage_append

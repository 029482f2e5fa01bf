"""The journal's Merkle tree, kept in the same WriteBatch as the entries it covers.

Leaf ``s - 1`` is entry ``s``'s hash (``merkle.journal``). Each new entry's
leaf hash and the perfect-subtree nodes it completes are staged with the
entry, and the frontier once per group, so the stored tree always has exactly
as many leaves as the journal has entries (docs/adr/0039). Everything lives in
``meta`` under ``merkle/``: outside the logical state and the exports, which
carry the root and recompute it from the journal.

Opening checks the stored frontier against the head and the stored nodes; a
ledger written before the tree existed, or loaded from a checkpoint, has no
frontier and gets its tree built from its journal once.
"""

from __future__ import annotations

import re
from typing import Callable

import orjson

from ledger_engine.application.journal import Head
from ledger_engine.canonical import canonical_bytes
from ledger_engine.errors import ErrorCode, LedgerError, StorageFault
from ledger_engine.keys import seq20
from ledger_engine.layout import JOURNAL, META
from ledger_engine.merkle import tree
from ledger_engine.merkle.frontier import Frontier, MemoryNodes
from ledger_engine.merkle.journal import consistency_document, inclusion_document, journal_leaf_hash, journal_nodes
from ledger_engine.merkle.tree import NodeReader
from ledger_engine.storage.rocks import RocksStore, WriteOp

FRONTIER_KEY = b"merkle/frontier"
NODE_PREFIX = b"merkle/node/"
CATCH_UP_CHUNK = 10_000
_HEX_NODE = re.compile(rb'"[0-9a-f]{64}"')

Stage = Callable[[str, bytes, bytes], None]  # (family, key, value)


def node_key(level: int, index: int) -> bytes:
    """``merkle/node/LL/<index, 20 digits>``: a node's key, in level then index order."""
    return b"merkle/node/%02d/%020d" % (level, index)


def node_value(node: bytes) -> bytes:
    """A node as its canonical JSON hex string, like every other value the ledger stores."""
    return b'"' + node.hex().encode() + b'"'


class StoredNodes:
    """A ``NodeReader`` over the nodes in ``meta``; a missing or malformed node is damaged storage."""

    def __init__(self, get_raw: Callable[[str, bytes], bytes | None]) -> None:
        self._get_raw = get_raw

    def __call__(self, level: int, index: int) -> bytes:
        raw = self._get_raw(META, node_key(level, index))
        if raw is not None and len(raw) == 2 * tree.HASH_BYTES + 2 and _HEX_NODE.fullmatch(raw):
            return bytes.fromhex(raw[1:-1].decode())
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{META}/{node_key(level, index).decode()} is missing or torn")


def stage_append(stage: Stage, frontier: Frontier, entry_hash: str) -> Frontier:
    """Stage entry ``frontier.size + 1``'s leaf and the nodes it completes; the frontier after it."""
    leaf = journal_leaf_hash(entry_hash)
    after, completed = frontier.append(leaf)
    stage(META, node_key(0, frontier.size), node_value(leaf))
    for node in completed:
        stage(META, node_key(node.level, node.index), node_value(node.hash))
    return after


def appended_keys(sequence: int) -> list[bytes]:
    """The keys appending entry ``sequence`` writes: its leaf, the nodes it completes, and the frontier."""
    keys, level = [node_key(0, sequence - 1)], 1
    while sequence % (1 << level) == 0:
        keys.append(node_key(level, (sequence >> level) - 1))
        level += 1
    return [*keys, FRONTIER_KEY]


def check_journal_claim(payload: object, get_raw: Callable[[str, bytes], bytes | None], frontier: Frontier) -> None:
    """A payload naming a journal tree (a commitment's) must name this journal's root at that size.

    Checked by the executor in command order, reading nodes through the group's pending writes, because
    rules read state and the tree is not state (docs/adr/0041). A refusal is not journalled.
    """
    claim = getattr(payload, "journal_tree", None)
    if claim is None:
        return
    if claim.size > frontier.size:
        raise LedgerError(ErrorCode.CONFLICTING_EVIDENCE,
                          f"the journal has {frontier.size} entries, not the {claim.size} the commitment names")
    actual = tree.root_at(StoredNodes(get_raw), claim.size).hex()
    if actual != claim.root:
        raise LedgerError(ErrorCode.CONFLICTING_EVIDENCE,
                          f"the journal tree of {claim.size} entries has root {actual}, not {claim.root}")


def frontier_op(frontier: Frontier) -> WriteOp:
    return META, FRONTIER_KEY, canonical_bytes(frontier.as_json())


def open_tree(store: RocksStore, head: Head) -> Frontier:
    """The journal tree's frontier at ``head``, checked; built from the journal when it was never kept."""
    raw = store.get(META, FRONTIER_KEY)
    if raw is None:
        return build_from_journal(store, head)
    try:
        frontier = Frontier.from_json(orjson.loads(raw))
    except (orjson.JSONDecodeError, ValueError) as error:
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{META}/{FRONTIER_KEY.decode()}: {error}") from None
    check_frontier(store, frontier, head)
    return frontier


def check_frontier(store: RocksStore, frontier: Frontier, head: Head) -> None:
    nodes = StoredNodes(store.get)
    if frontier.size != head.sequence:
        raise StorageFault(ErrorCode.STORAGE_CORRUPT,
                           f"the journal tree has {frontier.size} leaves but the journal {head.sequence} entries")
    if frontier != Frontier.from_nodes(nodes, frontier.size):
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, "the journal tree's frontier differs from its stored nodes")
    if head.sequence and nodes(0, head.sequence - 1) != journal_leaf_hash(head.entry_hash):
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, "the journal tree's last leaf is not the chain head")


def build_from_journal(store: RocksStore, head: Head) -> Frontier:
    """Build and store the tree over the whole journal (a ledger from before the tree, a loaded checkpoint)."""
    frontier, ops = Frontier(), []
    for key, raw in store.scan(JOURNAL):
        entry_hash = orjson.loads(raw)["entry_hash"]
        frontier = stage_append(lambda family, k, v: ops.append((family, k, v)), frontier, entry_hash)
        if len(ops) >= CATCH_UP_CHUNK:
            store.write(ops)
            ops = []
    if frontier.size != head.sequence:
        raise StorageFault(ErrorCode.STORAGE_CORRUPT,
                           f"the journal holds {frontier.size} entries but the head is at {head.sequence}")
    store.write([*ops, frontier_op(frontier)])
    return frontier


def stored_root(store: RocksStore, size: int) -> str:
    return tree.root_at(StoredNodes(store.get), size).hex()


def prove_inclusion(store: RocksStore, head: Head, sequence: int, at: int | None = None) -> dict:
    """``prove-inclusion``: entry ``sequence`` in the tree of ``at`` (default: every) entries, from stored nodes."""
    size = head.sequence if at is None else at
    if not 1 <= sequence <= size <= head.sequence:
        raise LedgerError(ErrorCode.NOT_FOUND, f"entry {sequence} is not in a journal tree of {size} "
                                               f"(the journal has {head.sequence} entries)")
    entry = store.get(JOURNAL, seq20(sequence).encode())
    if entry is None:
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{JOURNAL}/{seq20(sequence)} is missing")
    return inclusion_document(_reader(store, head), orjson.loads(entry)["entry_hash"], sequence, size)


def prove_consistency(store: RocksStore, head: Head, first: int, second: int) -> dict:
    """``prove-consistency``: the tree of ``first`` entries is a prefix of the one of ``second``."""
    if not 0 <= first <= second <= head.sequence:
        raise LedgerError(ErrorCode.NOT_FOUND, f"no proof from {first} to {second} entries "
                                               f"(the journal has {head.sequence} entries)")
    return consistency_document(_reader(store, head), first, second)


def _reader(store: RocksStore, head: Head) -> NodeReader:
    """The stored nodes once checked against the head; a stopped ledger from before the tree: its journal read whole."""
    if store.get(META, FRONTIER_KEY) is None:
        nodes: MemoryNodes = journal_nodes([orjson.loads(raw)["entry_hash"] for _, raw in store.scan(JOURNAL)])
        if nodes.size != head.sequence:
            raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"the journal holds {nodes.size} entries, the head {head.sequence}")
        return nodes
    open_tree(store, head)
    return StoredNodes(store.get)

"""The journal's Merkle tree, kept in the same WriteBatch as the entries it covers.

Leaf ``s - 1`` is entry ``s``'s hash (``merkle.journal``). Only the nodes from
level ``STORED_FROM_LEVEL`` up are stored (docs/adr/0057): the leaves are the
journal's own entry hashes, so a node below that level is recomputed from the
``BLOCK`` entries of its block when a proof needs it, and a full block's
recomputed root is checked against its stored node. An entry stages nothing
until it fills its block; the entry that does stages the block's node and the
nodes above it that it completes, with the entry (docs/adr/0039). Everything
lives in ``meta`` under ``merkle/``: outside the logical state and the exports,
which carry the root and recompute it from the journal.

Opening rebuilds the frontier from the stored nodes and the last block's
entries and checks it against the head; a ledger written before the tree, or
in another layout, or loaded from a checkpoint, gets its tree built from its
journal once.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import Callable, Protocol, TypeGuard

import orjson

from ledger_engine.open_json import Document
from ledger_engine.storage.head import Head
from ledger_engine.canonical import canonical_bytes
from ledger_engine.errors import ErrorCode, LedgerError, StorageFault
from ledger_engine.keys import seq20
from ledger_engine.layout import JOURNAL, META
from ledger_engine.merkle import tree
from ledger_engine.merkle.frontier import BlockFrontier, MemoryNodes
from ledger_engine.merkle.journal import (
    JournalFrontier, consistency_document, inclusion_document, journal_leaf_hash, journal_nodes,
)
from ledger_engine.merkle.tree import NodeReader
from ledger_engine.storage.rocks import RocksStore, WriteOp

STORED_FROM_LEVEL = 4
BLOCK = 1 << STORED_FROM_LEVEL
LAYOUT_KEY = b"merkle/layout"
LAYOUT = canonical_bytes({"stored_from_level": STORED_FROM_LEVEL})
NODE_PREFIX = b"merkle/node/"
CATCH_UP_CHUNK = 10_000
_HEX_NODE = re.compile(rb'"[0-9a-f]{64}"')

Stage = Callable[[str, bytes, bytes], None]  # (family, key, value)


class JournalTreeClaim(Protocol):
    """The journal tree a payload names: its size (entries 1..size) and root in hex."""

    size: int
    root: str


class NamesJournalTree(Protocol):
    journal_tree: JournalTreeClaim


def node_key(level: int, index: int) -> bytes:
    """``merkle/node/LL/<index, 20 digits>``: a node's key, in level then index order."""
    return b"merkle/node/%02d/%020d" % (level, index)


def node_value(node: bytes) -> bytes:
    """A node as its canonical JSON hex string, like every other value the ledger stores."""
    return b'"' + node.hex().encode() + b'"'


class StoredNodes:
    """A ``NodeReader`` over the nodes in ``meta`` and, below ``STORED_FROM_LEVEL``, the journal's entry hashes.

    A block's leaves are read once per reader. A missing or malformed node or entry, or a full block whose
    entries do not hash to its stored node, is damaged storage.
    """

    def __init__(self, get_raw: Callable[[str, bytes], bytes | None]) -> None:
        self._get_raw = get_raw
        self._blocks: dict[int, list[bytes]] = {}

    def __call__(self, level: int, index: int) -> bytes:
        if level >= STORED_FROM_LEVEL:
            return self._stored(level, index)
        first, width = index << level, 1 << level
        offset = first % BLOCK
        leaves = self._block(first // BLOCK)[offset:offset + width]
        if len(leaves) != width:
            raise StorageFault(ErrorCode.STORAGE_CORRUPT,
                               f"{JOURNAL}/{seq20(first + len(leaves) + 1)} is missing under the journal tree")
        return tree.perfect_root(leaves)

    def _stored(self, level: int, index: int) -> bytes:
        raw = self._get_raw(META, node_key(level, index))
        if raw is not None and len(raw) == 2 * tree.HASH_BYTES + 2 and _HEX_NODE.fullmatch(raw):
            return bytes.fromhex(raw[1:-1].decode())
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{META}/{node_key(level, index).decode()} is missing or torn")

    def entry_hashes(self, block: int) -> list[str]:
        """The entry hashes of block ``block``'s entries in the journal, as many as it has (all, unless the last)."""
        hashes = []
        for sequence in range(block * BLOCK + 1, (block + 1) * BLOCK + 1):
            raw = self._get_raw(JOURNAL, seq20(sequence).encode())
            if raw is None:
                break
            hashes.append(orjson.loads(raw)["entry_hash"])
        return hashes

    def _block(self, block: int) -> list[bytes]:
        """The leaf hashes of block ``block``'s entries, its full root checked against its stored node."""
        if block not in self._blocks:
            leaves = [journal_leaf_hash(entry_hash) for entry_hash in self.entry_hashes(block)]
            if len(leaves) == BLOCK and tree.perfect_root(leaves) != self._stored(STORED_FROM_LEVEL, block):
                raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{META}/{node_key(STORED_FROM_LEVEL, block).decode()} "
                                                              f"is not the root of its {BLOCK} journal entries")
            self._blocks[block] = leaves
        return self._blocks[block]


def empty_tree() -> JournalFrontier:
    return JournalFrontier(STORED_FROM_LEVEL)


def stage_append(stage: Stage, frontier: JournalFrontier, *entry_hashes: str) -> JournalFrontier:
    """Entries ``frontier.size + 1`` onwards appended; the nodes they complete (one block in ``BLOCK`` entries)
    staged."""
    after, completed = frontier.extend(entry_hashes)
    for level, index, node in completed:
        stage(META, node_key(level, index), node_value(node))
    return after


class BatchTree:
    """A batch's journal-tree upkeep: the entries its commands make join the tree together when the batch is
    staged (docs/adr/0067), or earlier, before a command that reads the tree, which must see them."""

    def __init__(self, frontier: JournalFrontier) -> None:
        self.frontier = frontier
        self._entries: list[str] = []

    def check_claim(self, payload: object, stage: Stage, get_raw: Callable[[str, bytes], bytes | None]) -> None:
        """``check_journal_claim`` over the tree with every entry of the batch so far."""
        if self._entries and names_journal_tree(payload):
            self.grow(stage)
        check_journal_claim(payload, get_raw, self.frontier)

    def add(self, head: Head) -> None:
        """Remember the entry at ``head`` if the command made one (a duplicate makes none)."""
        if head.sequence > self.frontier.size + len(self._entries):
            self._entries.append(head.entry_hash)

    def grow(self, stage: Stage) -> JournalFrontier:
        """Append the remembered entries and stage the nodes they complete; the tree after them."""
        self.frontier, self._entries = stage_append(stage, self.frontier, *self._entries), []
        return self.frontier


def appended_keys(sequence: int) -> list[bytes]:
    """The keys appending entry ``sequence`` writes: none, unless it fills a block (then that block's node and
    the nodes above it that it completes)."""
    keys, level = [], STORED_FROM_LEVEL
    while sequence % (1 << level) == 0:
        keys.append(node_key(level, (sequence >> level) - 1))
        level += 1
    return keys


def names_journal_tree(payload: object) -> TypeGuard[NamesJournalTree]:
    """Whether the payload names a journal tree (a commitment's), which ``check_journal_claim`` checks.

    Read from the model's fields (``vars``), not with ``getattr``: on a payload without the field, pydantic's
    ``__getattr__`` builds an AttributeError for the default to replace, about 4 µs twice for every command.
    """
    return vars(payload).get("journal_tree") is not None


def check_journal_claim(payload: object, get_raw: Callable[[str, bytes], bytes | None],
                        frontier: JournalFrontier) -> None:
    """A payload naming a journal tree (a commitment's) must name this journal's root at that size.

    Checked by the executor in command order, reading nodes through the group's pending writes, because
    rules read state and the tree is not state (docs/adr/0041). A refusal is not journalled.
    """
    if not names_journal_tree(payload):
        return
    claim = payload.journal_tree
    if claim.size > frontier.size:
        raise LedgerError(ErrorCode.CONFLICTING_EVIDENCE,
                          f"the journal has {frontier.size} entries, not the {claim.size} the commitment names")
    actual = tree.root_at(StoredNodes(get_raw), claim.size).hex()
    if actual != claim.root:
        raise LedgerError(ErrorCode.CONFLICTING_EVIDENCE,
                          f"the journal tree of {claim.size} entries has root {actual}, not {claim.root}")


def is_kept(store: RocksStore) -> bool:
    """Whether ``store`` holds a journal tree in this layout (else its owner builds one on opening)."""
    return store.get(META, LAYOUT_KEY) == LAYOUT


def open_tree(store: RocksStore, head: Head) -> JournalFrontier:
    """The journal tree's frontier at ``head``, checked; built from the journal when it was never kept here."""
    if not is_kept(store):
        return build_from_journal(store, head)
    return read_frontier(store, head)


def check_tree(store: RocksStore, head: Head) -> JournalFrontier:
    """``open_tree``'s checks, reading only: the stored tree's frontier, or, where no tree is kept, the one the
    journal makes, which must end at ``head``."""
    if is_kept(store):
        return read_frontier(store, head)
    frontier = empty_tree()
    for _, raw in store.scan(JOURNAL):
        frontier = stage_append(lambda family, key, value: None, frontier, orjson.loads(raw)["entry_hash"])
    _require_journal_at(frontier, head)
    return frontier


def read_frontier(store: RocksStore, head: Head) -> JournalFrontier:
    """The frontier from the stored nodes and the last block's entries; the tree must end where the journal does."""
    nodes = StoredNodes(store.get)
    full = head.sequence // BLOCK
    frontier = JournalFrontier(STORED_FROM_LEVEL, BlockFrontier.blocks_from_nodes(nodes, full, STORED_FROM_LEVEL),
                               tuple(nodes.entry_hashes(full))[:head.sequence - full * BLOCK])
    if full:
        nodes(0, full * BLOCK - 1)  # the last full block's entries must hash to its stored node
    if head.sequence and nodes(0, head.sequence - 1) != journal_leaf_hash(head.entry_hash):
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, "the journal tree's last leaf is not the chain head")
    if store.get(META, node_key(STORED_FROM_LEVEL, full)) is not None:
        raise StorageFault(ErrorCode.STORAGE_CORRUPT,
                           f"the journal tree has a block beyond the journal's {head.sequence} entries")
    return frontier


def build_from_journal(store: RocksStore, head: Head) -> JournalFrontier:
    """Build and store the tree over the whole journal (a ledger from before the tree or this layout, a loaded
    checkpoint), replacing whatever ``merkle/`` held."""
    _delete_stored_tree(store)
    frontier, ops = empty_tree(), []
    for _, raw in store.scan(JOURNAL):
        frontier = stage_append(lambda family, key, value: ops.append((family, key, value)), frontier,
                                orjson.loads(raw)["entry_hash"])
        if len(ops) >= CATCH_UP_CHUNK:
            store.write(ops)
            ops = []
    _require_journal_at(frontier, head)
    store.write([*ops, (META, LAYOUT_KEY, LAYOUT)])
    return frontier


def _require_journal_at(frontier: JournalFrontier, head: Head) -> None:
    if frontier.size != head.sequence:
        raise StorageFault(ErrorCode.STORAGE_CORRUPT,
                           f"the journal holds {frontier.size} entries but the head is at {head.sequence}")


def _delete_stored_tree(store: RocksStore) -> None:
    keys = (key for key, _ in store.scan(META, b"merkle/"))
    chunk = list(islice(keys, CATCH_UP_CHUNK))
    while chunk:
        store.write([(META, key, None) for key in chunk])
        chunk = list(islice(keys, CATCH_UP_CHUNK))


def stored_root(store: RocksStore, size: int) -> str:
    return tree.root_at(StoredNodes(store.get), size).hex()


def prove_inclusion(store: RocksStore, head: Head, sequence: int, at: int | None = None) -> Document:
    """``prove-inclusion``: entry ``sequence`` in the tree of ``at`` (default: every) entries, from stored nodes."""
    size = head.sequence if at is None else at
    if not 1 <= sequence <= size <= head.sequence:
        raise LedgerError(ErrorCode.NOT_FOUND, f"entry {sequence} is not in a journal tree of {size} "
                                               f"(the journal has {head.sequence} entries)")
    entry = store.get(JOURNAL, seq20(sequence).encode())
    if entry is None:
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{JOURNAL}/{seq20(sequence)} is missing")
    return inclusion_document(_reader(store, head), orjson.loads(entry)["entry_hash"], sequence, size)


def prove_consistency(store: RocksStore, head: Head, first: int, second: int) -> Document:
    """``prove-consistency``: the tree of ``first`` entries is a prefix of the one of ``second``."""
    if not 0 <= first <= second <= head.sequence:
        raise LedgerError(ErrorCode.NOT_FOUND, f"no proof from {first} to {second} entries "
                                               f"(the journal has {head.sequence} entries)")
    return consistency_document(_reader(store, head), first, second)


def _reader(store: RocksStore, head: Head) -> NodeReader:
    """The stored nodes once checked against the head; a stopped ledger from before the tree: its journal read whole."""
    if not is_kept(store):
        nodes: MemoryNodes = journal_nodes([orjson.loads(raw)["entry_hash"] for _, raw in store.scan(JOURNAL)])
        if nodes.size != head.sequence:
            raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"the journal holds {nodes.size} entries, the head {head.sequence}")
        return nodes
    read_frontier(store, head)
    return StoredNodes(store.get)

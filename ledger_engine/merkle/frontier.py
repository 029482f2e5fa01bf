"""The incremental tree: a compact frontier appended in O(log n), and the nodes it completes.

A frontier holds one hash per set bit of the tree's size: the roots of its
perfect subtrees, largest (leftmost) first. Appending a leaf merges equal-sized
subtrees as a binary counter carries, so an append costs one leaf of work plus
one node hash per carry (amortised one), and the root at the current size is a
fold of at most log2(n) hashes.

Each append also reports the perfect-subtree nodes it completed; a store that
keeps them (and the leaf hashes) can answer ``NodeReader`` and so prove
inclusion and consistency at any size (``tree.inclusion_proof`` and friends).

Persisted as canonical JSON ``{"size": n, "hashes": [hex, ...]}``; loading
checks that the number of hashes matches the size.

``BlockFrontier`` is the same tree for a store that keeps only the nodes from
a block level up: the leaves of the block being filled wait in a tuple and are
hashed into the block's root when it fills, so an append costs no node object
and reports nodes only once per block (docs/adr/0057).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, Self, Sequence, TypeVar

from ledger_engine.merkle.tree import (
    EMPTY_ROOT, HASH_BYTES, NodeReader, fold_right, node_hash, perfect_pieces, perfect_root,
)
from ledger_engine.open_json import Document

MAX_SIZE = 2**53 - 1  # sizes travel as JSON safe integers
_HEX_HASH = re.compile(r"[0-9a-f]{64}")
Leaf = TypeVar("Leaf")


class Node(NamedTuple):
    """A perfect subtree's root: leaves ``[index << level, (index + 1) << level)``."""

    level: int
    index: int  # type: ignore[assignment]  # the tree's name for a position; shadows tuple.index
    hash: bytes


@dataclass(frozen=True, slots=True)
class Frontier:
    size: int = 0
    hashes: tuple[bytes, ...] = ()

    def __post_init__(self) -> None:
        if type(self.size) is not int or not 0 <= self.size <= MAX_SIZE:
            raise ValueError(f"a tree size is an integer from 0 to {MAX_SIZE}, not {self.size!r}")
        if len(self.hashes) != self.size.bit_count():
            raise ValueError(f"a tree of {self.size} has {self.size.bit_count()} frontier hashes, not {len(self.hashes)}")
        if any(type(h) is not bytes or len(h) != HASH_BYTES for h in self.hashes):
            raise ValueError(f"frontier hashes are {HASH_BYTES} bytes each")

    def append(self, leaf: bytes) -> tuple["Frontier", tuple[Node, ...]]:
        """The frontier one leaf later, and the nodes above level 0 that the leaf completed, lowest first."""
        assert type(leaf) is bytes and len(leaf) == HASH_BYTES, "append a leaf hash, not leaf data"
        hashes = list(self.hashes)
        completed = []
        carry, node, level, index = self.size, leaf, 0, self.size
        while carry & 1:
            node = node_hash(hashes.pop(), node)
            carry, level, index = carry >> 1, level + 1, index >> 1
            completed.append(Node(level, index, node))
        hashes.append(node)
        return Frontier._grown(self.size + 1, tuple(hashes)), tuple(completed)

    @classmethod
    def _grown(cls, size: int, hashes: tuple[bytes, ...]) -> "Frontier":
        """A frontier ``append`` built from a checked one: only the count is asserted, not each hash again."""
        assert len(hashes) == size.bit_count() and size <= MAX_SIZE, (size, len(hashes))
        frontier = object.__new__(cls)
        object.__setattr__(frontier, "size", size)
        object.__setattr__(frontier, "hashes", hashes)
        return frontier

    def root(self) -> bytes:
        return fold_right(self.hashes) if self.hashes else EMPTY_ROOT

    def as_json(self) -> Document:
        return {"size": self.size, "hashes": [h.hex() for h in self.hashes]}

    @classmethod
    def from_json(cls, value: Any) -> "Frontier":
        if type(value) is not dict or set(value) != {"size", "hashes"} or type(value["hashes"]) is not list:
            raise ValueError('a frontier is {"size": n, "hashes": [hex, ...]}')
        if not all(type(h) is str and _HEX_HASH.fullmatch(h) for h in value["hashes"]):
            raise ValueError("frontier hashes are 64 lowercase hex digits")
        return cls(value["size"], tuple(bytes.fromhex(h) for h in value["hashes"]))

    @classmethod
    def from_nodes(cls, nodes: NodeReader, size: int) -> "Frontier":
        """The frontier of the tree's first ``size`` leaves, read from its stored nodes."""
        return cls(size, tuple(nodes(level, index) for level, index in perfect_pieces(0, size)))


class BlockFrontier(Generic[Leaf]):
    """A growing tree whose appends report only the nodes at ``block_level`` and above.

    ``blocks`` is the frontier of the full blocks' roots (a tree whose leaves are
    the level-``block_level`` nodes, so its node ``(l, i)`` is the tree's
    ``(l + block_level, i)``); ``tail`` holds the leaves of the block being
    filled, unhashed: ``leaf_hash`` makes them leaf hashes when the block fills
    (or a root is asked for), in one burst. Here a leaf is already its hash;
    ``JournalFrontier`` appends entry hashes. Immutable: an append returns a new
    one, so a discarded group leaves the last committed one as it was.
    """

    __slots__ = ("size", "blocks", "tail", "block_level")

    def __init__(self, block_level: int, blocks: Frontier = Frontier(), tail: tuple[Leaf, ...] = ()) -> None:
        self.block_level = block_level
        self.blocks = blocks
        self.tail = tail
        self.size = (blocks.size << block_level) + len(tail)

    @staticmethod
    def leaf_hash(leaf: Leaf) -> bytes:
        assert isinstance(leaf, bytes), "append leaf hashes, not leaf data"
        return leaf

    def append(self, leaf: Leaf) -> tuple[Self, tuple[Node, ...]]:
        """The tree one leaf later, and the nodes from ``block_level`` up that the leaf completed, lowest first."""
        return self.extend((leaf,))

    def extend(self, leaves: Sequence[Leaf]) -> tuple[Self, tuple[Node, ...]]:
        """The tree ``len(leaves)`` leaves later, and the nodes from ``block_level`` up they completed, lowest
        first: one new frontier however many leaves, so a group of commits makes one."""
        shift, width = self.block_level, 1 << self.block_level
        blocks, tail, taken = self.blocks, self.tail, 0
        completed: list[Node] = []
        while taken < len(leaves):
            room = width - len(tail)
            tail, taken = (*tail, *leaves[taken:taken + room]), taken + room
            if len(tail) == width:
                block = perfect_root(self._tail_hashes(tail))
                completed.append(Node(shift, blocks.size, block))
                blocks, above = blocks.append(block)
                completed.extend(Node(node.level + shift, node.index, node.hash) for node in above)
                tail = ()
        return type(self)(shift, blocks, tail), tuple(completed)

    def _tail_hashes(self, tail: tuple[Leaf, ...]) -> list[bytes]:
        hashes = [self.leaf_hash(leaf) for leaf in tail]
        assert all(type(h) is bytes and len(h) == HASH_BYTES for h in hashes), "append leaf hashes, not leaf data"
        return hashes

    def frontier(self) -> Frontier:
        """The same tree's compact frontier: the full blocks' pieces, then the tail's perfect pieces."""
        tail = self._tail_hashes(self.tail)
        pieces = [perfect_root(tail[index << level:(index + 1) << level])
                  for level, index in perfect_pieces(0, len(tail))]
        return Frontier(self.size, (*self.blocks.hashes, *pieces))

    def root(self) -> bytes:
        return self.frontier().root()

    @staticmethod
    def blocks_from_nodes(nodes: NodeReader, blocks: int, block_level: int) -> Frontier:
        """The frontier of the first ``blocks`` full blocks' roots, read from the tree's nodes."""
        return Frontier.from_nodes(lambda level, index: nodes(level + block_level, index), blocks)

    @staticmethod
    def from_nodes(nodes: NodeReader, size: int, block_level: int) -> "BlockFrontier[bytes]":
        """The tree of the first ``size`` leaf hashes: its blocks' frontier and its tail's leaves, from the nodes."""
        full = size >> block_level
        return BlockFrontier(block_level, BlockFrontier.blocks_from_nodes(nodes, full, block_level),
                             tuple(nodes(0, leaf) for leaf in range(full << block_level, size)))


class MemoryNodes:
    """Every leaf hash and perfect-subtree node of a tree, in one list per level: a ``NodeReader``.

    For trees built whole (a statement index), for tests, and as the model of
    what a persistent node store keeps: level 0 is the leaf hashes, level l the
    nodes each append reported.
    """

    def __init__(self) -> None:
        self.frontier = Frontier()
        self.levels: list[list[bytes]] = [[]]

    @classmethod
    def from_leaf_hashes(cls, leaves: Sequence[bytes]) -> "MemoryNodes":
        nodes = cls()
        for leaf in leaves:
            nodes.append(leaf)
        return nodes

    @property
    def size(self) -> int:
        return self.frontier.size

    def append(self, leaf: bytes) -> None:
        self.frontier, completed = self.frontier.append(leaf)
        self.levels[0].append(leaf)
        for node in completed:
            if node.level == len(self.levels):
                self.levels.append([])
            assert len(self.levels[node.level]) == node.index
            self.levels[node.level].append(node.hash)

    def __call__(self, level: int, index: int) -> bytes:
        return self.levels[level][index]

    def root(self) -> bytes:
        return self.frontier.root()

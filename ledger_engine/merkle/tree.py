"""Merkle trees exactly as RFC 9162 section 2.1 defines them, over SHA-256. Pure: hashlib only.

Hashes (2.1.1): a leaf is ``SHA-256(0x00 || data)``, an interior node
``SHA-256(0x01 || left || right)``, the empty tree ``SHA-256()``. A tree of n > 1
leaves splits at k, the largest power of two smaller than n: ``D[0:k]`` on the
left, ``D[k:n]`` on the right.

Proofs are generated from *perfect subtrees*: node ``(level, index)`` is the
root of the 2**level leaves starting at ``index * 2**level``. Any store that
can answer a ``NodeReader`` (a database of nodes, leaf hashes in memory, or a
function that computes them) can prove, and proving reads O(log n) nodes.

Verification follows RFC 9162 2.1.3.2 (inclusion) and 2.1.4.2 (consistency)
step by step. Before running them, the proof's length is checked against the
exact length the index and sizes imply, so no proof element is ever left
unchecked (the class of bug in immudb's GHSA-672p-m5jq-mrh8: a verifier that
checked only the ends of what it was given).
"""

from __future__ import annotations

import hashlib
from typing import Callable, Sequence

HASH_BYTES = 32
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()

NodeReader = Callable[[int, int], bytes]
"""``nodes(level, index)``: the root of leaves ``[index << level, (index + 1) << level)``; level 0 is a leaf hash."""


class ProofError(ValueError):
    """A proof that does not hold. ``reason`` is a stable code, ``detail`` says why in words."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


# Stable reasons (documented in docs/merkle.md; spellings never change).
INDEX_OUT_OF_RANGE = "INDEX_OUT_OF_RANGE"
SIZE_ORDER = "SIZE_ORDER"
PROOF_LENGTH = "PROOF_LENGTH"
INVALID_HASH = "INVALID_HASH"
ROOT_MISMATCH = "ROOT_MISMATCH"
FIRST_ROOT_MISMATCH = "FIRST_ROOT_MISMATCH"
SECOND_ROOT_MISMATCH = "SECOND_ROOT_MISMATCH"


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def split_point(size: int) -> int:
    """k, the largest power of two smaller than ``size`` (RFC 9162 2.1.1), for size > 1."""
    assert size > 1, size
    return 1 << ((size - 1).bit_length() - 1)


def perfect_pieces(start: int, end: int) -> list[tuple[int, int]]:
    """``[start, end)`` as perfect subtrees ``(level, index)``, left to right, largest first.

    For the subtrees the RFC recursion reaches (and for every prefix of the tree),
    these are exactly the left spines of its splits.
    """
    pieces = []
    while start < end:
        level = (end - start).bit_length() - 1
        assert start % (1 << level) == 0, f"[{start}, {end}) is not a subtree of an RFC 9162 tree"
        pieces.append((level, start >> level))
        start += 1 << level
    return pieces


def fold_right(hashes: Sequence[bytes]) -> bytes:
    """The root over perfect-subtree roots listed left to right, largest first."""
    assert hashes, "an empty tree has no pieces"
    root = hashes[-1]
    for left in reversed(hashes[:-1]):
        root = node_hash(left, root)
    return root


def perfect_root(hashes: Sequence[bytes]) -> bytes:
    """The root over 2**k consecutive nodes of one level (leaf hashes: a perfect subtree's root)."""
    assert hashes and len(hashes) & (len(hashes) - 1) == 0, f"{len(hashes)} is not a power of two"
    level, sha256 = list(hashes), hashlib.sha256  # node_hash inlined: this runs once per block on every commit
    while len(level) > 1:
        level = [sha256(NODE_PREFIX + level[i] + level[i + 1]).digest() for i in range(0, len(level), 2)]
    return level[0]


def subtree_root(nodes: NodeReader, start: int, end: int) -> bytes:
    """MTH(D[start:end]) from perfect-subtree nodes: O(log n) reads."""
    return fold_right([nodes(level, index) for level, index in perfect_pieces(start, end)])


def root_at(nodes: NodeReader, size: int) -> bytes:
    """MTH(D[0:size]): the root the tree had when it held ``size`` leaves."""
    return subtree_root(nodes, 0, size) if size else EMPTY_ROOT


def inclusion_proof(nodes: NodeReader, index: int, size: int) -> list[bytes]:
    """PATH(index, D[0:size]) (RFC 9162 2.1.3.1), deepest sibling first."""
    if not 0 <= index < size:
        raise ProofError(INDEX_OUT_OF_RANGE, f"leaf {index} is not in a tree of {size}")
    siblings = []
    start, end = 0, size
    while end - start > 1:
        middle = start + split_point(end - start)
        if index < middle:
            siblings.append(subtree_root(nodes, middle, end))
            end = middle
        else:
            siblings.append(subtree_root(nodes, start, middle))
            start = middle
    siblings.reverse()
    assert len(siblings) == inclusion_path_length(index, size)
    return siblings


def consistency_proof(nodes: NodeReader, first: int, second: int) -> list[bytes]:
    """PROOF(first, D[0:second]) (RFC 9162 2.1.4.1); empty when first is 0 or equals second."""
    if not 0 <= first <= second:
        raise ProofError(SIZE_ORDER, f"cannot prove a tree of {first} is a prefix of a tree of {second}")
    if first in (0, second):
        return []
    proof = []
    start, end, whole_old_tree = 0, second, True  # the RFC's SUBPROOF flag b
    while first != end:
        middle = start + split_point(end - start)
        if first <= middle:
            proof.append(subtree_root(nodes, middle, end))
            end = middle
        else:
            proof.append(subtree_root(nodes, start, middle))
            start, whole_old_tree = middle, False
    if not whole_old_tree:
        proof.append(subtree_root(nodes, start, end))
    proof.reverse()
    assert len(proof) == consistency_path_length(first, second)
    return proof


def inclusion_path_length(index: int, size: int) -> int:
    """How many hashes PATH(index, D[0:size]) has: the inner part below the split, then the border."""
    assert 0 <= index < size
    inner = (index ^ (size - 1)).bit_length()
    return inner + (index >> inner).bit_count()


def consistency_path_length(first: int, second: int) -> int:
    """How many hashes PROOF(first, D[0:second]) has, for 0 < first < second."""
    assert 0 < first < second
    shift = (first & -first).bit_length() - 1  # trailing zero bits of first
    inner = ((first - 1) ^ (second - 1)).bit_length()
    border = ((first - 1) >> inner).bit_count()
    seed = 0 if first == 1 << shift else 1  # a perfect old tree is its own root, which the proof omits
    return seed + inner - shift + border


def _require_hashes(hashes: Sequence[bytes], what: str) -> None:
    for position, value in enumerate(hashes):
        if type(value) is not bytes or len(value) != HASH_BYTES:
            raise ProofError(INVALID_HASH, f"{what}[{position}] is not a {HASH_BYTES}-byte hash")


def _require_hash(value: bytes, what: str) -> None:
    if type(value) is not bytes or len(value) != HASH_BYTES:
        raise ProofError(INVALID_HASH, f"{what} is not a {HASH_BYTES}-byte hash")


def verify_inclusion(leaf: bytes, index: int, size: int, path: Sequence[bytes], root: bytes) -> None:
    """RFC 9162 2.1.3.2: ``leaf`` is leaf ``index`` of the tree of ``size`` leaves whose root is ``root``.

    Raises ProofError, else returns None.
    """
    _require_hash(leaf, "leaf hash")
    _require_hash(root, "root")
    _require_hashes(path, "path")
    if not 0 <= index < size:
        raise ProofError(INDEX_OUT_OF_RANGE, f"leaf {index} is not in a tree of {size}")
    expected = inclusion_path_length(index, size)
    if len(path) != expected:
        raise ProofError(PROOF_LENGTH, f"the path has {len(path)} hashes; leaf {index} of a tree of {size} needs {expected}")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise ProofError(PROOF_LENGTH, "the path is longer than the tree is high")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError(PROOF_LENGTH, "the path ends below the root")
    if r != root:
        raise ProofError(ROOT_MISMATCH, "the path does not lead to the root")


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes,
                       path: Sequence[bytes]) -> None:
    """RFC 9162 2.1.4.2: the tree of ``first`` leaves is a prefix of the tree of ``second`` leaves.

    Sizes the RFC leaves out are decided strictly: from the empty tree the proof is
    empty and the first root is the empty tree's; between equal sizes the proof is
    empty and the roots are equal. Raises ProofError, else returns None.
    """
    _require_hash(first_root, "first root")
    _require_hash(second_root, "second root")
    _require_hashes(path, "path")
    if not 0 <= first <= second:
        raise ProofError(SIZE_ORDER, f"a tree of {second} cannot extend a tree of {first}")
    if first in (0, second):
        _verify_trivial_consistency(first, first_root, second_root, path)
        return
    expected = consistency_path_length(first, second)
    if len(path) != expected:
        raise ProofError(PROOF_LENGTH, f"the proof has {len(path)} hashes; from {first} to {second} needs {expected}")
    if first & (first - 1) == 0:
        path = [first_root, *path]
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError(PROOF_LENGTH, "the proof is longer than the tree is high")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError(PROOF_LENGTH, "the proof ends below the root")
    if fr != first_root:
        raise ProofError(FIRST_ROOT_MISMATCH, f"the proof does not lead to the root of the tree of {first}")
    if sr != second_root:
        raise ProofError(SECOND_ROOT_MISMATCH, f"the proof does not lead to the root of the tree of {second}")


def _verify_trivial_consistency(first: int, first_root: bytes, second_root: bytes, path: Sequence[bytes]) -> None:
    if path:
        raise ProofError(PROOF_LENGTH, f"the proof has {len(path)} hashes; from {first} it needs none")
    if first == 0 and first_root != EMPTY_ROOT:
        raise ProofError(FIRST_ROOT_MISMATCH, "the first root is not the empty tree's")
    if first != 0 and first_root != second_root:
        raise ProofError(SECOND_ROOT_MISMATCH, "trees of the same size with different roots")

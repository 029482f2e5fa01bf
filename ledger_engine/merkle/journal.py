"""The journal tree: leaf ``sequence - 1`` is the 32 bytes of entry ``sequence``'s hash.

A tree of size n commits entries 1..n, so its root at the checkpoint sequence
stands beside the chain head (entry n's hash, which is its last leaf). Two
proof documents, each verifiable without a ledger:

- inclusion: ``{"version": INCLUSION_VERSION, "sequence", "entry_hash", "tree_size", "path", "root"}``
- consistency: ``{"version": CONSISTENCY_VERSION, "first_size", "first_root", "second_size", "second_root", "path"}``

Hashes are lowercase hex; paths are RFC 9162 order (deepest sibling first).
A verified document proves its claim against the root it carries: that root
is worth trusting only when it matches one held independently (an anchored
batch, a verified checkpoint).
"""

from __future__ import annotations

from typing import Sequence

from ledger_engine.merkle import tree
from ledger_engine.merkle.document import (
    Reason, read_count, read_document, read_hash, read_hashes, reject, rejected_proof, require_fields, require_version,
)
from ledger_engine.merkle.frontier import BlockFrontier, MemoryNodes
from ledger_engine.merkle.tree import NodeReader
from ledger_engine.open_json import Document, Report

INCLUSION_VERSION = "porto:london:journal-inclusion:v1"
CONSISTENCY_VERSION = "porto:london:journal-consistency:v1"
INCLUSION_FIELDS = ("version", "sequence", "entry_hash", "tree_size", "path", "root")
CONSISTENCY_FIELDS = ("version", "first_size", "first_root", "second_size", "second_root", "path")


def journal_leaf_hash(entry_hash: str) -> bytes:
    """The leaf hash of one journal entry, from its entry hash in hex."""
    raw = bytes.fromhex(entry_hash)
    assert len(raw) == tree.HASH_BYTES, entry_hash
    return tree.leaf_hash(raw)


class JournalFrontier(BlockFrontier[str]):
    """A ``BlockFrontier`` appended entry hashes (hex): a commit only keeps each one, and its block's leaf
    hashes are made together when the block fills."""

    __slots__ = ()

    @staticmethod
    def leaf_hash(leaf: str) -> bytes:
        return journal_leaf_hash(leaf)


def journal_nodes(entry_hashes: Sequence[str]) -> MemoryNodes:
    """The whole tree over entries 1..n, for a journal read into memory."""
    return MemoryNodes.from_leaf_hashes([journal_leaf_hash(h) for h in entry_hashes])


def inclusion_document(nodes: NodeReader, entry_hash: str, sequence: int, tree_size: int) -> Document:
    """Entry ``sequence`` (whose hash is ``entry_hash``) is in the journal tree of ``tree_size`` entries."""
    assert 1 <= sequence <= tree_size, (sequence, tree_size)
    assert nodes(0, sequence - 1) == journal_leaf_hash(entry_hash), "the entry hash is not the stored leaf"
    return {
        "version": INCLUSION_VERSION,
        "sequence": sequence,
        "entry_hash": entry_hash,
        "tree_size": tree_size,
        "path": [h.hex() for h in tree.inclusion_proof(nodes, sequence - 1, tree_size)],
        "root": tree.root_at(nodes, tree_size).hex(),
    }


def consistency_document(nodes: NodeReader, first_size: int, second_size: int) -> Document:
    """The journal tree of ``first_size`` entries is a prefix of the one of ``second_size``."""
    return {
        "version": CONSISTENCY_VERSION,
        "first_size": first_size,
        "first_root": tree.root_at(nodes, first_size).hex(),
        "second_size": second_size,
        "second_root": tree.root_at(nodes, second_size).hex(),
        "path": [h.hex() for h in tree.consistency_proof(nodes, first_size, second_size)],
    }


def prove_inclusion(entry_hashes: Sequence[str], sequence: int, at: int | None = None) -> Document:
    """``prove-inclusion SEQUENCE [--at N]`` over entry hashes 1..n listed in order (n is the default N)."""
    tree_size = len(entry_hashes) if at is None else at
    if not 1 <= sequence <= tree_size <= len(entry_hashes):
        reject(Reason.INDEX_OUT_OF_RANGE, "sequence",
               f"entry {sequence} is not in a journal tree of {tree_size} (the journal has {len(entry_hashes)})")
    return inclusion_document(journal_nodes(entry_hashes[:tree_size]), entry_hashes[sequence - 1], sequence, tree_size)


def prove_consistency(entry_hashes: Sequence[str], first_size: int, second_size: int) -> Document:
    """``prove-consistency M N`` over entry hashes 1..n listed in order."""
    if not 0 <= first_size <= second_size <= len(entry_hashes):
        reject(Reason.SIZE_ORDER, "first_size",
               f"no proof from {first_size} to {second_size} entries (the journal has {len(entry_hashes)})")
    return consistency_document(journal_nodes(entry_hashes[:second_size]), first_size, second_size)


def verify_proof_document(raw: bytes | Document) -> Report:
    """Check a journal inclusion or consistency document; the verdict, or ProofRejected naming what failed."""
    document = read_document(raw)
    version = require_version(document, (INCLUSION_VERSION, CONSISTENCY_VERSION))
    if version == INCLUSION_VERSION:
        return _verify_inclusion(document)
    return _verify_consistency(document)


def _verify_inclusion(document: Document) -> Report:
    require_fields(document, INCLUSION_FIELDS)
    sequence = read_count(document, "sequence", 1)
    entry_hash = read_hash(document, "entry_hash")
    tree_size = read_count(document, "tree_size", 1)
    path = read_hashes(document, "path")
    root = read_hash(document, "root")
    try:
        tree.verify_inclusion(tree.leaf_hash(entry_hash), sequence - 1, tree_size, path, root)
    except tree.ProofError as error:
        raise rejected_proof(error, {Reason.INDEX_OUT_OF_RANGE: "sequence", Reason.PROOF_LENGTH: "path",
                                     Reason.ROOT_MISMATCH: "root"}) from None
    return {"ok": True, "proof": "inclusion", "sequence": sequence, "entry_hash": document["entry_hash"],
            "tree_size": tree_size, "root": document["root"],
            "trust": "the root must equal one you hold from an anchored batch or a verified checkpoint"}


def _verify_consistency(document: Document) -> Report:
    require_fields(document, CONSISTENCY_FIELDS)
    first_size = read_count(document, "first_size", 0)
    first_root = read_hash(document, "first_root")
    second_size = read_count(document, "second_size", 0)
    second_root = read_hash(document, "second_root")
    path = read_hashes(document, "path")
    try:
        tree.verify_consistency(first_size, second_size, first_root, second_root, path)
    except tree.ProofError as error:
        raise rejected_proof(error, {Reason.SIZE_ORDER: "second_size", Reason.PROOF_LENGTH: "path",
                                     Reason.FIRST_ROOT_MISMATCH: "first_root",
                                     Reason.SECOND_ROOT_MISMATCH: "second_root"}) from None
    return {"ok": True, "proof": "consistency", "first_size": first_size, "first_root": document["first_root"],
            "second_size": second_size, "second_root": document["second_root"],
            "trust": "the first root must be one you already trusted; the second is then its extension"}

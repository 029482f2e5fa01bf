"""The tree against RFC 9162's well-known 8-leaf test tree (certificate-transparency, transparency-dev/merkle)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger_engine.merkle import tree
from ledger_engine.merkle.frontier import Frontier, MemoryNodes

VECTORS = json.loads((Path(__file__).parent / "vectors" / "rfc9162_tree.json").read_bytes())
LEAVES = [bytes.fromhex(data) for data in VECTORS["leaf_inputs"]]


def h(hex_hashes: list[str]) -> list[bytes]:
    return [bytes.fromhex(value) for value in hex_hashes]


@pytest.fixture(scope="module")
def nodes() -> MemoryNodes:
    return MemoryNodes.from_leaf_hashes([tree.leaf_hash(data) for data in LEAVES])


def test_the_empty_tree_hashes_to_sha256_of_nothing():
    assert tree.EMPTY_ROOT.hex() == VECTORS["roots"][0]
    assert Frontier().root().hex() == VECTORS["roots"][0]


def test_every_prefix_of_the_tree_has_its_published_root(nodes):
    assert [tree.root_at(nodes, size).hex() for size in range(len(LEAVES) + 1)] == VECTORS["roots"]


def test_every_perfect_subtree_has_its_published_node_hash(nodes):
    assert [[node.hex() for node in level] for level in nodes.levels] == VECTORS["node_hashes"]


def test_the_frontier_after_each_append_is_the_published_compact_tree():
    frontier = Frontier()
    compact = [[h.hex() for h in frontier.hashes]]
    for data in LEAVES:
        frontier, _ = frontier.append(tree.leaf_hash(data))
        compact.append([h.hex() for h in frontier.hashes])
    assert compact == VECTORS["compact_trees"]


@pytest.mark.parametrize("vector", VECTORS["inclusion_proofs"], ids=lambda v: f"leaf{v['leaf_index']}-of-{v['tree_size']}")
def test_published_inclusion_proofs_are_generated_and_verify(nodes, vector):
    index, size = vector["leaf_index"], vector["tree_size"]
    assert [p.hex() for p in tree.inclusion_proof(nodes, index, size)] == vector["path"]
    tree.verify_inclusion(tree.leaf_hash(LEAVES[index]), index, size, h(vector["path"]), h(VECTORS["roots"])[size])


@pytest.mark.parametrize("vector", VECTORS["consistency_proofs"],
                         ids=lambda v: f"{v['first_size']}-to-{v['second_size']}")
def test_published_consistency_proofs_are_generated_and_verify(nodes, vector):
    first, second = vector["first_size"], vector["second_size"]
    roots = h(VECTORS["roots"])
    assert [p.hex() for p in tree.consistency_proof(nodes, first, second)] == vector["path"]
    tree.verify_consistency(first, second, roots[first], roots[second], h(vector["path"]))


@pytest.mark.parametrize(("first", "second", "first_root", "second_root", "path", "reason"), [
    (0, 0, tree.EMPTY_ROOT, tree.EMPTY_ROOT, [], None),
    (0, 5, tree.EMPTY_ROOT, b"\x07" * 32, [], None),
    (0, 5, b"\x01" * 32, b"\x07" * 32, [], tree.FIRST_ROOT_MISMATCH),  # stricter than Go: the empty tree has one root
    (0, 1, tree.EMPTY_ROOT, tree.EMPTY_ROOT, [tree.EMPTY_ROOT], tree.PROOF_LENGTH),
    (1, 1, b"\x02" * 32, b"\x02" * 32, [], None),
    (1, 1, b"\x02" * 32, b"\x03" * 32, [], tree.SECOND_ROOT_MISMATCH),
    (1, 1, b"\x02" * 32, b"\x02" * 32, [b"\x02" * 32], tree.PROOF_LENGTH),
    (2, 1, b"\x02" * 32, b"\x03" * 32, [], tree.SIZE_ORDER),
    (1, 2, b"\x02" * 32, b"\x03" * 32, [], tree.PROOF_LENGTH),
])
def test_the_edge_cases_the_go_verifier_tests(first, second, first_root, second_root, path, reason):
    if reason is None:
        tree.verify_consistency(first, second, first_root, second_root, path)
        return
    with pytest.raises(tree.ProofError) as refused:
        tree.verify_consistency(first, second, first_root, second_root, path)
    assert refused.value.reason == reason


@pytest.mark.parametrize(("index", "size"), [(0, 0), (1, 0), (1, 1), (2, 1)])
def test_an_index_outside_the_tree_is_refused(index, size):
    with pytest.raises(tree.ProofError) as refused:
        tree.verify_inclusion(b"\x05" * 32, index, size, [], tree.EMPTY_ROOT)
    assert refused.value.reason == tree.INDEX_OUT_OF_RANGE


def test_a_hash_of_the_wrong_length_is_refused_wherever_it_is():
    good = b"\x05" * 32
    for leaf, path, root in ((b"", [], good), (good, [], b"short"), (good, [good[:31]], good)):
        with pytest.raises(tree.ProofError) as refused:
            tree.verify_inclusion(leaf, 0, 2, path, root)
        assert refused.value.reason == tree.INVALID_HASH

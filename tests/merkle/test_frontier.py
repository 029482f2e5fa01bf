"""The frontier: one hash per set bit of the size, appended in O(log n), persisted as canonical JSON."""

from __future__ import annotations

import hashlib

import pytest

from ledger_engine.canonical import canonical_bytes, parse_json
from ledger_engine.merkle import tree
from ledger_engine.merkle.frontier import BlockFrontier, Frontier, MemoryNodes, Node
from tests.merkle import oracle

DATA = [b"entry %d" % number for number in range(300)]
LEAVES = [tree.leaf_hash(data) for data in DATA]


def test_the_frontier_root_at_every_size_is_the_rfc_root():
    frontier = Frontier()
    for size, leaf in enumerate(LEAVES, start=1):
        frontier, _ = frontier.append(leaf)
        assert frontier.size == size
        assert len(frontier.hashes) == bin(size).count("1")
        assert frontier.root() == oracle.mth(DATA[:size]), size


def test_each_append_reports_exactly_the_perfect_subtrees_it_completes():
    frontier, reported = Frontier(), []
    for leaf in LEAVES:
        frontier, completed = frontier.append(leaf)
        assert [node.level for node in completed] == list(range(1, len(completed) + 1))
        reported.extend(completed)
    for level, index, hash_ in reported:
        width = 1 << level
        assert hash_ == oracle.mth(DATA[index * width:(index + 1) * width])
    expected = {(level, index) for level in range(1, 9) for index in range(len(LEAVES) >> level)}
    assert {(node.level, node.index) for node in reported} == expected


def test_appending_is_amortised_one_node_hash_per_leaf():
    frontier, completed_total = Frontier(), 0
    for leaf in LEAVES:
        frontier, completed = frontier.append(leaf)
        completed_total += len(completed)
    assert completed_total == len(LEAVES) - bin(len(LEAVES)).count("1")


def test_a_frontier_survives_its_canonical_json_and_can_be_rebuilt_from_stored_nodes():
    nodes = MemoryNodes.from_leaf_hashes(LEAVES)
    for size in (0, 1, 2, 3, 7, 64, 255, 300):
        frontier = Frontier.from_nodes(nodes, size)
        stored = canonical_bytes(frontier.as_json())
        assert Frontier.from_json(parse_json(stored)) == frontier
        assert frontier.root() == tree.root_at(nodes, size)
    assert Frontier.from_nodes(nodes, 300) == nodes.frontier


def test_appending_leaves_the_earlier_frontier_unchanged():
    first, _ = Frontier().append(LEAVES[0])
    second, _ = first.append(LEAVES[1])
    assert (first.size, first.hashes) == (1, (LEAVES[0],))
    assert second.hashes == (tree.node_hash(LEAVES[0], LEAVES[1]),)


GOOD = Frontier.from_nodes(MemoryNodes.from_leaf_hashes(LEAVES[:5]), 5).as_json()


@pytest.mark.parametrize("stored", [
    {**GOOD, "size": 7},                                   # 7 has three set bits, the two hashes are 5's
    {**GOOD, "size": 4},
    {**GOOD, "size": True},
    {**GOOD, "size": -1},
    {**GOOD, "size": 2**53},
    {**GOOD, "hashes": [GOOD["hashes"][0].upper(), GOOD["hashes"][1]]},
    {**GOOD, "hashes": [GOOD["hashes"][0][:62], GOOD["hashes"][1]]},
    {**GOOD, "hashes": GOOD["hashes"][0]},
    {**GOOD, "root": "00" * 32},
    {"size": 5},
    [5, GOOD["hashes"]],
], ids=["size-7", "size-4", "bool", "negative", "unsafe", "uppercase", "short", "not-a-list", "extra-key", "no-hashes",
        "not-an-object"])
def test_a_damaged_stored_frontier_is_refused(stored):
    with pytest.raises(ValueError):
        Frontier.from_json(stored)


def test_a_stored_frontier_that_lies_about_its_size_is_caught_against_the_stored_nodes():
    """Sizes 5 and 6 both have two set bits: only the nodes (or a root held elsewhere) tell them apart."""
    nodes = MemoryNodes.from_leaf_hashes(LEAVES[:6])
    lying = Frontier.from_json({**GOOD, "size": 6})
    assert Frontier.from_nodes(nodes, 6) != lying
    assert lying.root() != tree.root_at(nodes, 6)


def test_a_frontier_holds_hashes_not_leaf_data():
    with pytest.raises(AssertionError):
        Frontier().append(b"entry 1")
    with pytest.raises(ValueError):
        Frontier(1, (hashlib.sha256(b"x").digest()[:31],))


def test_node_is_a_plain_record():
    node = Node(2, 1, LEAVES[0])
    assert (node.level, node.index, node.hash) == (2, 1, LEAVES[0])


@pytest.mark.parametrize("block_level", [0, 1, 4])
def test_a_block_frontier_is_the_rfc_tree_and_reports_exactly_the_nodes_from_its_block_level_up(block_level):
    frontier, reported, plain = BlockFrontier(block_level), [], Frontier()
    for size, leaf in enumerate(LEAVES, start=1):
        frontier, completed = frontier.append(leaf)
        plain, _ = plain.append(leaf)
        assert (frontier.size, frontier.frontier(), frontier.root()) == (size, plain, oracle.mth(DATA[:size]))
        reported.extend(completed)
    for level, index, hash_ in reported:
        width = 1 << level
        assert hash_ == oracle.mth(DATA[index * width:(index + 1) * width])
    expected = [(level, index) for index in range(len(LEAVES)) for level in range(block_level, 9)
                if (index + 1) << level <= len(LEAVES)]
    assert sorted((node.level, node.index) for node in reported) == sorted(expected)
    assert [n.level for n in reported if n.level == block_level] == [block_level] * (len(LEAVES) >> block_level)


def test_a_block_frontier_is_read_back_from_its_nodes_and_its_tail_leaves():
    nodes = MemoryNodes.from_leaf_hashes(LEAVES)
    for size in (0, 1, 15, 16, 17, 255, 256, 300):
        read = BlockFrontier.from_nodes(nodes, size, 4)
        assert (read.size, len(read.tail), read.root()) == (size, size % 16, tree.root_at(nodes, size))


def test_appending_to_a_block_frontier_leaves_the_earlier_one_unchanged():
    first, _ = BlockFrontier(4).append(LEAVES[0])
    second, _ = first.append(LEAVES[1])
    assert (first.size, first.tail, second.tail) == (1, (LEAVES[0],), (LEAVES[0], LEAVES[1]))


def test_a_block_frontier_holds_hashes_not_leaf_data():
    frontier = BlockFrontier(1)
    frontier, _ = frontier.append(LEAVES[0])
    with pytest.raises(AssertionError):
        frontier.append(b"entry 1")

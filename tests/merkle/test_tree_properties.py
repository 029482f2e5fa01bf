"""Every tree size from 1 to 300: every proof verifies, and every kind of tampering fails.

One tree of 300 leaves serves every size: the tree of its first n leaves is the
tree of size n. Roots and proofs are checked against the RFC's recursive
definitions (tests/merkle/oracle.py); proofs then meet each tampering the issue
names (a flipped bit, swapped siblings, a wrong index, a wrong size, a proof for
another tree) and further ones from the verifier advisories (a proof padded,
truncated or with any one element replaced).
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine.merkle import tree
from ledger_engine.merkle.frontier import MemoryNodes
from tests.merkle import oracle
from tests.support.tiers import examples, sampled

MAX_SIZE = 300
DATA = [hashlib.sha256(b"leaf %d" % number).digest()[: number % 40] for number in range(MAX_SIZE)]
OTHER_DATA = [b"other " + data for data in DATA]
NODES = MemoryNodes.from_leaf_hashes([tree.leaf_hash(data) for data in DATA])
OTHER = MemoryNodes.from_leaf_hashes([tree.leaf_hash(data) for data in OTHER_DATA])
ROOTS = [tree.root_at(NODES, size) for size in range(MAX_SIZE + 1)]
OTHER_ROOTS = [tree.root_at(OTHER, size) for size in range(MAX_SIZE + 1)]
SIZES = range(1, MAX_SIZE + 1)


def refused(check, *args) -> str:
    """The reason ``check(*args)`` refuses; a proof that verifies fails the test."""
    with pytest.raises(tree.ProofError) as raised:
        check(*args)
    return raised.value.reason


def flip(hash_: bytes, bit: int) -> bytes:
    flipped = bytearray(hash_)
    flipped[bit // 8] ^= 1 << (bit % 8)
    return bytes(flipped)


def with_flipped_bit(path: list[bytes], position: int, bit: int) -> list[bytes]:
    return [*path[:position], flip(path[position], bit), *path[position + 1:]]


def test_the_root_at_every_size_is_the_rfc_root_and_the_frontier_root():
    for size in range(MAX_SIZE + 1):
        assert ROOTS[size] == oracle.mth(DATA[:size]), size
    assert NODES.root() == ROOTS[MAX_SIZE]


@settings(max_examples=examples(150), deadline=None)
@given(st.integers(1, MAX_SIZE).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1))))
def test_inclusion_proofs_are_the_rfc_paths(case):
    size, index = case
    assert tree.inclusion_proof(NODES, index, size) == oracle.path(index, DATA[:size])


@settings(max_examples=examples(150), deadline=None)
@given(st.integers(1, MAX_SIZE).flatmap(lambda size: st.tuples(st.integers(1, size), st.just(size))))
def test_consistency_proofs_are_the_rfc_proofs(case):
    first, second = case
    assert tree.consistency_proof(NODES, first, second) == oracle.proof(first, DATA[:second])


def test_every_inclusion_proof_of_every_size_verifies_and_each_tampering_fails():
    for size in SIZES:
        for index in range(size):
            leaf, path = NODES(0, index), tree.inclusion_proof(NODES, index, size)
            tree.verify_inclusion(leaf, index, size, path, ROOTS[size])
            if sampled(size + index):
                _inclusion_tamperings_fail(leaf, index, size, path)


def _inclusion_tamperings_fail(leaf: bytes, index: int, size: int, path: list[bytes]) -> None:
    verify, root = tree.verify_inclusion, ROOTS[size]
    if path:
        position, bit = (index + size) % len(path), (index * 31 + size) % 256
        assert refused(verify, leaf, index, size, with_flipped_bit(path, position, bit), root) == tree.ROOT_MISMATCH
        assert refused(verify, flip(leaf, bit), index, size, path, root) == tree.ROOT_MISMATCH
    if len(path) > 1 and path[0] != path[1]:
        assert refused(verify, leaf, index, size, [path[1], path[0], *path[2:]], root) == tree.ROOT_MISMATCH
    for wrong_index in {index - 1, index + 1, index ^ 1, index ^ 2} - {index}:
        if 0 <= wrong_index < size:
            assert refused(verify, leaf, wrong_index, size, path, root) in (tree.ROOT_MISMATCH, tree.PROOF_LENGTH)
    for wrong_size in {size - 1, size + 1, size * 2, size // 2} - {size}:
        if index < wrong_size <= MAX_SIZE:  # a size is only ever believed together with its root
            assert refused(verify, leaf, index, wrong_size, path, ROOTS[wrong_size]) in (tree.ROOT_MISMATCH,
                                                                                          tree.PROOF_LENGTH)
    assert refused(verify, leaf, index, size, path, OTHER_ROOTS[size]) == tree.ROOT_MISMATCH
    assert refused(verify, OTHER(0, index), index, size, tree.inclusion_proof(OTHER, index, size), root) == \
        tree.ROOT_MISMATCH
    assert refused(verify, leaf, index, size, [*path, root], root) == tree.PROOF_LENGTH
    assert refused(verify, leaf, index, size, [root, *path], root) == tree.PROOF_LENGTH
    if path:
        assert refused(verify, leaf, index, size, path[:-1], root) == tree.PROOF_LENGTH


def test_every_consistency_proof_between_any_two_sizes_verifies_and_each_tampering_fails():
    for second in SIZES:
        for first in range(0, second + 1):
            path = tree.consistency_proof(NODES, first, second)
            tree.verify_consistency(first, second, ROOTS[first], ROOTS[second], path)
            if 0 < first < second and sampled(first + second):
                _consistency_tamperings_fail(first, second, path)


def _consistency_tamperings_fail(first: int, second: int, path: list[bytes]) -> None:
    verify, first_root, second_root = tree.verify_consistency, ROOTS[first], ROOTS[second]
    mismatch = (tree.FIRST_ROOT_MISMATCH, tree.SECOND_ROOT_MISMATCH)
    position, bit = (first + second) % len(path), (first * 7 + second) % 256
    assert refused(verify, first, second, first_root, second_root, with_flipped_bit(path, position, bit)) in mismatch
    if len(path) > 1 and path[0] != path[1]:
        assert refused(verify, first, second, first_root, second_root, [path[1], path[0], *path[2:]]) in mismatch
    for wrong_first in {first - 1, first + 1} - {first}:
        if 0 < wrong_first < second:
            assert refused(verify, wrong_first, second, ROOTS[wrong_first], second_root, path) in (*mismatch,
                                                                                                   tree.PROOF_LENGTH)
    for wrong_second in {second - 1, second + 1} - {second}:
        if first < wrong_second <= MAX_SIZE:
            assert refused(verify, first, wrong_second, first_root, ROOTS[wrong_second], path) in (*mismatch,
                                                                                                   tree.PROOF_LENGTH)
    assert refused(verify, first, second, OTHER_ROOTS[first], second_root, path) in mismatch
    assert refused(verify, first, second, first_root, OTHER_ROOTS[second], path) in mismatch
    assert refused(verify, first, second, second_root, first_root, path) in mismatch
    assert refused(verify, first, second, first_root, second_root, [*path, second_root]) == tree.PROOF_LENGTH
    assert refused(verify, first, second, first_root, second_root, path[:-1]) == tree.PROOF_LENGTH
    assert refused(verify, second, first, second_root, first_root, path) == tree.SIZE_ORDER


inclusion_cases = st.integers(2, MAX_SIZE).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1)))
consistency_cases = st.integers(2, MAX_SIZE).flatmap(lambda size: st.tuples(st.integers(1, size - 1), st.just(size)))


@settings(max_examples=examples(300), deadline=None)
@given(inclusion_cases, st.data())
def test_any_single_bit_of_any_inclusion_proof_element_matters(case, data):
    size, index = case
    path = tree.inclusion_proof(NODES, index, size)
    tampered = with_flipped_bit(path, data.draw(st.integers(0, len(path) - 1)), data.draw(st.integers(0, 255)))
    assert refused(tree.verify_inclusion, NODES(0, index), index, size, tampered, ROOTS[size]) == tree.ROOT_MISMATCH


@settings(max_examples=examples(300), deadline=None)
@given(consistency_cases, st.data())
def test_any_single_bit_of_any_consistency_proof_element_matters(case, data):
    first, second = case
    path = tree.consistency_proof(NODES, first, second)
    tampered = with_flipped_bit(path, data.draw(st.integers(0, len(path) - 1)), data.draw(st.integers(0, 255)))
    assert refused(tree.verify_consistency, first, second, ROOTS[first], ROOTS[second], tampered) in (
        tree.FIRST_ROOT_MISMATCH, tree.SECOND_ROOT_MISMATCH)


def test_every_element_of_every_small_proof_is_checked():
    """No element goes unchecked (GHSA-672p-m5jq-mrh8: a verifier that looked only at the ends of a chain)."""
    for size in range(1, 65):
        for index in range(size):
            path = tree.inclusion_proof(NODES, index, size)
            for position in range(len(path)):
                replaced = [*path[:position], OTHER(0, 0), *path[position + 1:]]
                assert refused(tree.verify_inclusion, NODES(0, index), index, size, replaced, ROOTS[size])
        for first in range(1, size):
            path = tree.consistency_proof(NODES, first, size)
            for position in range(len(path)):
                replaced = [*path[:position], OTHER(0, 0), *path[position + 1:]]
                assert refused(tree.verify_consistency, first, size, ROOTS[first], ROOTS[size], replaced)


def test_proof_lengths_follow_the_rfc_shape_and_grow_as_log_n():
    for size in SIZES:
        longest = max(len(tree.inclusion_proof(NODES, index, size)) for index in range(size))
        assert longest == (size - 1).bit_length()
        for first in range(1, size):
            assert len(tree.consistency_proof(NODES, first, size)) <= 2 * (size - 1).bit_length()


def test_proving_reads_only_log_n_nodes():
    reads = []

    def counting(level: int, index: int) -> bytes:
        reads.append((level, index))
        return NODES(level, index)

    for size in (255, 256, 257, 300):
        for index in (0, size // 3, size - 1):
            reads.clear()
            tree.inclusion_proof(counting, index, size)
            assert len(reads) <= 2 * size.bit_length(), (size, index, len(reads))
        reads.clear()
        tree.consistency_proof(counting, size // 2, size)
        assert len(reads) <= 3 * size.bit_length()

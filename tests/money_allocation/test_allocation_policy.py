"""The london-1 arithmetic on its own: splits sum to the whole, ties go by ID, slices sum to B."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger_engine.amounts import U64_MAX
from ledger_engine.domain.allocation_policy import (
    Listening, Policy, Serving, day_slice, largest_remainder, split_by_rights, split_listener_day,
)
from ledger_engine.errors import ErrorCode, LedgerError

LONDON_1 = Policy(operator_pool_bps=1500, porto_retained_bps=1000)
ids = st.text(alphabet="abcdefghij0123456789-", min_size=1, max_size=8)
weights = st.dictionaries(ids, st.integers(0, 10**12), min_size=1, max_size=12).filter(lambda d: sum(d.values()) > 0)


@given(total=st.integers(0, U64_MAX), shares=weights)
def test_largest_remainder_sums_to_the_total_and_stays_within_one_unit_of_the_quota(total, shares):
    parts = largest_remainder(total, list(shares.items()))
    assert sum(parts.values()) == total
    whole = sum(shares.values())
    for identifier, weight in shares.items():
        assert total * weight // whole <= parts[identifier] <= total * weight // whole + 1
        if weight == 0:
            assert parts[identifier] == 0


@given(total=st.integers(0, 10**15), shares=weights, data=st.data())
def test_largest_remainder_does_not_depend_on_input_order(total, shares, data):
    shuffled = data.draw(st.permutations(list(shares.items())))
    assert largest_remainder(total, shuffled) == largest_remainder(total, list(shares.items()))


def test_ties_go_to_the_lower_id():
    assert largest_remainder(1, [("b", 1), ("a", 1)]) == {"a": 1, "b": 0}
    assert largest_remainder(2, [("c", 1), ("b", 1), ("a", 1)]) == {"a": 1, "b": 1, "c": 0}
    assert largest_remainder(7, [("x", 1), ("y", 2)]) == {"x": 2, "y": 5}  # 2.33 and 4.67: y's remainder wins


def test_bad_splits_are_refused():
    for total, shares in ((5, [("a", 0)]), (5, [("a", 1), ("a", 2)]), (U64_MAX + 1, [("a", 1)]), (5, [("a", -1)])):
        with pytest.raises(LedgerError) as raised:
            largest_remainder(total, shares)
        assert raised.value.code in (ErrorCode.INVALID_SPLITS, ErrorCode.AMOUNT_OVERFLOW)


def test_each_bad_weight_is_refused_with_its_own_code():
    cases = [
        ([("a", U64_MAX), ("b", 1)], ErrorCode.AMOUNT_OVERFLOW, "sum exceeds u64"),
        ([("a", U64_MAX), ("b", 1), ("c", -1)], ErrorCode.AMOUNT_OVERFLOW, "sum exceeds u64"),  # in order, as summed
        ([("a", 1), ("b", U64_MAX + 1)], ErrorCode.AMOUNT_OVERFLOW, "weight of b is not a u64"),
        ([("a", 1), ("b", 1.0)], ErrorCode.AMOUNT_OVERFLOW, "weight of b is not a u64"),
        ([("a", True)], ErrorCode.AMOUNT_OVERFLOW, "weight of a is not a u64"),
        ([("a", 0), ("b", 0)], ErrorCode.INVALID_SPLITS, "sum to zero"),
    ]
    for shares, code, detail in cases:
        with pytest.raises(LedgerError) as raised:
            largest_remainder(5, shares)
        assert (raised.value.code, detail in str(raised.value)) == (code, True), shares


def test_a_rights_version_checked_once_still_refuses_the_same_splits_in_other_types():
    """Checked splits are remembered, and ``5000.0 == 5000`` and ``True == 1`` as keys: those must still be refused."""
    assert split_by_rights(7, (("b", 5_000), ("a", 5_000))) == [("a", 4), ("b", 3)]
    for splits in ((("b", 5_000.0), ("a", 5_000)), (("b", 9_999), ("a", True))):
        with pytest.raises(LedgerError) as raised:
            split_by_rights(7, splits)
        assert raised.value.code == ErrorCode.AMOUNT_OVERFLOW and "is not a u64" in raised.value.detail, splits
    with pytest.raises(LedgerError) as raised:
        split_by_rights(7, (("b", 5_000), ("a", 4_999)))
    assert raised.value.code == ErrorCode.INVALID_SPLITS


@given(budget=st.integers(0, U64_MAX), days=st.integers(1, 366))
def test_day_slices_sum_to_the_budget_and_differ_by_at_most_one(budget, days):
    slices = [day_slice(budget, day, days) for day in range(1, days + 1)]
    assert sum(slices) == budget
    assert max(slices) - min(slices) <= 1


def test_day_slices_are_the_design_formula():
    assert [day_slice(10, day, 3) for day in (1, 2, 3)] == [3, 3, 4]
    assert [day_slice(2, day, 3) for day in (1, 2, 3)] == [0, 1, 1]
    with pytest.raises(LedgerError):
        day_slice(10, 4, 3)


listening = st.lists(
    st.builds(lambda w, ms, a, bps: Listening(w, 1, ms, ((a, bps), (a + "~", 10_000 - bps))),
              ids, st.integers(0, 10**9), ids, st.integers(1, 9_999)),
    min_size=1, max_size=20, unique_by=lambda item: item.work_id,
).filter(lambda items: sum(i.listened_ms for i in items) > 0)
serving = st.lists(st.builds(Serving, ids, ids, st.integers(0, 10**12)), max_size=8, unique_by=lambda s: s.node_id)


@given(slice_amount=st.integers(0, 10**13), listened=listening, served=serving)
def test_a_listener_day_conserves_its_slice_in_canonical_order(slice_amount, listened, served):
    lines = split_listener_day(slice_amount, listened, served, LONDON_1)
    assert sum(line.amount for line in lines) == slice_amount
    assert all(line.amount > 0 for line in lines)
    artists = [(l.work_id, l.recipient_id) for l in lines if l.role == "artist"]
    operators = [l.node_id for l in lines if l.role == "operator"]
    assert artists == sorted(artists) and operators == sorted(operators)
    assert [l.role for l in lines] == sorted((l.role for l in lines), key=["artist", "operator", "porto"].index)
    if not sum(s.served_bytes for s in served):
        assert not operators


def test_a_day_without_listening_has_nothing_to_allocate():
    with pytest.raises(LedgerError) as raised:
        split_listener_day(100, [Listening("w", 1, 0, (("a", 10_000),))], [], LONDON_1)
    assert raised.value.code == ErrorCode.INVALID_STATE


def test_rights_splits_must_sum_to_10000():
    with pytest.raises(LedgerError) as raised:
        split_listener_day(100, [Listening("w", 1, 5, (("a", 5_000),))], [], LONDON_1)
    assert raised.value.code == ErrorCode.INVALID_SPLITS

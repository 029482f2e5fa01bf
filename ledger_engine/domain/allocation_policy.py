"""The ``london-1`` allocation policy (docs/spec/allocation-policy.md) as pure integer arithmetic.

Inputs and outputs are unsigned 64-bit integers. A product of two of them
needs at most 128 bits, which is the widest intermediate any step forms; every
input is checked against u64 first, so a port to a fixed-width language keeps
the same results. Every split is largest remainder with ties broken by
canonical ID order, so the parts always sum to the whole.

Listening is split by (work, rights version), as it is recorded: a work heard
under two rights versions on one day pays each version's recipients for the
listening under it. A listener-day's output lines come in canonical order:
rights lines by (work ID, rights version, recipient ID), then operator lines by
node ID, then Porto's retained share. Lines of zero amount are not output.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter
from typing import Hashable, Iterable, NamedTuple, Sequence, TypeVar

from ledger_engine.amounts import U64_MAX, checked_sum
from ledger_engine.errors import ErrorCode, LedgerError

TOTAL_BPS = 10_000
ARTIST, OPERATOR, PORTO = "artist", "operator", "porto"


@dataclass(frozen=True, slots=True)
class Policy:
    operator_pool_bps: int
    porto_retained_bps: int

    def __post_init__(self) -> None:
        if not 0 <= self.operator_pool_bps + self.porto_retained_bps <= TOTAL_BPS:
            raise LedgerError(ErrorCode.INVALID_SPLITS, "policy pools exceed 10000 basis points")


# The records a split reads and writes are named tuples: immutable like frozen dataclasses, but built about four
# times faster, and a listener-day of 20 works and 3 nodes builds about fifty of them.
class Listening(NamedTuple):
    """Eligible listening of one work on one listener-day, with that rights version's splits."""

    work_id: str
    rights_version: int
    listened_ms: int
    splits: tuple[tuple[str, int], ...]  # (recipient ID, basis points), summing to 10000


# What listening is split by: the work and the rights version it was heard under.
_by_rights = attrgetter("work_id", "rights_version")


class Serving(NamedTuple):
    """Verified bytes one node served the listener that day."""

    node_id: str
    operator_id: str
    served_bytes: int


class PlannedLine(NamedTuple):
    role: str
    recipient_id: str | None
    amount: int
    work_id: str | None = None
    rights_version: int | None = None
    node_id: str | None = None


def u64(value: int, what: str) -> int:
    if type(value) is not int or not 0 <= value <= U64_MAX:
        raise LedgerError(ErrorCode.AMOUNT_OVERFLOW, f"{what} is not a u64: {value!r}")
    return value


# A split's IDs: strings, or tuples of them.
Id = TypeVar("Id", bound=Hashable)


def largest_remainder(total: int, weights: list[tuple[Id, int]]) -> dict[Id, int]:
    """Split ``total`` in proportion to ``weights``, keyed by distinct canonical IDs (strings, or tuples of them).

    Each part is first ``floor(total * w / W)``; the units left over go one each
    to the largest remainders ``total * w mod W``, equal remainders in ID order.
    """
    u64(total, "split total")
    return _apportion(total, weights, _checked_whole(weights))


def _checked_whole(weights: Sequence[tuple[Hashable, int]]) -> int:
    """``W``: the weights' sum, once their IDs are distinct and each weight and the sum are u64 and not all zero."""
    if len({identifier for identifier, _ in weights}) != len(weights):
        raise LedgerError(ErrorCode.INVALID_SPLITS, "split IDs must be distinct")
    whole = 0
    for identifier, weight in weights:  # checked_sum of u64(weight), without formatting a name for each good weight
        if type(weight) is not int or not 0 <= weight <= U64_MAX:
            u64(weight, f"weight of {identifier}")  # refuses it, naming it
        whole += weight
        if whole > U64_MAX:
            raise LedgerError(ErrorCode.AMOUNT_OVERFLOW, "sum exceeds u64")
    if whole == 0:
        raise LedgerError(ErrorCode.INVALID_SPLITS, "cannot split by weights that sum to zero")
    return whole


def _apportion(total: int, weights: Iterable[tuple[Id, int]], whole: int) -> dict[Id, int]:
    """Largest remainder of ``total`` over weights already checked, whose sum is ``whole``."""
    parts: dict[Id, int] = {}
    remainders: list[tuple[int, Id]] = []
    given = 0
    for identifier, weight in weights:
        part, remainder = divmod(total * weight, whole)
        parts[identifier] = part
        given += part
        remainders.append((-remainder, identifier))
    for _, identifier in sorted(remainders)[: total - given]:
        parts[identifier] += 1
    return parts


def day_slice(budget: int, day_index: int, days: int) -> int:
    """``S_d = floor(B*d/D) - floor(B*(d-1)/D)`` for day ``d`` in ``1..D``; the slices sum to ``B``."""
    u64(budget, "budget")
    if not 1 <= day_index <= days:
        raise LedgerError(ErrorCode.INVALID_TIME, f"day {day_index} is outside the period's days 1..{days}")
    return budget * day_index // days - budget * (day_index - 1) // days


def split_listener_day(slice_amount: int, listening: list[Listening], serving: list[Serving],
                       policy: Policy) -> list[PlannedLine]:
    """The output lines of one listener-day's slice, in canonical order.

    With no verified bytes the operator pool has no one to pay, so its basis
    points join the rights pool and the whole slice is still allocated.
    """
    listening = sorted(listening, key=_by_rights)
    serving = sorted(serving, key=attrgetter("node_id"))
    if checked_sum(item.listened_ms for item in listening) == 0:
        raise LedgerError(ErrorCode.INVALID_STATE, "a listener-day without eligible listening has nothing to allocate")
    operator_bps = policy.operator_pool_bps if checked_sum(s.served_bytes for s in serving) else 0
    pools = largest_remainder(slice_amount, [
        (OPERATOR, operator_bps),
        (PORTO, policy.porto_retained_bps),
        ("rights", TOTAL_BPS - operator_bps - policy.porto_retained_bps),
    ])
    lines = _rights_lines(pools["rights"], listening)
    if operator_bps:
        lines += _operator_lines(pools[OPERATOR], serving)
    lines.append(PlannedLine(PORTO, None, pools[PORTO]))
    return [line for line in lines if line.amount]


def _rights_lines(pool: int, listening: list[Listening]) -> list[PlannedLine]:
    by_rights = largest_remainder(pool, [((work_id, version), listened_ms)
                                         for work_id, version, listened_ms, _ in listening])
    lines = []
    for item, share in zip(listening, by_rights.values()):
        for recipient_id, amount in split_by_rights(share, item.splits):
            lines.append(PlannedLine(ARTIST, recipient_id, amount, item.work_id, item.rights_version))
    return lines


def split_by_rights(amount: int, splits: tuple[tuple[str, int], ...]) -> list[tuple[str, int]]:
    """One work's share across a rights version's recipients, in recipient order (zero parts included)."""
    u64(amount, "split total")
    if len(splits) == 1 and splits[0][1] == TOTAL_BPS and type(splits[0][1]) is int:
        return [(splits[0][0], amount)]  # what apportioning to one holder of every basis point gives
    return list(_apportion(amount, *_rights_weights(splits)).items())


def _rights_weights(splits: tuple[tuple[str, int], ...]) -> tuple[tuple[tuple[str, int], ...], int]:
    """A rights version's splits in recipient order, checked, and their sum: worked out once per rights version.

    Only splits of exact ``int`` basis points are remembered: ``5000.0 == 5000`` as a key, and must still be refused.
    """
    for _, bps in splits:
        if type(bps) is not int:
            return _rights_weights_unremembered(splits)
    return _checked_rights_weights(splits)


def _rights_weights_unremembered(splits: tuple[tuple[str, int], ...]) -> tuple[tuple[tuple[str, int], ...], int]:
    if checked_sum(bps for _, bps in splits) != TOTAL_BPS:
        raise LedgerError(ErrorCode.INVALID_SPLITS, "a rights version's splits do not sum to 10000")
    ordered = tuple(sorted(splits))
    return ordered, _checked_whole(ordered)


_checked_rights_weights = lru_cache(maxsize=1 << 14)(_rights_weights_unremembered)


def _operator_lines(pool: int, serving: list[Serving]) -> list[PlannedLine]:
    by_node = largest_remainder(pool, [(item.node_id, item.served_bytes) for item in serving])
    return [PlannedLine(OPERATOR, item.operator_id, by_node[item.node_id], node_id=item.node_id)
            for item in serving]

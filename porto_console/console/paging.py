"""Page-numbered pagination over lazily read ledger rows."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Generic, Iterable, TypeVar

T = TypeVar("T")
PAGE_SIZE = 25


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    number: int
    size: int
    total: int

    @property
    def count(self) -> int:
        return max(1, -(-self.total // self.size))

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.count


def page_number(request) -> int:
    try:
        return max(1, int(request.GET.get("page", "1")))
    except ValueError:
        return 1


def paginate(rows: Iterable[T], number: int, size: int = PAGE_SIZE) -> Page[T]:
    """The ``number``-th page of ``rows``; reads on to the end to count them."""
    iterator = iter(rows)
    skipped = sum(1 for _ in islice(iterator, (number - 1) * size))
    items = list(islice(iterator, size))
    total = skipped + len(items) + sum(1 for _ in iterator)
    return Page(items, number, size, total)

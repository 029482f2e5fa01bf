"""Ordered streams: a scan with pending changes laid over it, and a stream taken in chunks."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping, TypeVar, overload

K = TypeVar("K", str, bytes)
V = TypeVar("V")


@overload
def overlay_scan(base: Iterable[tuple[K, V]], overlay: Mapping[K, V | None]) -> Iterator[tuple[K, V]]: ...


@overload
def overlay_scan(base: Iterable[tuple[K, V]], overlay: Mapping[K, object],
                 resolve: Callable[[K], V | None]) -> Iterator[tuple[K, V]]: ...


def overlay_scan(base: Iterable[tuple[K, V]], overlay: Mapping[K, Any],
                 resolve: Callable[[K], V | None] | None = None) -> Iterator[tuple[K, V]]:
    """Merge ``base`` (sorted by key) with ``overlay``; an overlay value wins and ``None`` deletes.

    ``resolve``, when given, turns an overlay key into the value to yield (for
    overlays that hold raw changes rather than finished values). Memory stays
    bounded by the overlay, however long the base scan is.
    """
    pending = sorted(overlay)
    position = 0
    for key, value in base:
        while position < len(pending) and pending[position] < key:
            yield from _present(pending[position], overlay, resolve)
            position += 1
        if position < len(pending) and pending[position] == key:
            yield from _present(key, overlay, resolve)
            position += 1
        else:
            yield key, value
    for key in pending[position:]:
        yield from _present(key, overlay, resolve)


def _present(key: K, overlay: Mapping[K, Any],
             resolve: Callable[[K], V | None] | None) -> Iterator[tuple[K, V]]:
    value = resolve(key) if resolve is not None else overlay[key]
    if value is not None:
        yield key, value


T = TypeVar("T")


def chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in order, ``size`` at a time (the last chunk may be shorter), without reading ahead."""
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk

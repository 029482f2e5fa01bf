"""Every table file carries a Bloom filter, so a read of a key that does not exist skips its blocks
(docs/adr/0071); a damaged filter, or one copied from another table, never hides a key that exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_engine.errors import StorageFault
from ledger_engine.layout import STATE
from ledger_engine.storage.rocks import RocksStore

FILTER_BLOCK = b"fullfilter.rocksdb.BuiltinBloomFilter"  # its name in the table's meta-index block
CHECKSUM_TRAILER = 5  # a block's compression type and checksum follow it
KEYS = [b"account/acct-%05d" % number for number in range(3_000)]
OTHER_KEYS = [b"account/bcct-%05d" % number for number in range(3_000)]


def ledger_of_tables(data: Path, *tables: list[bytes]) -> Path:
    """A closed ledger with one state table file per list of keys."""
    with RocksStore(data, create=True) as store:
        for keys in tables:
            store.write([(STATE, key, b"record of " + key) for key in keys])
            store.flush()
    return data


@pytest.fixture
def flushed(tmp_path) -> Path:
    return ledger_of_tables(tmp_path / "ledger", KEYS)


@pytest.fixture
def two_tables(tmp_path) -> Path:
    """Two state tables of as many keys, so their filters are the same size."""
    return ledger_of_tables(tmp_path / "ledger", KEYS, OTHER_KEYS)


def state_table(data: Path) -> Path:
    """The largest table file, the one the state rows went to."""
    return max(data.glob("*.sst"), key=lambda path: path.stat().st_size)


def filter_block(table: bytes) -> tuple[int, int]:
    """The filter block's offset and size: the block handle after its name in the meta-index block, two
    varints (the meta-index block is stored uncompressed, its first entry whole)."""
    position = table.index(FILTER_BLOCK) + len(FILTER_BLOCK)
    handle = []
    for _ in range(2):
        value = shift = 0
        while True:
            byte = table[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        handle.append(value)
    return handle[0], handle[1]


def filter_span(table: bytes) -> slice:
    """The filter block with its checksum trailer: what a whole valid block occupies."""
    offset, size = filter_block(bytes(table))
    return slice(offset, offset + size + CHECKSUM_TRAILER)


def test_every_table_file_has_a_bloom_filter(flushed):
    tables = list(flushed.glob("*.sst"))
    assert tables
    for table in tables:
        offset, size = filter_block(table.read_bytes())
        assert size > 0 and offset + size < table.stat().st_size


@pytest.mark.parametrize("where", [0.0, 0.25, 0.5, 0.75, 0.99])
def test_a_damaged_filter_never_hides_a_key_that_exists(flushed, where):
    table = state_table(flushed)
    content = bytearray(table.read_bytes())
    offset, size = filter_block(bytes(content))
    for position in range(offset + int(size * where), min(offset + int(size * where) + 16, offset + size)):
        content[position] ^= 0xFF
    table.write_bytes(content)

    assert_every_key_reads_as_itself_or_is_refused(flushed, KEYS)


def test_a_filter_copied_from_another_table_never_hides_a_key_that_exists(two_tables):
    """A whole block with its own valid checksum, written over a filter of the same size: only a checksum
    bound to the block's file and offset (table format 6) tells it from the table's own."""
    first, second = sorted((path for path in two_tables.glob("*.sst") if path.stat().st_size > 10_000),
                           key=lambda path: int(path.stem))
    first_bytes, second_bytes = bytearray(first.read_bytes()), bytearray(second.read_bytes())
    first_span, second_span = filter_span(first_bytes), filter_span(second_bytes)
    assert first_span.stop - first_span.start == second_span.stop - second_span.start
    first_bytes[first_span], second_bytes[second_span] = second_bytes[second_span], first_bytes[first_span]
    first.write_bytes(first_bytes)
    second.write_bytes(second_bytes)

    assert_every_key_reads_as_itself_or_is_refused(two_tables, KEYS + OTHER_KEYS)


def assert_every_key_reads_as_itself_or_is_refused(data: Path, keys: list[bytes]) -> None:
    answers = {"read": 0, "refused": 0}
    try:
        with RocksStore(data, read_only=True) as store:
            for key in keys:
                try:
                    value = store.get(STATE, key)
                except StorageFault:
                    answers["refused"] += 1
                    continue
                assert value == b"record of " + key, key
                answers["read"] += 1
    except StorageFault:
        return  # refused at open: served nothing
    assert answers["read"] + answers["refused"] == len(keys)

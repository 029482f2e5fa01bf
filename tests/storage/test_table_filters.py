"""Every table file carries a Bloom filter, so a read of a key that does not exist skips its blocks
(docs/adr/0071); a damaged filter, or one copied from another table, never hides a key that exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_engine.errors import StorageFault
from ledger_engine.layout import STATE
from ledger_engine.storage.rocks import RocksStore

FILTER_BLOCK = b"fullfilter.rocksdb.BuiltinBloomFilter"  # its name in the table's meta-index block
KEYS = [b"account/acct-%05d" % number for number in range(3_000)]


OTHER_KEYS = [b"account/bcct-%05d" % number for number in range(3_000)]
CHECKSUM_TRAILER = 5  # a block's compression type and checksum follow it


@pytest.fixture
def flushed(tmp_path) -> Path:
    data = tmp_path / "ledger"
    with RocksStore(data, create=True) as store:
        store.write([(STATE, key, b"record of " + key) for key in KEYS])
        store.flush()
    return data


@pytest.fixture
def two_tables(tmp_path) -> Path:
    """Two state tables of as many keys, so their filters are the same size."""
    data = tmp_path / "ledger"
    with RocksStore(data, create=True) as store:
        for keys in (KEYS, OTHER_KEYS):
            store.write([(STATE, key, b"record of " + key) for key in keys])
            store.flush()
    return data


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
    contents = [bytearray(first.read_bytes()), bytearray(second.read_bytes())]
    (first_offset, first_size), (second_offset, second_size) = (filter_block(bytes(c)) for c in contents)
    assert first_size == second_size
    first_block = contents[0][first_offset:first_offset + first_size + CHECKSUM_TRAILER]
    second_block = contents[1][second_offset:second_offset + second_size + CHECKSUM_TRAILER]
    contents[0][first_offset:first_offset + first_size + CHECKSUM_TRAILER] = second_block
    contents[1][second_offset:second_offset + second_size + CHECKSUM_TRAILER] = first_block
    first.write_bytes(contents[0])
    second.write_bytes(contents[1])

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

"""Storage protections: what paranoid checks, checksummed reads, status checks, the write witness and the guarded open cost."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Callable

from rocksdict import DBRecoveryMode, Options, ReadOptions, Rdict, WriteBatch, WriteOptions

from benchmarks.measure import seconds
from benchmarks.report import Report
from ledger_engine.layout import STATE
from ledger_engine.storage.rocks import RocksStore

ROUNDS = 5
WRITES = 600
ROWS = 100_000
VALUE = b"v" * 200
GETS = 20_000


def _plain(protected: bool) -> Options:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    if protected:
        options.set_paranoid_checks(True)
        options.set_wal_recovery_mode(DBRecoveryMode.tolerate_corrupted_tail_records())
    return options


def _reads(verify: bool) -> ReadOptions:
    options = ReadOptions()
    options.set_verify_checksums(verify)
    return options


def _sync_rate(write_one: Callable[[int], None]) -> float:
    started = time.perf_counter()
    for number in range(WRITES):
        write_one(number)
    return WRITES / (time.perf_counter() - started)


def _rdict_rate(path: Path, protected: bool) -> float:
    db = Rdict(str(path), _plain(protected))
    sync = WriteOptions()
    sync.sync = True

    def write_one(number: int) -> None:
        batch = WriteBatch(raw_mode=True)
        batch.put(b"bench/%020d" % number, VALUE)
        db.write(batch, sync)

    try:
        return _sync_rate(write_one)
    finally:
        db.close()


def _store_rate(path: Path) -> float:
    with RocksStore(path, create=True) as store:
        return _sync_rate(lambda number: store.write([(STATE, b"bench/%020d" % number, VALUE)]))


def _filled(path: Path) -> Path:
    with RocksStore(path, create=True) as store:
        for start in range(0, ROWS, 10_000):
            store.write([(STATE, b"row/%020d" % number, VALUE) for number in range(start, start + 10_000)])
        store.flush()
    return path


def _rdict_scan_rate(path: Path, verify: bool) -> float:
    db = Rdict(str(path), Options(raw_mode=True), column_families={name: Options(raw_mode=True) for name in
                                                                   Rdict.list_cf(str(path))})
    family = db.get_column_family(STATE)
    try:
        def scan() -> int:
            iterator = family.iter(_reads(verify))
            iterator.seek(b"row/")
            count = 0
            while iterator.valid():
                iterator.key(), iterator.value()
                count += 1
                iterator.next()
            assert count == ROWS
            return count
        return ROWS / seconds(scan)
    finally:
        del family
        db.close()


def _store_scan_rate(path: Path) -> float:
    with RocksStore(path, read_only=True) as store:
        return ROWS / seconds(lambda: sum(1 for _ in store.scan(STATE, b"row/")))


def _store_get_rate(path: Path) -> float:
    keys = [b"row/%020d" % (number * 7919 % ROWS) for number in range(GETS)]
    with RocksStore(path, read_only=True) as store:
        return GETS / seconds(lambda: [store.get(STATE, key) for key in keys])


def _rdict_get_rate(path: Path, verify: bool) -> float:
    keys = [b"row/%020d" % (number * 7919 % ROWS) for number in range(GETS)]
    db = Rdict(str(path), Options(raw_mode=True), column_families={name: Options(raw_mode=True) for name in
                                                                   Rdict.list_cf(str(path))})
    family, reads = db.get_column_family(STATE), _reads(verify)
    try:
        return GETS / seconds(lambda: [family.get(key, read_opt=reads) for key in keys])
    finally:
        del family
        db.close()


def _open_ms(path: Path, open_once: Callable[[], object]) -> float:
    return 1000 * seconds(open_once)


def _read_costs(report: Report, key: str, what: str, unit: str, store_label: str,
                rdict_rate: Callable[[bool], float], store_rate: Callable[[], float]) -> None:
    """Rounds of rocksdict without checksums, with them, and RocksStore; ratios per round."""
    off, on, store = [], [], []
    for _ in range(ROUNDS):
        off.append(rdict_rate(False))
        on.append(rdict_rate(True))
        store.append(store_rate())
    report.metric(f"{key}_unverified_per_s", f"{what}, checksums off", statistics.median(off), unit)
    report.metric(f"{key}_verify_ratio", f"{what} with checksums / without",
                  statistics.median(a / b for a, b in zip(on, off)), "x")
    report.metric(f"{key}_store_ratio", f"{store_label} / rocksdict without checksums",
                  statistics.median(a / b for a, b in zip(store, off)), "x")


def run(report: Report, workdir: Path) -> None:
    plain, protected, store = [], [], []
    for number in range(ROUNDS):
        plain.append(_rdict_rate(workdir / f"plain-{number}", protected=False))
        protected.append(_rdict_rate(workdir / f"protected-{number}", protected=True))
        store.append(_store_rate(workdir / f"store-{number}"))
    report.metric("sync_plain_per_s", "sync batches/s, rocksdict defaults", statistics.median(plain), "writes/s")
    report.metric("sync_paranoid_ratio", "paranoid checks + tail-only WAL recovery / defaults",
                  statistics.median(p / q for p, q in zip(protected, plain)), "x")
    report.metric("sync_store_ratio", "RocksStore.write (write number + witness) / defaults",
                  statistics.median(s / q for s, q in zip(store, plain)), "x")

    descriptor = os.open(workdir / "witness", os.O_WRONLY | os.O_CREAT, 0o644)
    record = b"porto-witness/1 %020d %08x\n" % (1, 0)
    elapsed = seconds(lambda: [os.pwrite(descriptor, record, 0) for _ in range(100_000)])
    os.close(descriptor)
    report.metric("witness_pwrite_us", "one witness pwrite (not synced)", elapsed * 1e6 / 100_000, "µs")

    data = _filled(workdir / "filled")
    _read_costs(report, "scan", "scan rows/s", "rows/s", "RocksStore.scan (checksums, status, errors)",
                lambda verify: _rdict_scan_rate(data, verify), lambda: _store_scan_rate(data))
    _read_costs(report, "get", "point reads/s", "reads/s", "RocksStore.get",
                lambda verify: _rdict_get_rate(data, verify), lambda: _store_get_rate(data))

    def open_rw() -> None:
        RocksStore(data).close()

    def open_plain() -> None:
        Rdict(str(data), Options(raw_mode=True), column_families={
            name: Options(raw_mode=True) for name in Rdict.list_cf(str(data))}).close()

    report.metric("open_plain_ms", "open read-write, rocksdict", statistics.median(
        _open_ms(data, open_plain) for _ in range(ROUNDS)), "ms")
    report.metric("open_guarded_ms", "open read-write, RocksStore (file checks, read-only probe, witness)",
                  statistics.median(_open_ms(data, open_rw) for _ in range(ROUNDS)), "ms")
    with RocksStore(data, read_only=True) as reread:
        report.check(sum(1 for _ in reread.scan(STATE, b"row/")) == ROWS, f"all {ROWS} rows read back")
    report.check(os.path.exists(data / "PORTO-WITNESS"), "the witness file was written")

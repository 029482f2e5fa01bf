"""The storage fault suite: damaged copies of a real ledger never give a wrong answer or lose a file.

Two ledgers are built by a real owner process from the demo scenario, with a
flush half way so every column family has several SST files: one closed
cleanly, one SIGKILLed with commands still only in its write-ahead log. Each
fault is injected into a fresh copy, then every read verb runs on it: ``head``,
``export`` (and ``verify-export`` of what it wrote) and ``verify``. Each case
must be harmless (every verb gives exactly the pristine answer and export) or
detected (a verb refuses with a stable code); a verb that answers differently,
or fails without a stable code, is silent. No file that was in the directory
may change or vanish. The same cases, and damage only the owner's own checks
see, are opened by ``LedgerOwner.open`` as a restarted console would: it opens
at the acknowledged head or refuses with a storage code, every file as it was.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

from ledger_engine import cli as ledger_cli
from ledger_engine.application.journal_tree import LAYOUT_KEY
from ledger_engine.application.owner import WRITER_KEY, LedgerOwner
from ledger_engine.checkpoint.integrity import VERIFIED_FILE, last_verification
from ledger_engine.errors import STORAGE_CODES, ErrorCode, LedgerError
from ledger_engine.keys import seq20
from ledger_engine.layout import JOURNAL, META
from ledger_engine.storage.rocks import RocksStore
from tests.storage.conftest import SUMMARY_LINES
from tests.support import cli

pytestmark = [pytest.mark.slow_kill, pytest.mark.durable]

REFUSALS = {str(code) for code in STORAGE_CODES} | {str(ErrorCode.VERIFICATION_FAILED)}

# Builds a ledger as its owner would: the demo scenario, a flush half way, then a clean close or SIGKILL.
_BUILD = r"""
import os, signal, sys
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.canonical import parse_json

data, stream, ending = sys.argv[1], sys.argv[2], sys.argv[3]
lines = open(stream, "rb").read().splitlines()
owner = LedgerOwner.open(data)
for number, line in enumerate(lines, start=1):
    owner.submit(parse_json(line))
    if number == len(lines) // 2:
        owner.at_boundary(lambda store: store.flush())
print(owner.head().sequence, owner.head().entry_hash, flush=True)
if ending == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
owner.close()
"""


@dataclass(frozen=True)
class Built:
    data: Path
    acknowledged: tuple[int, str]
    answers: dict[str, Any]  # verb -> what the pristine copy answers


def build(root: Path, stream: Path, ending: str) -> Built:
    data = root / f"ledger-{ending}"
    cli.init(data)
    child = subprocess.run([sys.executable, "-c", _BUILD, str(data), str(stream), ending],
                           capture_output=True, timeout=cli.CHILD_TIMEOUT_S)
    assert child.returncode == (-signal.SIGKILL if ending == "kill" else 0), child.stderr.decode()[-2000:]
    sequence, entry_hash = child.stdout.split()
    pristine = root / f"pristine-{ending}"
    shutil.copytree(data, pristine)
    answers = run_verbs(pristine, root / f"pristine-{ending}-out")
    assert all(outcome == "ok" for outcome, _ in answers.values()), answers
    assert answers["head"][1][:2] == (int(sequence), entry_hash.decode())
    return Built(data, (int(sequence), entry_hash.decode()), answers)


def in_process(*argv: object) -> tuple[int, list[dict[str, Any]]]:
    """``porto-ledger`` in this process: its exit status and printed objects; a crash is a crash."""
    printed: list[dict[str, Any]] = []
    original = ledger_cli.emit
    ledger_cli.emit = lambda value, stream=None: printed.append(value)
    try:
        status = ledger_cli.main([str(arg) for arg in argv])
    finally:
        ledger_cli.emit = original
    return status, printed


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(root.iterdir()) if path.is_file()}


def run_verbs(data: Path, out: Path) -> dict[str, tuple[str, Any]]:
    """Each verb's ("ok", comparable answer) or ("refused", code) or ("crashed", what)."""
    answers: dict[str, tuple[str, Any]] = {}

    def verb(name: str, *argv: object, answer: Callable[[dict[str, Any]], Any]) -> bool:
        try:
            status, printed = in_process(*argv)
        except Exception as error:  # a traceback instead of an answer
            answers[name] = ("crashed", f"{type(error).__name__}: {error}")
            return False
        last = printed[-1] if printed else {}
        if status == 0:
            answers[name] = ("ok", answer(last))
        elif last.get("code") in REFUSALS:
            answers[name] = ("refused", last["code"])
        else:
            answers[name] = ("crashed", (status, last))
        return status == 0

    verb("head", "--data", data, "head",
         answer=lambda line: (line["sequence"], line["entry_hash"], line["logical_state_hash"]))
    # An export journals its access in the ledger it exports: it runs on a copy, so the damaged files stay as
    # they are for the other verbs and the destroyed-file check.
    shutil.copytree(data, out / "exported-ledger")
    if verb("export", "--data", out / "exported-ledger", "export", out / "export", "--actor", "demo-auditor-1",
            answer=lambda line: line["logical_state_hash"]):
        answers["export files"] = ("ok", tree_bytes(out / "export"))
        verb("verify-export", "verify-export", out / "export", answer=lambda line: line["logical_state_hash"])
    verb("verify", "--data", data, "verify",
         answer=lambda line: (line["sequence"], line["entry_hash"], line["logical_state_hash"], line["keys"]))
    return answers


def flip(offset: Callable[[int], int]) -> Callable[[Path], None]:
    def inject(path: Path) -> None:
        data = bytearray(path.read_bytes())
        data[offset(len(data))] ^= 0xFF
        path.write_bytes(data)
    return inject


def truncate(new_size: Callable[[int], int]) -> Callable[[Path], None]:
    return lambda path: os.truncate(path, max(0, new_size(path.stat().st_size)))


def faults_for(data: Path) -> list[tuple[str, str, Callable[[Path], None]]]:
    """(label, file, injection): every SST flipped three ways and deleted, CURRENT, MANIFEST, the WAL."""
    cases = []
    for sst in sorted(data.glob("*.sst")):
        cases += [(f"{sst.name} flipped in the middle", sst.name, flip(lambda size: size // 2)),
                  (f"{sst.name} flipped in the footer", sst.name, flip(lambda size: size - 8)),
                  (f"{sst.name} flipped at the start", sst.name, flip(lambda size: 0)),
                  (f"{sst.name} deleted", sst.name, Path.unlink)]
    manifest = (data / "CURRENT").read_text().strip()
    cases += [("CURRENT deleted", "CURRENT", Path.unlink), (f"{manifest} deleted", manifest, Path.unlink),
              # RocksDB reads a MANIFEST cut short as ending early: the flushes recorded after the cut are lost.
              (f"{manifest} without its last byte", manifest, truncate(lambda size: size - 1)),
              (f"{manifest} without its last 200 bytes", manifest, truncate(lambda size: size - 200)),
              (f"{manifest} truncated to half", manifest, truncate(lambda size: size // 2))]
    for wal in sorted(log for log in data.glob("*.log") if log.stat().st_size):
        cases += [(f"{wal.name} truncated by 1 byte", wal.name, truncate(lambda size: size - 1)),
                  (f"{wal.name} truncated by 4 KiB", wal.name, truncate(lambda size: size - 4096)),
                  (f"{wal.name} truncated to half", wal.name, truncate(lambda size: size // 2)),
                  (f"{wal.name} flipped in the middle", wal.name, flip(lambda size: size // 2))]
    return cases


def classify(answers: dict[str, tuple[str, Any]], pristine: dict[str, tuple[str, Any]]) -> str:
    if any(outcome == "crashed" or (outcome == "ok" and answer != pristine[verb][1])
           for verb, (outcome, answer) in answers.items()):
        return "silent"
    return "detected" if any(outcome == "refused" for outcome, _ in answers.values()) else "harmless"


def file_hashes(root: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in root.iterdir() if path.is_file()}


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory) -> list[Built]:
    root = tmp_path_factory.mktemp("faults")
    stream = cli.write_stream(root / "demo.jsonl", cli.demo_lines(3, listeners=3, days=1))
    return [build(root, stream, "close"), build(root, stream, "kill")]


def test_every_storage_fault_is_harmless_or_detected_and_destroys_nothing(ledgers, tmp_path):
    tally: Counter = Counter()
    failures = []
    for built in ledgers:
        assert len(list(built.data.glob("*.sst"))) >= 6, "the suite needs several SSTs"
        for number, (label, name, inject) in enumerate(faults_for(built.data)):
            case = tmp_path / f"{built.data.name}-{number}"
            shutil.copytree(built.data, case / "ledger")
            inject(case / "ledger" / name)
            before = file_hashes(case / "ledger")
            answers = run_verbs(case / "ledger", case)
            after = file_hashes(case / "ledger")
            kind = classify(answers, built.answers)
            tally["injected"] += 1
            tally[kind] += 1
            destroyed = [file for file, digest in before.items() if after.get(file) != digest]
            tally["destroyed"] += bool(destroyed)
            if kind == "silent" or destroyed:
                failures.append((built.data.name, label, answers, destroyed))
            shutil.rmtree(case)
    SUMMARY_LINES.append(f"storage faults: {tally['injected']} injected, {tally['harmless']} harmless, "
                         f"{tally['detected']} detected, {tally['silent']} silent, {tally['destroyed']} destroyed")
    assert not failures, failures[:3]
    assert tally["detected"] > 0 and tally["injected"] == tally["harmless"] + tally["detected"]


def test_a_truncated_wal_of_acknowledged_commands_is_refused_as_rolled_back(ledgers, tmp_path):
    killed = ledgers[1]
    copy = tmp_path / "ledger"
    shutil.copytree(killed.data, copy)
    wal = max(copy.glob("*.log"), key=lambda log: log.stat().st_size)
    os.truncate(wal, wal.stat().st_size // 2)
    status, printed = in_process("--data", copy, "head")
    assert (status, printed[-1]["code"]) == (4, "STORAGE_ROLLED_BACK")
    assert "write" in printed[-1]["detail"] and str(copy) in printed[-1]["detail"]


def test_a_deleted_current_names_what_is_missing_and_no_verb_creates_a_database(ledgers, tmp_path):
    copy = tmp_path / "ledger"
    shutil.copytree(ledgers[0].data, copy)
    (copy / "CURRENT").unlink()
    before = file_hashes(copy)
    for argv in (["head"], ["verify"], ["export", tmp_path / "export"], ["rebuild-indexes"],
                 ["promote", "--reason", "test"], ["backup", tmp_path / "backup"]):
        status, printed = in_process("--data", copy, *argv)
        assert status in (1, 4) and printed[-1]["code"] == "STORAGE_INCOMPLETE", (argv, printed)
        assert printed[-1]["detail"] == f"CURRENT is missing from {copy}"
    after = file_hashes(copy)
    assert {name: after[name] for name in before} == before and not (copy / "CURRENT").exists()
    assert set(after) - set(before) == {VERIFIED_FILE}  # verify records its failure beside the files


def test_verify_records_when_it_last_ran_and_what_it_found(ledgers, tmp_path):
    copy = tmp_path / "ledger"
    shutil.copytree(ledgers[0].data, copy)
    assert in_process("--data", copy, "verify")[0] == 0
    recorded = last_verification(copy)
    assert (recorded["ok"], recorded["sequence"]) == (True, ledgers[0].acknowledged[0]) and recorded["at_ms"] > 0
    index_sst = max(copy.glob("*.sst"), key=lambda sst: sst.stat().st_size)
    flip(lambda size: size // 2)(index_sst)
    status, printed = in_process("--data", copy, "verify")
    assert status == 1 and printed[-1]["code"] in ("STORAGE_CORRUPT", "STORAGE_INCOMPLETE")
    assert last_verification(copy) == {**last_verification(copy), "ok": False, "code": printed[-1]["code"]}


def rewrite(*ops: tuple[str, bytes, bytes | None]) -> Callable[[Path], None]:
    """Damage only the owner's own checks see: rows of a database RocksDB opens without complaint."""
    def inject(data: Path) -> None:
        with RocksStore(data) as store:
            store.write(ops)
    return inject


def owner_faults_for(built: Built) -> list[tuple[str, Callable[[Path], None]]]:
    """(label, injection into the ledger directory): the storage faults, and rows the owner checks on opening."""
    head = built.acknowledged[0]
    cases = [(label, lambda data, name=name, inject=inject: inject(data / name))
             for label, name, inject in faults_for(built.data)]
    return cases + [
        ("the head's journal entry deleted", rewrite((JOURNAL, seq20(head).encode(), None))),
        ("the head's journal entry torn", rewrite((JOURNAL, seq20(head).encode(), b'{"envelope":'))),
        ("the writer record torn", rewrite((META, WRITER_KEY, b'{"generation'))),
        ("a journal entry deleted where no journal tree is kept",
         rewrite((META, LAYOUT_KEY, None), (JOURNAL, seq20(head // 2).encode(), None))),
    ]


def open_owner(data: Path) -> tuple[str, Any]:
    """("opened", head) or ("refused", code), as a restarted console opens the ledger; a crash is a crash."""
    try:
        owner = LedgerOwner.open(data)
    except LedgerError as error:
        return "refused", str(error.code)
    head = (owner.head().sequence, owner.head().entry_hash)
    try:
        owner.close()
    except LedgerError as error:  # closing flushes and compacts: damage in a table the open never read is met here
        assert error.code in STORAGE_CODES, error
    return "opened", head


def test_an_owner_opens_a_damaged_copy_at_its_head_or_refuses_it_with_a_storage_code_changing_no_file(
        ledgers, tmp_path):
    tally: Counter = Counter()
    failures = []
    for built in ledgers:
        for number, (label, inject) in enumerate(owner_faults_for(built)):
            case = tmp_path / f"{built.data.name}-{number}"
            shutil.copytree(built.data, case)
            inject(case)
            before = file_hashes(case)
            outcome, answer = open_owner(case)
            tally[outcome] += 1
            if outcome == "opened" and answer != built.acknowledged:
                failures.append((built.data.name, label, "opened short", answer))
            if outcome == "refused" and (answer not in {str(code) for code in STORAGE_CODES}
                                         or file_hashes(case) != before):
                failures.append((built.data.name, label, answer, sorted(set(before.items()) ^ set(file_hashes(case).items()))))
            shutil.rmtree(case)
    SUMMARY_LINES.append(f"owner opens of damaged ledgers: {tally['opened']} opened at their head, "
                         f"{tally['refused']} refused untouched, {len(failures)} failed")
    assert not failures, failures[:3]
    assert tally["refused"] > 0


def test_a_manifest_that_lost_its_tail_is_refused_and_keeps_the_tables_it_no_longer_lists(ledgers, tmp_path):
    for built in ledgers:
        copy = tmp_path / built.data.name
        shutil.copytree(built.data, copy)
        manifest = copy / (copy / "CURRENT").read_text().strip()
        os.truncate(manifest, manifest.stat().st_size - 200)
        before = file_hashes(copy)
        with pytest.raises(LedgerError) as refused:
            LedgerOwner.open(copy)
        assert refused.value.code == ErrorCode.STORAGE_CORRUPT
        assert f"{manifest.name} in {copy} ends in a torn record" in refused.value.detail
        assert file_hashes(copy) == before
        status, printed = in_process("--data", copy, "head")
        assert (status, printed[-1]["code"]) == (4, "STORAGE_CORRUPT")


def test_a_table_a_flush_left_before_its_manifest_record_was_written_does_not_stop_the_owner(ledgers, tmp_path):
    for built in ledgers:
        copy = tmp_path / built.data.name
        shutil.copytree(built.data, copy)
        # A flush killed after writing its table and before recording it: the rows are still in the WAL.
        newest = max(copy.glob("*.sst"))
        shutil.copyfile(newest, copy / "000999.sst")
        with LedgerOwner.open(copy) as owner:
            assert (owner.head().sequence, owner.head().entry_hash) == built.acknowledged
            assert owner.halt_cause() is None
        assert not (copy / "000999.sst").exists()  # RocksDB removes a table no record lists
        assert in_process("--data", copy, "head")[1][-1]["logical_state_hash"] == built.answers["head"][1][2]

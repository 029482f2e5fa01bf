"""An export's form is checked in a second process beside its content, and the verdict is the same either way."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Callable

import orjson
import pytest
import rfc8785

from ledger_engine.checkpoint import form
from ledger_engine.checkpoint.export import DELTAS_FILE, EVENTS_FILE, JOURNAL_FILE, METADATA_FILE, ROWS_FILE
from ledger_engine.checkpoint.verify import VerificationError, verify_export


@pytest.fixture
def children(monkeypatch) -> list:
    """Every form-check process started, recorded."""
    started, start = [], form._start_child

    def recorded(root, metadata):
        child = start(root, metadata)
        started.append(child)
        return child

    monkeypatch.setattr(form, "_start_child", recorded)
    return started


@pytest.fixture(params=["in a second process", "in the caller's"])
def where(request, monkeypatch, children) -> str:
    monkeypatch.setattr(form, "PARALLEL_FROM_BYTES", 0 if request.param == "in a second process" else 1 << 62)
    return request.param


def refused(export: Path, where: str, children: list) -> VerificationError:
    with pytest.raises(VerificationError) as refusal:
        verify_export(export)
    assert len(children) == (1 if where == "in a second process" else 0)
    assert all(child.returncode == 0 for child in children)
    return refusal.value


def rewrite_line(export: Path, name: str, pick: Callable[[list[bytes]], int], spell: Callable[[bytes], bytes]) -> str:
    """Respell one line and record the file's new hash, as a careful forger would; returns the line's item."""
    lines = (export / name).read_bytes().splitlines(keepends=True)
    number = pick(lines)
    lines[number] = spell(lines[number].rstrip(b"\n")) + b"\n"
    data = b"".join(lines)
    (export / name).write_bytes(data)
    metadata = orjson.loads((export / METADATA_FILE).read_bytes())
    metadata["files"][name].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (export / METADATA_FILE).write_bytes(rfc8785.dumps(metadata) + b"\n")
    return f"{name}:{number + 1}"


def last(lines: list[bytes]) -> int:
    return len(lines) - 1


def with_a_float(raw: bytes) -> bytes:
    value = orjson.loads(raw)
    value["sequence"] = float(value["sequence"]) + 0.5
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def spaced(raw: bytes) -> bytes:
    return raw.replace(b":", b": ", 1)


def edited_envelope(raw: bytes) -> bytes:
    entry = orjson.loads(raw)
    entry["envelope"]["admitted_at_ms"] += 1
    return rfc8785.dumps(entry)


def test_the_untouched_export_verifies_alike_either_way(export, where, children):
    assert verify_export(export)["sequence"] > 0
    assert len(children) == (1 if where == "in a second process" else 0)


@pytest.mark.parametrize("name, spell, reason", [
    (DELTAS_FILE, with_a_float, "not canonical JSON: floating-point numbers are not accepted"),
    (EVENTS_FILE, spaced, "not canonical JSON"),
    (ROWS_FILE, lambda raw: raw[:-1], "not valid JSON"),
], ids=["a float", "whitespace", "cut short"])
def test_a_line_of_the_wrong_form_is_named_either_way(export, where, children, name, spell, reason):
    item = rewrite_line(export, name, last, spell)
    error = refused(export, where, children)
    assert (error.item, error.reason) == (item, reason)


def test_a_file_unlike_its_hash_is_named_either_way(export, where, children):
    data = bytearray((export / JOURNAL_FILE).read_bytes())
    data[len(data) // 2] ^= 0x01
    (export / JOURNAL_FILE).write_bytes(bytes(data))
    error = refused(export, where, children)
    assert (error.item, error.reason) == (JOURNAL_FILE, "file hash does not match metadata")


def test_a_pipe_in_place_of_a_file_stalls_neither_check(export, where, children):
    (export / EVENTS_FILE).unlink()
    os.mkfifo(export / EVENTS_FILE)
    error = refused(export, where, children)
    assert (error.item, error.reason) == (EVENTS_FILE, "not a readable regular file: not a regular file")


def test_a_fault_of_content_alone_is_named_either_way(export, where, children):
    item = rewrite_line(export, JOURNAL_FILE, lambda lines: 1, edited_envelope)
    error = refused(export, where, children)
    assert (error.item, error.reason) == (item, "entry hash does not match its contents")


def test_a_fault_of_form_is_named_before_an_earlier_fault_of_content(export, where, children):
    rewrite_line(export, JOURNAL_FILE, lambda lines: 1, edited_envelope)
    item = rewrite_line(export, EVENTS_FILE, last, spaced)
    error = refused(export, where, children)
    assert (error.item, error.reason) == (item, "not canonical JSON")


@pytest.mark.parametrize("command", [
    [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
    [sys.executable, "-c", "import sys; sys.stdout.write('{\"item\": 1}')"],
    [sys.executable, "-c", "print('null'); raise SystemExit(3)"],
    [sys.executable, "-c", "import sys, time; sys.stdout.write('null' * 100_000); time.sleep(60)"],
    ["/nonexistent/python"],
], ids=["killed", "answers nonsense", "fails", "never answers", "cannot start"])
def test_a_form_check_process_that_gives_no_verdict_is_done_again_in_the_caller(export, monkeypatch, children,
                                                                                command):
    """Only a clean answer from the child counts; anything else, and the form is checked here: slower, not skipped."""
    monkeypatch.setattr(form, "PARALLEL_FROM_BYTES", 0)
    monkeypatch.setattr(form, "CHILD_GRACE_S", 0.25)  # a child slower than this is only checked again here
    monkeypatch.setattr(form, "_child_command", lambda: command)
    assert verify_export(export)["sequence"] > 0
    item = rewrite_line(export, DELTAS_FILE, last, with_a_float)
    with pytest.raises(VerificationError) as refusal:
        verify_export(export)
    assert refusal.value.item == item
    assert all(child is None or child.returncode is not None for child in children)  # none left running


def test_the_form_check_imports_nothing_from_an_export_it_is_run_in(export, monkeypatch, children):
    """An export may hold a module named like one the check imports; run from inside it, the check must not
    load it, or the export could answer for itself."""
    marker = export.parent / "planted-module-ran"
    (export / "orjson.py").write_text(f"import sys, pathlib\npathlib.Path({str(marker)!r}).touch()\n"
                                      "sys.stdout.write('null')\nraise SystemExit(0)\n")
    monkeypatch.chdir(export)
    monkeypatch.setattr(form, "PARALLEL_FROM_BYTES", 0)
    item = rewrite_line(export, DELTAS_FILE, last, with_a_float)
    with pytest.raises(VerificationError) as refusal:
        verify_export(".")
    assert refusal.value.item == item and not marker.exists()
    assert len(children) == 1 and children[0].returncode == 0


def test_lines_read_after_the_form_check_read_them_must_be_the_bytes_it_checked(export, monkeypatch, children):
    """The child checks its own reading of each file; the caller's reading must hash to the same metadata, so a
    file swapped in between (or a disk that answers differently) cannot bring in lines nobody checked."""
    monkeypatch.setattr(form, "PARALLEL_FROM_BYTES", 0)
    lines = (export / DELTAS_FILE).read_bytes().splitlines(keepends=True)
    lines[1] = with_a_float(lines[1].rstrip(b"\n")) + b"\n"  # "sequence": 1.5 is not 1, so say 1.0
    lines[1] = lines[1].replace(b'"sequence":1.5', b'"sequence":1.0')
    swapped = b"".join(lines)
    start = form._start_child

    def swap_once_checked(root, metadata):
        child = start(root, metadata)
        child.wait()
        (export / DELTAS_FILE).write_bytes(swapped)
        return child

    monkeypatch.setattr(form, "_start_child", swap_once_checked)
    with pytest.raises(VerificationError) as refusal:
        verify_export(export)
    assert (refusal.value.item, refusal.value.reason) == (DELTAS_FILE, "file hash does not match metadata")


def test_the_second_process_is_started_from_a_megabyte_of_lines(export, children):
    metadata = orjson.loads((export / METADATA_FILE).read_bytes())
    line_bytes = sum(metadata["files"][name]["bytes"] for name in form.LINE_FILES)
    with form.FormCheck(export, metadata) as check:
        check.require()
    assert check.in_child is (line_bytes >= form.PARALLEL_FROM_BYTES) and len(children) == int(check.in_child)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(form, "PARALLEL_FROM_BYTES", line_bytes)
        with form.FormCheck(export, metadata) as check:
            check.require()
        assert check.in_child and children[-1].returncode == 0
        patch.setattr(form, "MAX_FILES_ARGUMENT", len(orjson.dumps(metadata["files"])) - 1)
        with form.FormCheck(export, metadata) as check:  # a list of files no export has is not passed on
            check.require()
        assert not check.in_child and children[-1] is None

"""Signed checkpoints (C2SP tlog-checkpoint and signed-note) and the statement files that carry them.

A statement file is "verified" only when the pinned key signed the checkpoint and the statement's proof
reaches the signed root; a file made up whole, or signed by anyone else, never is.
"""

from __future__ import annotations

import base64
import hashlib

import pytest

from ledger_engine.errors import LedgerError
from ledger_engine.merkle import ProofRejected, check_statement_file
from ledger_engine.merkle.checkpoint import Checkpoint, CheckpointSigner, VerifierKey, parse_note, verify_note
from ledger_engine.merkle.document import MAX_DOCUMENT_BYTES, read_document
from ledger_engine.merkle.statement import CHECKS, statement_file_bytes
from tests.merkle import checkpoint_keys
from tests.merkle.statement_vectors import DIRECTORY, committed, forged_file
from tests.support.cli import porto_ledger

ROOT = bytes(range(32))


def test_a_note_is_the_c2sp_checkpoint_body_a_blank_line_and_one_signature_line_byte_for_byte():
    signer = checkpoint_keys.signer()
    public = signer.private_key.public_key().public_bytes_raw()
    note = signer.sign(Checkpoint("porto.test/statements", 7, ROOT))
    body = f"porto.test/statements\n7\n{base64.b64encode(ROOT).decode()}\n"
    key_hash = hashlib.sha256(b"porto.test/statements\n\x01" + public).digest()[:4]
    signature = signer.private_key.sign(body.encode())
    assert note == f"{body}\n\u2014 porto.test/statements {base64.b64encode(key_hash + signature).decode()}\n"
    assert note.encode().count("\u2014 ".encode()) == 1 and "\u2014".encode() == b"\xe2\x80\x94"


def test_a_note_round_trips_through_parse_and_verify():
    signer = checkpoint_keys.signer()
    checkpoint = Checkpoint("porto.test/statements", 123456, ROOT)
    note = signer.sign(checkpoint)
    parsed, [line] = parse_note(note)
    assert parsed == checkpoint and parsed.body() + "\n" == note.rpartition("\n\n")[0] + "\n\n"
    assert (line.name, line.key_hash) == (signer.name, signer.verifier_key.key_hash)
    assert verify_note(note, signer.verifier_key) == checkpoint


def test_a_verifier_key_is_published_in_the_signed_note_form_and_read_back():
    key = checkpoint_keys.signer().verifier_key
    name, key_hash, encoded = key.encoded().split("+", 2)
    assert (name, key_hash) == (key.name, key.key_hash.hex())
    assert base64.b64decode(encoded) == b"\x01" + key.public_key
    assert VerifierKey.parse(key.encoded()) == key


@pytest.mark.parametrize("text", ["", "porto.test/statements", "porto.test/statements+00000000+AQ==",
                                  "porto.test/statements+deadbeef+" + base64.b64encode(b"\x01" + b"k" * 32).decode()])
def test_a_malformed_verifier_key_is_refused(text):
    with pytest.raises(LedgerError) as refused:
        VerifierKey.parse(text)
    assert refused.value.code == "MALFORMED_ENVELOPE"


def test_a_note_signed_by_a_stranger_under_porto_s_name_or_altered_is_refused():
    pinned = checkpoint_keys.signer().verifier_key
    stranger = checkpoint_keys.stranger().sign(Checkpoint("porto.test/statements", 7, ROOT))
    with pytest.raises(ProofRejected) as refused:
        verify_note(stranger, pinned)
    assert (refused.value.reason, refused.value.field) == ("UNKNOWN_KEY", "checkpoint")
    altered = checkpoint_keys.signer().sign(Checkpoint("porto.test/statements", 7, ROOT)).replace("\n7\n", "\n8\n")
    with pytest.raises(ProofRejected) as refused:
        verify_note(altered, pinned)
    assert refused.value.reason == "SIGNATURE_INVALID"


def test_a_phishing_file_made_up_whole_is_never_verified():
    """999,999 USDC, "paid", an invented root and anchor: every hash agrees, and no Porto key signed it."""
    pinned = checkpoint_keys.signer().verifier_key
    unsigned = check_statement_file(statement_file_bytes(forged_file()), pinned)
    assert unsigned["verdict"] == "not verified" and unsigned["ok"] is False
    assert unsigned["reason"] == "NO_CHECKPOINT"
    assert [(c["check"], c["result"]) for c in unsigned["checks"]] == [
        ("file", "passed"), ("leaf", "passed"), ("root", "passed"), ("checkpoint", "not made"),
        ("signature", "not made"), ("parts", "not made"), ("anchor", "not made")]
    signed = check_statement_file(statement_file_bytes(forged_file(checkpoint_keys.stranger())), pinned)
    assert (signed["verdict"], signed["reason"], signed["field"]) == ("failed", "UNKNOWN_KEY", "checkpoint")
    assert [c["result"] for c in signed["checks"]] == ["passed"] * 4 + ["failed", "not made", "not made"]


def test_a_genuine_file_without_a_pinned_key_is_not_verified_and_says_which_check_was_not_made():
    raw = (DIRECTORY / "valid-middle-leaf.json").read_bytes()
    verdict = check_statement_file(raw)
    assert (verdict["verdict"], verdict["reason"]) == ("not verified", "NO_VERIFIER_KEY")
    assert {c["check"]: c["result"] for c in verdict["checks"]} == {
        "file": "passed", "leaf": "passed", "root": "passed", "checkpoint": "passed", "signature": "not made",
        "parts": "not made", "anchor": "not made"}
    assert check_statement_file(raw, checkpoint_keys.signer().verifier_key)["verdict"] == "verified"
    assert [c["check"] for c in verdict["checks"]] == list(CHECKS)


def test_nesting_past_the_ledger_s_depth_limit_is_refused_before_parsing_without_recursion():
    """A megabyte of nested arrays is TOO_DEEP, not a recursion error, whatever the interpreter's stack."""
    half = MAX_DOCUMENT_BYTES // 2
    for raw in (b"[" * MAX_DOCUMENT_BYTES, b"[" * half + b"]" * half, b'{"a":' * 40 + b"1" + b"}" * 40):
        verdict = check_statement_file(raw, checkpoint_keys.signer().verifier_key)
        assert (verdict["verdict"], verdict["reason"], verdict["field"]) == ("failed", "TOO_DEEP", "")
    with pytest.raises(ProofRejected) as shallow_enough:
        read_document(b"[" * 31 + b"{}" + b"]" * 31)  # 32 levels: read, then refused as not an object
    assert shallow_enough.value.reason == "MALFORMED"


def test_verify_statement_exits_0_verified_1_failed_5_not_verified_and_2_for_a_bad_key(tmp_path):
    key = checkpoint_keys.signer().verifier_key.encoded()
    verified = porto_ledger("verify-statement", "--verifier-key", key, DIRECTORY / "valid-last-leaf.json")
    assert (verified.status, verified.last["verdict"], verified.last["ok"]) == (0, "verified", True)
    assert verified.last["leaf_index"] == committed()["valid-last-leaf.json"][1]["leaf_index"]
    refused = porto_ledger("verify-statement", "--verifier-key", key, DIRECTORY / "tampered-path-siblings-swapped.json")
    assert refused.status == 1
    assert {k: refused.last[k] for k in ("ok", "code", "reason", "field", "verdict")} == {
        "ok": False, "code": "VERIFICATION_FAILED", "reason": "ROOT_MISMATCH", "field": "batch_root",
        "verdict": "failed"}
    stranger = porto_ledger("verify-statement", "--verifier-key", key, DIRECTORY / "forged-signed-by-another-key.json")
    assert (stranger.status, stranger.last["reason"]) == (1, "UNKNOWN_KEY")
    forged = porto_ledger("verify-statement", "--verifier-key", key, DIRECTORY / "forged-unsigned.json")
    assert (forged.status, forged.last["verdict"], forged.last["reason"]) == (5, "not verified", "NO_CHECKPOINT")
    unpinned = porto_ledger("verify-statement", DIRECTORY / "valid-last-leaf.json")
    assert (unpinned.status, unpinned.last["reason"]) == (5, "NO_VERIFIER_KEY")
    bad_key = porto_ledger("verify-statement", "--verifier-key", "not-a-key", DIRECTORY / "valid-last-leaf.json")
    assert (bad_key.status, bad_key.last["code"]) == (2, "MALFORMED_ENVELOPE")
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * MAX_DOCUMENT_BYTES)
    too_deep = porto_ledger("verify-statement", "--verifier-key", key, deep)
    assert (too_deep.status, too_deep.last["reason"]) == (1, "TOO_DEEP")


def test_a_signer_refuses_a_seed_that_is_not_32_bytes_in_hex_or_a_name_with_a_space():
    for name, seed in (("porto.test/statements", "ab" * 31), ("porto.test/statements", "zz" * 32),
                       ("porto test", checkpoint_keys.SEED_HEX), ("porto+test", checkpoint_keys.SEED_HEX)):
        with pytest.raises(LedgerError):
            CheckpointSigner.from_seed_hex(name, seed)

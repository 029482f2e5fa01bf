"""Journal proof documents: built from entry hashes, checked by ``verify_proof_document`` and ``verify-proof``."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest

from ledger_engine.merkle import ProofRejected, prove_consistency, prove_inclusion, verify_proof_document
from ledger_engine.merkle.document import encode_document
from ledger_engine.merkle.journal import journal_leaf_hash, journal_nodes
from ledger_engine.merkle import tree
from tests.merkle import oracle
from tests.support.cli import porto_ledger

ENTRY_HASHES = [hashlib.sha256(b"entry %d" % sequence).hexdigest() for sequence in range(1, 41)]


def rejection(document) -> tuple[str, str]:
    with pytest.raises(ProofRejected) as raised:
        verify_proof_document(document)
    return str(raised.value.reason), raised.value.field


def test_the_journal_tree_leaves_are_the_entry_hash_bytes():
    assert journal_leaf_hash(ENTRY_HASHES[0]) == tree.leaf_hash(bytes.fromhex(ENTRY_HASHES[0]))
    assert journal_nodes(ENTRY_HASHES).root() == oracle.mth([bytes.fromhex(h) for h in ENTRY_HASHES])


def test_an_inclusion_document_proves_an_entry_at_a_past_size():
    document = prove_inclusion(ENTRY_HASHES, 7, at=12)
    assert (document["sequence"], document["entry_hash"], document["tree_size"]) == (7, ENTRY_HASHES[6], 12)
    assert document["root"] == oracle.mth([bytes.fromhex(h) for h in ENTRY_HASHES[:12]]).hex()
    verdict = verify_proof_document(encode_document(document))
    assert (verdict["ok"], verdict["proof"], verdict["root"]) == (True, "inclusion", document["root"])


def test_a_consistency_document_proves_a_checkpoint_is_a_prefix_of_a_later_one():
    document = prove_consistency(ENTRY_HASHES, 13, 40)
    verdict = verify_proof_document(encode_document(document))
    assert (verdict["first_size"], verdict["second_size"]) == (13, 40)
    assert document["first_root"] == journal_nodes(ENTRY_HASHES[:13]).root().hex()


def test_every_entry_at_every_size_proves_and_verifies():
    for size in range(1, len(ENTRY_HASHES) + 1):
        for sequence in range(1, size + 1):
            verify_proof_document(prove_inclusion(ENTRY_HASHES, sequence, at=size))
        for first in range(0, size + 1):
            verify_proof_document(prove_consistency(ENTRY_HASHES, first, size))


def test_a_proof_for_an_entry_or_size_the_journal_does_not_have_is_refused():
    for sequence, at in ((0, None), (41, None), (5, 4), (5, 41)):
        with pytest.raises(ProofRejected) as raised:
            prove_inclusion(ENTRY_HASHES, sequence, at=at)
        assert raised.value.reason == "INDEX_OUT_OF_RANGE"
    with pytest.raises(ProofRejected) as raised:
        prove_consistency(ENTRY_HASHES, 10, 41)
    assert raised.value.reason == "SIZE_ORDER"


def edited(document: dict, **changes) -> dict:
    return {**document, **changes}


INCLUSION = prove_inclusion(ENTRY_HASHES, 9, at=30)
CONSISTENCY = prove_consistency(ENTRY_HASHES, 11, 30)


@pytest.mark.parametrize(("document", "reason", "field"), [
    (edited(INCLUSION, entry_hash=ENTRY_HASHES[9]), "ROOT_MISMATCH", "root"),
    (edited(INCLUSION, sequence=10), "ROOT_MISMATCH", "root"),
    (edited(INCLUSION, sequence=31), "INDEX_OUT_OF_RANGE", "sequence"),
    (edited(INCLUSION, sequence=0), "MALFORMED", "sequence"),
    (edited(INCLUSION, tree_size=64), "PROOF_LENGTH", "path"),
    (edited(INCLUSION, path=INCLUSION["path"][::-1]), "ROOT_MISMATCH", "root"),
    (edited(INCLUSION, path=INCLUSION["path"][:-1]), "PROOF_LENGTH", "path"),
    (edited(INCLUSION, root=CONSISTENCY["first_root"]), "ROOT_MISMATCH", "root"),
    (edited(INCLUSION, entry_hash=ENTRY_HASHES[8].upper()), "INVALID_HASH", "entry_hash"),
    (edited(INCLUSION, extra=1), "MALFORMED", "extra"),
    (edited(INCLUSION, version="porto:london:journal-inclusion:v0"), "UNSUPPORTED_VERSION", "version"),
    (edited(CONSISTENCY, first_root=CONSISTENCY["second_root"]), "FIRST_ROOT_MISMATCH", "first_root"),
    (edited(CONSISTENCY, second_root=CONSISTENCY["first_root"]), "SECOND_ROOT_MISMATCH", "second_root"),
    (edited(CONSISTENCY, first_size=12), "PROOF_LENGTH", "path"),
    (edited(CONSISTENCY, first_size=9), "FIRST_ROOT_MISMATCH", "first_root"),
    (edited(CONSISTENCY, first_size=31), "SIZE_ORDER", "second_size"),
    (edited(CONSISTENCY, path=[*CONSISTENCY["path"], CONSISTENCY["path"][0]]), "PROOF_LENGTH", "path"),
    (edited(CONSISTENCY, path=[]), "PROOF_LENGTH", "path"),
    ({k: v for k, v in CONSISTENCY.items() if k != "path"}, "MALFORMED", "path"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_a_tampered_document_is_refused_naming_what_failed(document, reason, field):
    assert rejection(document) == (reason, field)
    assert rejection(encode_document(document)) == (reason, field)


def test_a_document_must_be_its_own_canonical_bytes():
    assert rejection(orjson.dumps(INCLUSION, option=orjson.OPT_INDENT_2)) == ("NOT_CANONICAL", "")
    assert rejection(encode_document(INCLUSION)[:-20]) == ("NOT_JSON", "")
    assert rejection({**INCLUSION, "sequence": 9.0}) == ("NOT_CANONICAL", "")


def test_verify_proof_needs_no_ledger_and_exits_1_naming_the_failure(tmp_path: Path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_bytes(encode_document(CONSISTENCY))
    bad.write_bytes(encode_document(edited(INCLUSION, sequence=10)))
    accepted = porto_ledger("verify-proof", good)
    assert accepted.status == 0 and accepted.last["ok"] is True and accepted.last["proof"] == "consistency"
    refused = porto_ledger("verify-proof", bad)
    assert refused.status == 1
    assert {k: refused.last[k] for k in ("ok", "code", "reason", "field")} == {
        "ok": False, "code": "VERIFICATION_FAILED", "reason": "ROOT_MISMATCH", "field": "root"}

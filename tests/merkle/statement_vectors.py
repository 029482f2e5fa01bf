"""The statement-file test vectors in tests/merkle/vectors/statements/, valid, tampered and forged.

Both verifiers (``check_statement_file`` and the page's verify.js) are tested
against these files and ``expected.json``, with the test checkpoint key pinned
(tests/merkle/checkpoint_keys.py). The files are made here from a fixed
fixture batch; ``python -m tests.merkle.statement_vectors`` writes them again,
and a test checks the committed files are what this module makes.
"""

from __future__ import annotations

import base64
import copy
import hashlib
from pathlib import Path
from typing import Any, Callable

import orjson

from ledger_engine.canonical import canonical_bytes
from ledger_engine.merkle.statement import (
    StatementTree, check_statement_file, sign_statement_file, statement_file_bytes, statement_leaf_hash,
)
from tests.merkle import checkpoint_keys

DIRECTORY = Path(__file__).resolve().parent / "vectors" / "statements"
EXPECTED = DIRECTORY / "expected.json"
PERIOD = {"accounting_batch_id": "alloc-2026-11-fixture", "window_start_ms": 1793491200000,
          "window_end_ms": 1796083200000}
ANCHOR = {"chain": "SIMULATED (not a real chain)", "ledger_version": 48213,
          "transaction_hash": "0x" + hashlib.sha256(b"fixture anchor").hexdigest()}
PINNED = checkpoint_keys.signer().verifier_key


def proof_id(label: str) -> str:
    """A fixed stand-in for the random public proof ID."""
    return "pp-" + hashlib.sha256(f"fixture proof id {label}".encode()).hexdigest()[:24]


def artist(label: str, recipient: str, works: list[tuple[str, str, int, int]], status: str) -> dict[str, Any]:
    lines = [{"work_id": work, "title": title, "listened_ms": listened, "amount": str(amount)}
             for work, title, listened, amount in works]
    return _statement(label, recipient, "artist", lines, status)


def operator(label: str, recipient: str, nodes: list[tuple[str, int, int]], status: str) -> dict[str, Any]:
    lines = [{"node_id": node, "served_bytes": served, "amount": str(amount)} for node, served, amount in nodes]
    return _statement(label, recipient, "operator", lines, status)


def _statement(label: str, recipient: str, role: str, lines: list[dict[str, Any]], status: str) -> dict[str, Any]:
    total = sum(int(line["amount"]) for line in lines)
    payment = {"status": status, "paid_amount": str(total if status == "paid" else 0),
               "transaction_hash": "0x" + hashlib.sha256(f"fixture payment {label}".encode()).hexdigest()
               if status == "paid" else None}
    return {"public_proof_id": proof_id(label), "recipient_id": recipient, "role": role, "period": PERIOD,
            "asset": "USDC", "lines": lines, "total": str(total), "payment": payment}


def fixture_batch() -> list[dict[str, Any]]:
    """Seven recipients of one period (seven leaves: a tree that is not a power of two)."""
    return [
        artist("amara", "artist-amara", [("work-0012", "Saudade em Dó", 5_400_000, 1_250_000),
                                         ("work-0031", "Noite 🎵 Clara", 1_800_000, 416_667)], "paid"),
        artist("bento", "artist-bento", [("work-0007", "Maré \"Alta\"", 900_000, 208_333)], "reserved"),
        artist("carla", "artist-carla", [("work-0044", "Fado\\Lisboa\n(live)", 3_600_000, 833_334)], "paid"),
        artist("duarte", "artist-duarte", [], "unpaid"),
        operator("lisbon", "operator-lisbon-1", [("node-lis-1", 81_920_000_000, 95_000),
                                                 ("node-lis-2", 12_288_000_000, 14_250)], "paid"),
        operator("porto", "operator-porto-1", [("node-opo-1", 40_960_000_000, 47_500)], "unpaid"),
        artist("ines", "artist-ines", [("work-0101", "Ínsula", 7_200_000, 1_666_666)], "paid"),
    ]


def other_batch() -> list[dict[str, Any]]:
    """A later period: the same recipients under new proof IDs."""
    later = []
    for number, statement in enumerate(fixture_batch()):
        moved = copy.deepcopy(statement)
        moved["public_proof_id"] = proof_id(f"later-{number}")
        moved["period"] = {**PERIOD, "accounting_batch_id": "alloc-2026-12-fixture"}
        later.append(moved)
    return later


class Vectors:
    """The vectors as they are made: file name -> (bytes, expected verdict); variants start from ``middle``."""

    def __init__(self, middle: dict[str, Any]) -> None:
        self.middle = middle
        self.made: dict[str, tuple[bytes, dict[str, Any]]] = {}

    def valid(self, name: str, document: dict[str, Any], raw: bytes | None = None) -> None:
        raw = statement_file_bytes(document) if raw is None else raw
        self.made[name] = (raw, {"verdict": "verified", "leaf_index": document["leaf_index"],
                                 "tree_size": document["tree_size"]})

    def not_verified(self, name: str, document: dict[str, Any], reason: str) -> None:
        self.made[name] = (statement_file_bytes(document), {"verdict": "not verified", "reason": reason,
                                                            "field": "checkpoint"})

    def variant(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        document = copy.deepcopy(self.middle)
        change(document)
        return document

    def refused(self, name: str, reason: str, field: str, change: Callable[[dict[str, Any]], None] | None = None,
                raw: bytes | None = None) -> None:
        raw = statement_file_bytes(self.variant(change)) if raw is None else raw
        self.made[name] = (raw, {"verdict": "failed", "reason": reason, "field": field})


def vectors() -> dict[str, tuple[bytes, dict[str, Any]]]:
    """Every vector: file name -> (file bytes, expected verdict)."""
    tree, later = StatementTree.build(fixture_batch()), StatementTree.build(other_batch())
    ids = [s["public_proof_id"] for s in tree.statements]
    signer = checkpoint_keys.signer()
    middle = tree.statement_file(proof_id("amara"), ANCHOR, signer)  # an inner leaf, two lines, non-ASCII text
    made = Vectors(middle)
    made.valid("valid-first-leaf.json", tree.statement_file(ids[0], ANCHOR, signer))
    made.valid("valid-middle-leaf.json", middle)
    made.valid("valid-last-leaf.json", tree.statement_file(ids[-1], ANCHOR, signer))
    single = StatementTree.build(fixture_batch()[:1])
    made.valid("valid-single-statement.json",
               single.statement_file(single.statements[0]["public_proof_id"], ANCHOR, signer))
    made.valid("valid-no-trailing-newline.json", middle, raw=canonical_bytes(middle))
    made.not_verified("unsigned-version-1-file.json", tree.statement_file(proof_id("amara"), ANCHOR), "NO_CHECKPOINT")
    _tampered(made, tree, later, ids)
    _checkpoints(made, later)
    _forged(made)
    _malformed(made)
    return made.made


def forged_statement() -> dict[str, Any]:
    """A phishing statement: made up whole, 999,999 USDC, "paid", in a tree of its own."""
    return {"public_proof_id": "pp-forged-000000000000000001", "recipient_id": "artist-amara", "role": "artist",
            "period": PERIOD, "asset": "USDC", "total": "999999000000",
            "lines": [{"work_id": "work-0012", "title": "Saudade em Dó", "amount": "999999000000"}],
            "payment": {"status": "paid", "paid_amount": "999999000000",
                        "transaction_hash": "0x" + hashlib.sha256(b"forged payment").hexdigest()}}


FORGED_ANCHOR = {"chain": "SIMULATED (not a real chain)", "ledger_version": 99999,
                 "transaction_hash": "0x" + hashlib.sha256(b"forged anchor").hexdigest()}


def forged_file(signer=None) -> dict[str, Any]:
    """The forger's file: every hash in it agrees with every other, under a root nobody anchored."""
    forged = StatementTree.build([forged_statement(), *fixture_batch()[1:3]])
    return forged.statement_file(forged_statement()["public_proof_id"], FORGED_ANCHOR, signer)


def _forged(made: Vectors) -> None:
    made.not_verified("forged-unsigned.json", forged_file(), "NO_CHECKPOINT")
    made.refused("forged-signed-by-another-key.json", "UNKNOWN_KEY", "checkpoint",
                 raw=statement_file_bytes(forged_file(checkpoint_keys.stranger())))
    with_porto_checkpoint = {**forged_file(checkpoint_keys.stranger()), "checkpoint": made.middle["checkpoint"]}
    made.refused("forged-with-another-batch-checkpoint.json", "CHECKPOINT_MISMATCH", "checkpoint",
                 raw=statement_file_bytes(with_porto_checkpoint))


def _checkpoints(made: Vectors, later: StatementTree) -> None:
    middle, refused = made.middle, made.refused
    note = middle["checkpoint"]
    body, _, signature_line = note.rpartition("\n\n")
    prefix, _, encoded = signature_line.rstrip("\n").rpartition(" ")
    signature = bytearray(base64.b64decode(encoded))
    signature[-1] ^= 0x01
    flipped = f"{body}\n\n{prefix} {base64.b64encode(bytes(signature)).decode()}\n"
    other = later.statement_file(later.statements[0]["public_proof_id"], ANCHOR, checkpoint_keys.signer())

    def set_note(text: str) -> Callable[[dict[str, Any]], None]:
        return lambda document: document.__setitem__("checkpoint", text)

    refused("tampered-checkpoint-signature.json", "SIGNATURE_INVALID", "checkpoint", set_note(flipped))
    refused("tampered-checkpoint-of-another-batch.json", "CHECKPOINT_MISMATCH", "checkpoint",
            set_note(other["checkpoint"]))


    def claim_size_8(document: dict[str, Any]) -> None:
        document["tree_size"], document["checkpoint"] = 8, note.replace("\n7\n", "\n8\n", 1)

    # This leaf's path is the same in trees of 5 to 8 leaves, so a size claim passes the proof: the signed
    # checkpoint is what pins the size.
    refused("tampered-size-claim.json", "CHECKPOINT_MISMATCH", "checkpoint",
            lambda document: document.__setitem__("tree_size", 8))
    refused("tampered-size-claim-and-checkpoint-size.json", "SIGNATURE_INVALID", "checkpoint", claim_size_8)
    refused("malformed-checkpoint-missing.json", "MALFORMED", "checkpoint", lambda document: document.pop("checkpoint"))
    refused("malformed-checkpoint-hyphen.json", "MALFORMED", "checkpoint", set_note(note.replace("\u2014 ", "-- ")))
    refused("malformed-checkpoint-no-blank-line.json", "MALFORMED", "checkpoint", set_note(note.replace("\n\n", "\n")))
    refused("malformed-checkpoint-size-leading-zero.json", "MALFORMED", "checkpoint",
            set_note(note.replace("\n7\n", "\n07\n", 1)))
    refused("malformed-checkpoint-root-not-base64.json", "MALFORMED", "checkpoint",
            set_note(note.replace(body.split("\n")[2], middle["batch_root"], 1)))
    refused("malformed-checkpoint-not-a-string.json", "MALFORMED", "checkpoint", set_note(None))


def _tampered(made: Vectors, tree: StatementTree, later: StatementTree, ids: list[str]) -> None:
    middle, refused = made.middle, made.refused

    def set_amount(document: dict[str, Any]) -> None:
        document["statement"]["lines"][0]["amount"] = "9833334"

    def amount_and_leaf(document: dict[str, Any]) -> None:
        set_amount(document)
        document["leaf_hash"] = statement_leaf_hash(document["statement"]).hex()

    def flip(document: dict[str, Any]) -> None:
        hashed = bytearray.fromhex(document["path"][1])
        hashed[0] ^= 0x08
        document["path"][1] = hashed.hex()

    def swap(document: dict[str, Any]) -> None:
        document["path"][0], document["path"][1] = document["path"][1], document["path"][0]

    def set_field(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
        return lambda document: document.__setitem__(name, value)

    def substitute(document: dict[str, Any]) -> None:
        other = tree.statement_file(ids[middle["leaf_index"] + 1], ANCHOR)
        document["statement"], document["leaf_hash"] = other["statement"], other["leaf_hash"]

    def other_tree_proof(document: dict[str, Any]) -> None:
        other = later.statement_file(later.statements[3]["public_proof_id"], ANCHOR)
        document["path"] = other["path"]

    refused("tampered-amount.json", "LEAF_MISMATCH", "statement", set_amount)
    refused("tampered-amount-and-leaf-hash.json", "ROOT_MISMATCH", "batch_root", amount_and_leaf)
    refused("tampered-leaf-hash.json", "LEAF_MISMATCH", "statement",
            set_field("leaf_hash", hashlib.sha256(b"another leaf").hexdigest()))
    refused("tampered-path-bit-flipped.json", "ROOT_MISMATCH", "batch_root", flip)
    refused("tampered-path-siblings-swapped.json", "ROOT_MISMATCH", "batch_root", swap)
    refused("tampered-path-reversed.json", "ROOT_MISMATCH", "batch_root",
            lambda document: document["path"].reverse())
    refused("tampered-path-truncated.json", "PROOF_LENGTH", "path", lambda document: document["path"].pop())
    refused("tampered-path-extended.json", "PROOF_LENGTH", "path",
            lambda document: document["path"].append(document["batch_root"]))
    refused("tampered-path-empty.json", "PROOF_LENGTH", "path", set_field("path", []))
    refused("tampered-wrong-index.json", "ROOT_MISMATCH", "batch_root", set_field("leaf_index", middle["leaf_index"] + 1))
    refused("tampered-index-out-of-range.json", "INDEX_OUT_OF_RANGE", "leaf_index", set_field("leaf_index", 7))
    refused("tampered-wrong-size-larger.json", "PROOF_LENGTH", "path", set_field("tree_size", 16))
    refused("tampered-wrong-size-smaller.json", "PROOF_LENGTH", "path", set_field("tree_size", 4))
    refused("tampered-root-of-another-batch.json", "ROOT_MISMATCH", "batch_root", set_field("batch_root", later.root))
    refused("tampered-proof-from-another-tree.json", "ROOT_MISMATCH", "batch_root", other_tree_proof)
    refused("tampered-statement-substituted.json", "ROOT_MISMATCH", "batch_root", substitute)


def set_in(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    """A change that sets the value at ``path`` (keys and indexes) of a document."""
    def change(document: dict[str, Any]) -> None:
        target = document
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
    return change


def _malformed(made: Vectors) -> None:
    middle, refused = made.middle, made.refused
    good = statement_file_bytes(middle)
    index = f'"leaf_index":{middle["leaf_index"]}'.encode()

    def remove(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
        def change(document: dict[str, Any]) -> None:
            target = document
            for step in path[:-1]:
                target = target[step]
            del target[path[-1]]
        return change

    title = orjson.dumps(middle["statement"]["lines"][0]["title"])
    refused("malformed-empty.json", "NOT_JSON", "", raw=b"")
    refused("malformed-truncated.json", "NOT_JSON", "", raw=good[: len(good) // 2])
    refused("malformed-byte-order-mark.json", "NOT_JSON", "", raw=b"\xef\xbb\xbf" + good)
    refused("malformed-invalid-utf8.json", "NOT_JSON", "", raw=good.replace(title, title[:-1] + b"\xff\""))
    refused("malformed-lone-surrogate.json", "NOT_JSON", "", raw=good.replace(title, b'"\\ud800"'))
    refused("malformed-pretty-printed.json", "NOT_CANONICAL", "",
            raw=orjson.dumps(middle, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    refused("malformed-keys-reordered.json", "NOT_CANONICAL", "",
            raw=orjson.dumps(dict(reversed(list(orjson.loads(good).items())))))
    refused("malformed-float.json", "NOT_CANONICAL", "",
            raw=good.replace(b'"ledger_version":48213', b'"ledger_version":48213.0'))
    refused("malformed-exponent.json", "NOT_CANONICAL", "",
            raw=good.replace(index, index + b"e0"))
    refused("malformed-unsafe-integer.json", "NOT_CANONICAL", "",
            raw=good.replace(b'"ledger_version":48213', b'"ledger_version":9007199254740993'))
    refused("malformed-duplicate-key.json", "NOT_CANONICAL", "",
            raw=good.replace(index, index + b"," + index))
    refused("malformed-non-ascii-key.json", "NOT_CANONICAL", "",
            raw=good.replace(b'"title":', "\"t\u00edtulo\":".encode()))
    refused("malformed-trailing-spaces.json", "NOT_CANONICAL", "", raw=good + b"  ")
    refused("malformed-not-an-object.json", "MALFORMED", "", raw=b"[" + good.rstrip(b"\n") + b"]\n")
    refused("malformed-no-version.json", "MALFORMED", "version", remove(("version",)))
    refused("malformed-unknown-version.json", "UNSUPPORTED_VERSION", "version",
            set_in(("version",), "porto:london:statement-file:v3"))
    # The file, the statement, its lines and a line are four levels: 29 arrays more are one too many.
    refused("malformed-too-deep.json", "TOO_DEEP", "",
            raw=good.replace(b'"title":', b'"note":' + b"[" * 29 + b"]" * 29 + b',"title":', 1))
    refused("malformed-unknown-field.json", "MALFORMED", "note", set_in(("note",), "trust me"))
    refused("malformed-missing-anchor.json", "MALFORMED", "anchor", remove(("anchor",)))
    refused("malformed-index-as-string.json", "MALFORMED", "leaf_index", set_in(("leaf_index",), str(middle["leaf_index"])))
    refused("malformed-index-as-boolean.json", "MALFORMED", "leaf_index", set_in(("leaf_index",), True))
    refused("malformed-negative-index.json", "MALFORMED", "leaf_index", set_in(("leaf_index",), -1))
    refused("malformed-size-zero.json", "MALFORMED", "tree_size", set_in(("tree_size",), 0))
    refused("malformed-uppercase-root.json", "INVALID_HASH", "batch_root",
            set_in(("batch_root",), middle["batch_root"].upper()))
    refused("malformed-short-path-hash.json", "INVALID_HASH", "path[1]", set_in(("path", 1), middle["path"][1][:62]))
    refused("malformed-path-not-array.json", "MALFORMED", "path", set_in(("path",), middle["path"][0]))
    refused("malformed-anchor-transaction.json", "INVALID_HASH", "anchor.transaction_hash",
            set_in(("anchor", "transaction_hash"), middle["anchor"]["transaction_hash"][2:]))
    refused("malformed-anchor-extra-field.json", "MALFORMED", "anchor.root",
            set_in(("anchor", "root"), middle["batch_root"]))
    refused("malformed-anchor-no-chain.json", "MALFORMED", "anchor.chain", set_in(("anchor", "chain"), ""))
    refused("malformed-statement-not-object.json", "MALFORMED", "statement", set_in(("statement",), []))
    refused("invalid-statement-amount-as-number.json", "INVALID_STATEMENT", "statement.lines[0].amount",
            set_in(("statement", "lines", 0, "amount"), 1250000))
    refused("invalid-statement-amount-leading-zero.json", "INVALID_STATEMENT", "statement.lines[0].amount",
            set_in(("statement", "lines", 0, "amount"), "0833334"))
    refused("invalid-statement-amount-over-u64.json", "INVALID_STATEMENT", "statement.total",
            set_in(("statement", "total"), "18446744073709551616"))
    refused("invalid-statement-amount-negative.json", "INVALID_STATEMENT", "statement.payment.paid_amount",
            set_in(("statement", "payment", "paid_amount"), "-5"))
    refused("invalid-statement-no-proof-id.json", "INVALID_STATEMENT", "statement.public_proof_id",
            remove(("statement", "public_proof_id")))
    refused("invalid-statement-short-proof-id.json", "INVALID_STATEMENT", "statement.public_proof_id",
            set_in(("statement", "public_proof_id"), "pp-short"))
    refused("invalid-statement-lines-not-array.json", "INVALID_STATEMENT", "statement.lines",
            set_in(("statement", "lines"), {}))
    refused("invalid-statement-line-not-object.json", "INVALID_STATEMENT", "statement.lines[0]",
            set_in(("statement", "lines", 0), "a line"))
    refused("invalid-statement-no-payment-status.json", "INVALID_STATEMENT", "statement.payment.status",
            remove(("statement", "payment", "status")))


def write(made: dict[str, tuple[bytes, dict[str, Any]]] | None = None, directory: Path = DIRECTORY) -> None:
    """Commit a set of statement-file vectors (these by default) to ``directory``, with its ``expected.json``."""
    made = vectors() if made is None else made
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.json"):
        stale.unlink()
    for name, (raw, _) in made.items():
        (directory / name).write_bytes(raw)
    expected = {name: verdict for name, (_, verdict) in sorted(made.items())}
    (directory / EXPECTED.name).write_bytes(orjson.dumps(expected, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
                                            + b"\n")


def committed(directory: Path = DIRECTORY) -> dict[str, tuple[bytes, dict[str, Any]]]:
    """The vectors committed in ``directory``: each file's bytes with the verdict ``expected.json`` gives it."""
    expected = orjson.loads((directory / EXPECTED.name).read_bytes())
    return {name: ((directory / name).read_bytes(), verdict) for name, verdict in expected.items()}


def python_verdict(raw: bytes) -> dict[str, Any]:
    """``check_statement_file``'s verdict with the test key pinned, in the shape ``expected.json`` records."""
    verdict = check_statement_file(raw, PINNED)
    if verdict["verdict"] == "verified":
        return {"verdict": "verified", "leaf_index": verdict["leaf_index"], "tree_size": verdict["tree_size"]}
    return {"verdict": verdict["verdict"], "reason": verdict["reason"], "field": verdict["field"]}


if __name__ == "__main__":
    write()

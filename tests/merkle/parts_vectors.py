"""The day-line parts vectors in tests/merkle/vectors/day_line_parts/: statements with day lines, their parts files,
and parts files forged every way a recipient could be handed one.

Two frozen chunks of one day (``chunk-0.jsonl``, ``chunk-1.jsonl``, in the allocation artifact's format) pay an
artist (a day line in each) and a node operator (one in the first); each has a statement, signed with the test
checkpoint key (tests/merkle/checkpoint_keys.py). ``expected.json`` names, per case, the statement file, the parts
files given (in order) and the verdict with that key pinned: ``verdict``, the parts check's result
(``parts_check``) and reason (``parts_reason``), and for a verdict other than "verified" its ``reason`` and
``field``. Both verifiers (``check_statement_file`` and the page's verify.js) are tested against every case;
``python -m tests.merkle.parts_vectors`` writes the files again, and a test checks the committed ones are what
this module makes.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any, Callable

import orjson

from ledger_engine.canonical import canonical_bytes
from ledger_engine.domain.day_lines import day_line_id
from ledger_engine.merkle.day_line_parts import ChunkParts, commitment, parts_document, parts_total
from ledger_engine.merkle.document import encode_document
from ledger_engine.merkle.statement import StatementTree, check_statement_file, statement_file_bytes
from tests.merkle import checkpoint_keys
from tests.merkle.statement_vectors import ANCHOR, PERIOD, proof_id, set_in

DIRECTORY = Path(__file__).resolve().parent / "vectors" / "day_line_parts"
EXPECTED = DIRECTORY / "expected.json"
PINNED = checkpoint_keys.signer().verifier_key
DAY = 20_400
ARTIST, OPERATOR = "artist-amara", "operator-lisbon-1"


def artist_line(recipient: str, work: str, amount: int) -> dict[str, Any]:
    return {"role": "artist", "recipient_id": recipient, "amount": str(amount), "work_id": work, "rights_version": 1}


def listener_day(listener: str, slice_amount: int, lines: list[dict[str, Any]]) -> dict[str, Any]:
    """An artifact line: the slice, paid out in ``lines`` (an operator's and Porto's share added to them)."""
    operator = {"role": "operator", "recipient_id": OPERATOR, "amount": str(slice_amount // 10), "node_id": "node-lis-1"}
    paid = sum(int(line["amount"]) for line in lines) + int(operator["amount"])
    porto = {"role": "porto", "recipient_id": None, "amount": str(slice_amount - paid)}
    return {"listener_id": listener, "day": DAY, "budget_id": f"budget-{listener}", "amount": str(slice_amount),
            "revisions": {f"listener_day/{listener}/{DAY}": 3, "ruleset/london-1": 1},
            "lines": [*lines, operator, porto]}


def chunks() -> list[bytes]:
    """Two chunks of the day; the artist has a part in some of their listener-days, with one or two works."""
    first = [listener_day("listener-0001", 100_000, [artist_line(ARTIST, "work-0012", 50_000),
                                                     artist_line(ARTIST, "work-0031", 20_000)]),
             listener_day("listener-0002", 80_000, [artist_line("artist-bento", "work-0007", 56_000)]),
             listener_day("listener-0003", 90_000, [artist_line(ARTIST, "work-0012", 63_000)]),
             listener_day("listener-0004", 70_000, [artist_line(ARTIST, "work-0031", 30_000),
                                                    artist_line("artist-bento", "work-0007", 19_000)])]
    second = [listener_day("listener-0005", 60_000, [artist_line("artist-bento", "work-0007", 42_000)]),
              listener_day("listener-0006", 120_000, [artist_line(ARTIST, "work-0031", 84_000)]),
              listener_day("listener-0007", 110_000, [artist_line(ARTIST, "work-0012", 77_000)])]
    return [b"".join(canonical_bytes(line) + b"\n" for line in chunk) for chunk in (first, second)]


def day_line(number: int, content: bytes, role: str, recipient: str) -> dict[str, Any]:
    """The day line the freeze of chunk ``number`` wrote for (role, recipient), and its parts document."""
    artifact = {"day": DAY, "chunk": number, "hash": hashlib.sha256(content).hexdigest()}
    parts = ChunkParts(content).of(role, recipient)
    line = {"line_id": day_line_id(DAY, number, role, recipient), "artifact": artifact, "role": role,
            "recipient_id": recipient, "amount": str(parts_total(parts))}
    return {"line": line, "document": parts_document(line, parts)}


def statement(label: str, recipient: str, role: str, day_lines: list[dict[str, Any]],
              ordinary: list[dict[str, Any]]) -> dict[str, Any]:
    lines = [*ordinary, *({"line_id": made["line"]["line_id"], "day": DAY, "role": role, "amount": made["line"]["amount"],
                           "status": "payable", "artifact": made["line"]["artifact"],
                           "parts": commitment(made["document"])} for made in day_lines)]
    total = sum(int(line["amount"]) for line in lines)
    return {"public_proof_id": proof_id(label), "recipient_id": recipient, "role": role, "period": PERIOD,
            "asset": "USDC", "lines": lines, "total": str(total),
            "payment": {"status": "unpaid", "paid_amount": "0"}}


class Made:
    """The vector files (name -> bytes) and the cases (name -> statement file, parts files, verdict)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.cases: dict[str, dict[str, Any]] = {}

    def file(self, name: str, raw: bytes) -> str:
        self.files[name] = raw
        return name

    def parts(self, name: str, document: dict[str, Any], change: Callable[[dict[str, Any]], None] | None = None) -> str:
        changed = copy.deepcopy(document)
        if change is not None:
            change(changed)
        return self.file(name, encode_document(changed))

    def case(self, name: str, statement_file: str, parts: list[str], verdict: dict[str, Any]) -> None:
        self.cases[name] = {"statement": statement_file, "parts": parts, **verdict}


def verified(parts_result: str, parts_reason: str = "") -> dict[str, Any]:
    return {"verdict": "verified", "parts_check": parts_result, "parts_reason": parts_reason}


def refused(reason: str, field: str) -> dict[str, Any]:
    return {"verdict": "failed", "parts_check": "failed", "parts_reason": reason, "reason": reason, "field": field}


def vectors() -> Made:
    made = Made()
    first, second = chunks()
    made.file("chunk-0.jsonl", first)
    made.file("chunk-1.jsonl", second)
    artist = [day_line(0, first, "artist", ARTIST), day_line(1, second, "artist", ARTIST)]
    operator = [day_line(0, first, "operator", OPERATOR)]
    ordinary = [{"line_id": "line-0001", "day": DAY - 1, "role": "artist", "amount": "1250", "status": "paid",
                 "work_id": "work-0012"}]
    statements = [statement("amara-days", ARTIST, "artist", artist, ordinary),
                  statement("lisbon-days", OPERATOR, "operator", operator, []),
                  statement("bento-days", "artist-bento", "artist", [], ordinary)]
    tree, signer = StatementTree.build(statements), checkpoint_keys.signer()
    artist_file = made.file("statement-artist.json", statement_file_bytes(
        tree.statement_file(proof_id("amara-days"), ANCHOR, signer)))
    operator_file = made.file("statement-operator.json", statement_file_bytes(
        tree.statement_file(proof_id("lisbon-days"), ANCHOR, signer)))
    chunk_0, chunk_1 = (made.parts(f"parts-artist-chunk-{number}.json", artist[number]["document"]) for number in (0, 1))
    operator_parts = made.parts("parts-operator-chunk-0.json", operator[0]["document"])
    _honest(made, artist_file, operator_file, chunk_0, chunk_1, operator_parts)
    _forged(made, artist_file, artist, chunk_1)
    _malformed(made, artist_file, artist[0]["document"], chunk_1)
    _malformed_commitment(made, artist_file)
    return made


def _honest(made: Made, artist_file: str, operator_file: str, chunk_0: str, chunk_1: str, operator_parts: str) -> None:
    made.case("statement-alone", artist_file, [], verified("not made", "NO_PARTS_FILE"))
    made.case("every-day-line", artist_file, [chunk_0, chunk_1], verified("passed"))
    made.case("every-day-line-in-another-order", artist_file, [chunk_1, chunk_0], verified("passed"))
    made.case("one-day-line-of-two", artist_file, [chunk_1], verified("not made", "NO_PARTS_FILE"))
    made.case("operator-day-line", operator_file, [operator_parts], verified("passed"))
    made.case("another-recipients-parts", artist_file, [operator_parts],
              refused("PARTS_NOT_IN_STATEMENT", "parts_files[0].day_line.line_id"))


def _forged(made: Made, artist_file: str, artist: list[dict[str, Any]], honest_second: str) -> None:
    first, second = artist[0]["document"], artist[1]["document"]

    def one_amount_more(document: dict[str, Any]) -> None:
        document["parts"][0]["lines"][0]["amount"] = str(int(document["parts"][0]["lines"][0]["amount"]) + 1)

    def dropped(document: dict[str, Any]) -> None:
        document["parts"].pop()

    def moved_in(document: dict[str, Any]) -> None:  # a part of the first chunk's day line, counted here too
        document["parts"].append(copy.deepcopy(first["parts"][-1]))
        document["parts"].sort(key=lambda part: part["position"])
        document["count"] += 1

    def lines_swapped(document: dict[str, Any]) -> None:  # count and sum kept: only the digest tells
        document["parts"][0]["lines"], document["parts"][1]["lines"] = (document["parts"][1]["lines"],
                                                                        document["parts"][0]["lines"])

    def position_changed(document: dict[str, Any]) -> None:
        document["parts"][-1]["position"] += 7

    def relabelled(document: dict[str, Any]) -> None:  # the first chunk's parts, presented as the second's
        document["day_line"]["line_id"] = second["day_line"]["line_id"]

    def forged_amounts(document: dict[str, Any]) -> None:  # a day line made bigger, with parts summing to it
        document["day_line"]["amount"] = str(int(document["day_line"]["amount"]) + 5)
        document["parts"][0]["lines"][0]["amount"] = str(int(document["parts"][0]["lines"][0]["amount"]) + 5)

    cases = {
        "forged-amount-changed": (first, one_amount_more, refused("PARTS_SUM_MISMATCH", "parts_files[0].parts")),
        "forged-part-dropped": (first, dropped, refused("PARTS_COUNT_MISMATCH", "parts_files[0].parts")),
        "forged-count-changed": (first, lambda document: document.__setitem__("count", document["count"] - 1),
                                 refused("PARTS_COUNT_MISMATCH", "parts_files[0].count")),
        "forged-part-moved-to-another-day-line": (second, moved_in,
                                                  refused("PARTS_COUNT_MISMATCH", "parts_files[0].count")),
        "forged-lines-swapped-between-parts": (first, lines_swapped,
                                               refused("PARTS_DIGEST_MISMATCH", "parts_files[0]")),
        "forged-position-changed": (first, position_changed, refused("PARTS_DIGEST_MISMATCH", "parts_files[0]")),
        "forged-relabelled-as-another-day-line": (first, relabelled,
                                                  refused("PARTS_DAY_LINE_MISMATCH", "parts_files[0].day_line.artifact")),
        "forged-day-line-amount": (first, forged_amounts,
                                   refused("PARTS_DAY_LINE_MISMATCH", "parts_files[0].day_line.amount")),
        "forged-recipient": (first, lambda document: document["day_line"].__setitem__("recipient_id", "artist-bento"),
                             refused("PARTS_DAY_LINE_MISMATCH", "parts_files[0].day_line.recipient_id")),
    }
    for name, (document, change, verdict) in cases.items():
        made.case(name, artist_file, [made.parts(f"{name}.json", document, change)], verdict)
    made.case("honest-then-forged", artist_file, [honest_second, "forged-amount-changed.json"],
              refused("PARTS_SUM_MISMATCH", "parts_files[1].parts"))


def _malformed(made: Made, artist_file: str, first: dict[str, Any], honest: str) -> None:
    cases = {
        "malformed-amount-as-number": (set_in(("parts", 0, "lines", 0, "amount"), 50_000),
                                       "MALFORMED", "parts_files[0].parts[0].lines[0].amount"),
        "malformed-unknown-version": (set_in(("version",), "porto:london:day-line-parts:v9"),
                                      "UNSUPPORTED_VERSION", "parts_files[0].version"),
        "malformed-positions-out-of-order": (lambda document: document["parts"].reverse(),
                                             "MALFORMED", "parts_files[0].parts[1].position"),
        "malformed-no-lines": (set_in(("parts", 0, "lines"), []), "MALFORMED", "parts_files[0].parts[0].lines"),
        "malformed-listener-named": (set_in(("parts", 0, "listener_id"), "listener-0001"),
                                     "MALFORMED", "parts_files[0].parts[0].listener_id"),
        "malformed-artifact-hash": (set_in(("day_line", "artifact", "hash"), "AB" * 32),
                                    "INVALID_HASH", "parts_files[0].day_line.artifact.hash"),
    }
    for name, (change, reason, field) in cases.items():
        made.case(name, artist_file, [made.parts(f"{name}.json", first, change)], refused(reason, field))
    pretty = orjson.dumps(first, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)
    made.case("not-canonical-pretty-printed", artist_file, [made.file("not-canonical-pretty-printed.json", pretty)],
              refused("NOT_CANONICAL", "parts_files[0]"))
    made.case("not-json", artist_file, [honest, made.file("not-json.json", b"{\"version\": ")],
              refused("NOT_JSON", "parts_files[1]"))


def _malformed_commitment(made: Made, artist_file: str) -> None:
    """A statement whose day line commits to a digest no parts file can have: the statement itself is refused."""
    document = orjson.loads(made.files[artist_file])
    committed = document["statement"]["lines"][1]["parts"]
    committed["digest"] = committed["digest"].upper()
    made.case("statement-with-a-malformed-commitment", made.file("statement-malformed-commitment.json",
                                                                 statement_file_bytes(document)), [],
              {"verdict": "failed", "parts_check": "not made", "parts_reason": "", "reason": "INVALID_STATEMENT",
               "field": "statement.lines[1].parts.digest"})


def write() -> None:
    made = vectors()
    DIRECTORY.mkdir(parents=True, exist_ok=True)
    for stale in [*DIRECTORY.glob("*.json"), *DIRECTORY.glob("*.jsonl")]:
        stale.unlink()
    for name, raw in made.files.items():
        (DIRECTORY / name).write_bytes(raw)
    EXPECTED.write_bytes(orjson.dumps(made.cases, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")


def committed() -> dict[str, dict[str, Any]]:
    return orjson.loads(EXPECTED.read_bytes())


def committed_files() -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(DIRECTORY.iterdir()) if path.name != EXPECTED.name}


def case_bytes(case: dict[str, Any]) -> tuple[bytes, list[bytes]]:
    """A case's statement file and parts files, as committed."""
    return (DIRECTORY / case["statement"]).read_bytes(), [(DIRECTORY / name).read_bytes() for name in case["parts"]]


def python_verdict(statement_raw: bytes, parts_raws: list[bytes]) -> dict[str, Any]:
    """``check_statement_file``'s verdict with the test key pinned, in the shape ``expected.json`` records."""
    verdict = check_statement_file(statement_raw, PINNED, parts_raws)
    parts = next(check for check in verdict["checks"] if check["check"] == "parts")
    found = {"verdict": verdict["verdict"], "parts_check": parts["result"], "parts_reason": parts["reason"]}
    if verdict["verdict"] != "verified":
        found.update(reason=verdict["reason"], field=verdict["field"])
    return found


if __name__ == "__main__":
    write()

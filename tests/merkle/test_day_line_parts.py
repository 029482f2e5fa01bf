"""A day line's parts and the recipient's check of its parts file, against the shared day-line parts vectors."""

from __future__ import annotations

import orjson
import pytest

from ledger_engine.merkle.day_line_parts import ChunkParts, parts_digest, parts_document, parts_total
from ledger_engine.merkle.statement import check_statement_file
from tests.merkle import parts_vectors
from tests.merkle.parts_vectors import ARTIST, DIRECTORY, OPERATOR, PINNED, case_bytes, chunks, python_verdict
from tests.support.cli import porto_ledger

CASES = parts_vectors.committed()


def test_the_committed_vectors_are_the_ones_the_fixture_chunks_make():
    made = parts_vectors.vectors()
    assert made.files == parts_vectors.committed_files()
    assert made.cases == CASES


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_python_verifier_reaches_the_expected_verdict(name):
    case = CASES[name]
    expected = {key: value for key, value in case.items() if key not in ("statement", "parts")}
    assert python_verdict(*case_bytes(case)) == expected


def test_each_forgery_a_recipient_could_be_handed_is_refused_with_its_own_reason():
    reasons = {name: CASES[name]["reason"] for name in CASES if name.startswith("forged-")}
    assert reasons == {
        "forged-amount-changed": "PARTS_SUM_MISMATCH", "forged-part-dropped": "PARTS_COUNT_MISMATCH",
        "forged-count-changed": "PARTS_COUNT_MISMATCH", "forged-part-moved-to-another-day-line": "PARTS_COUNT_MISMATCH",
        "forged-lines-swapped-between-parts": "PARTS_DIGEST_MISMATCH", "forged-position-changed": "PARTS_DIGEST_MISMATCH",
        "forged-relabelled-as-another-day-line": "PARTS_DAY_LINE_MISMATCH",
        "forged-day-line-amount": "PARTS_DAY_LINE_MISMATCH", "forged-recipient": "PARTS_DAY_LINE_MISMATCH"}


def test_a_chunks_parts_are_each_listener_day_a_recipient_is_in_by_position_and_sum_to_its_lines():
    first, _ = chunks()
    listener_days = [orjson.loads(line) for line in first.splitlines()]
    parts = ChunkParts(first)
    for role, recipient in (("artist", ARTIST), ("artist", "artist-bento"), ("operator", OPERATOR), ("porto", None)):
        mine = parts.of(role, recipient)
        expected = [(position, [line for line in day["lines"] if (line["role"], line["recipient_id"]) == (role, recipient)])
                    for position, day in enumerate(listener_days)]
        expected = [(position, lines) for position, lines in expected if lines]
        assert [part["position"] for part in mine] == [position for position, _ in expected]
        assert parts_total(mine) == sum(int(line["amount"]) for _, lines in expected for line in lines)
    assert [list(line) for part in parts.of("porto", None) for line in part["lines"]] == [["amount"]] * 4
    assert [part["lines"] for part in parts.of("operator", OPERATOR)][0] == [{"node_id": "node-lis-1", "amount": "10000"}]


def test_a_remainders_parts_leave_out_the_listener_days_taken_out():
    first, _ = chunks()
    everything = ChunkParts(first).of("artist", ARTIST)
    taken = ChunkParts(first).of("artist", ARTIST, frozenset({"listener-0003"}))
    assert [part["position"] for part in taken] == [0, 3]
    assert parts_total(everything) - parts_total(taken) == 63_000


def test_a_parts_file_names_no_listener_and_its_digest_is_domain_separated():
    for path in DIRECTORY.glob("parts-*.json"):
        raw = path.read_bytes()
        assert b"listener" not in raw and b"budget" not in raw, path.name
    document = orjson.loads((DIRECTORY / "parts-artist-chunk-0.json").read_bytes())
    assert parts_digest(document) != parts_digest({**document, "version": "another"})
    line = document["day_line"]
    assert parts_document(line, document["parts"]) == document


def test_the_verdict_reports_each_parts_file_and_each_day_line():
    case = CASES["one-day-line-of-two"]
    verdict = check_statement_file(*case_bytes(case)[:1], PINNED, case_bytes(case)[1])
    assert verdict["verdict"] == "verified" and verdict["ok"] is True
    assert [(outcome["file"], outcome["result"]) for outcome in verdict["parts_files"]] == [(0, "passed")]
    assert [line["result"] for line in verdict["day_lines"]] == ["not made", "passed"]
    parts = next(check for check in verdict["checks"] if check["check"] == "parts")
    assert parts["reason"] == "NO_PARTS_FILE" and "1 of the statement's 2 day lines" in parts["detail"]
    refused = check_statement_file(*case_bytes(CASES["honest-then-forged"])[:1], PINNED,
                                   case_bytes(CASES["honest-then-forged"])[1])
    assert [outcome["result"] for outcome in refused["parts_files"]] == ["passed", "failed"]
    assert [line["result"] for line in refused["day_lines"]] == ["failed", "passed"]
    assert refused["checks"][-1] == {"check": "anchor", "result": "not made", "reason": "",
                                     "detail": "not reached: an earlier check failed"}


def test_a_statement_without_day_lines_says_there_is_nothing_to_link():
    raw = (DIRECTORY.parent / "statements" / "valid-middle-leaf.json").read_bytes()
    verdict = check_statement_file(raw, PINNED)
    parts = next(check for check in verdict["checks"] if check["check"] == "parts")
    assert (verdict["verdict"], parts["result"], parts["reason"]) == ("verified", "not made", "NO_DAY_LINES")
    assert verdict["day_lines"] == verdict["parts_files"] == []


def test_the_command_line_checks_parts_files_beside_the_statement(tmp_path):
    for name, status in (("every-day-line", 0), ("forged-lines-swapped-between-parts", 1)):
        case = CASES[name]
        run = porto_ledger("verify-statement", "--verifier-key", PINNED.encoded(), DIRECTORY / case["statement"],
                           "--parts", *(DIRECTORY / part for part in case["parts"]))
        assert run.status == status, run.lines
        assert run.last["verdict"] == case["verdict"]
        assert [outcome["result"] for outcome in run.last["parts_files"]] == (
            ["passed", "passed"] if status == 0 else ["failed"])

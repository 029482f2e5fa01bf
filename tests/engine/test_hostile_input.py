"""Hostile JSON text and admission times: a stable code for each, nothing changed, no line left unanswered."""

from __future__ import annotations

import orjson
import pytest

from ledger_engine.canonical import MAX_JSON_DEPTH, parse_json
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.security_log import SecurityLog
from tests.support import cli
from tests.support.outcomes import assert_refused


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("text, code", [
    (nested(MAX_JSON_DEPTH + 1), ErrorCode.JSON_TOO_DEEP),
    (nested(1_000), ErrorCode.JSON_TOO_DEEP),
    (nested(100_000), ErrorCode.JSON_TOO_DEEP),
    (b'{"a": ' * 300 + b"1" + b"}" * 300, ErrorCode.JSON_TOO_DEEP),
    (b'{"a": 1, "a": 2}', ErrorCode.DUPLICATE_KEY),
    (b'{"a": {"b": [{"c": 1, "c": 1}]}}', ErrorCode.DUPLICATE_KEY),
    (b'"\xff\xfe"', ErrorCode.MALFORMED_ENVELOPE),
    (b'{"a": NaN}', ErrorCode.MALFORMED_ENVELOPE),
    (b" " * (2 * 1024 * 1024 + 1), ErrorCode.COMMAND_TOO_LARGE),
])
def test_hostile_text_is_refused_with_a_stable_code(text, code):
    with pytest.raises(LedgerError) as refused:
        parse_json(text)
    assert refused.value.code == code


def test_the_depth_limit_is_exact():
    assert parse_json(nested(MAX_JSON_DEPTH)) == parse_json(nested(MAX_JSON_DEPTH))
    with pytest.raises(LedgerError):
        parse_json(nested(MAX_JSON_DEPTH + 1))


def test_a_deep_document_handed_over_in_process_is_refused_too(owner, envelopes):
    envelope = envelopes.account("acct-1")
    deep: list = []
    for _ in range(300):
        deep = [deep]
    envelope["payload"]["identity_digest"] = deep
    assert_refused(owner, envelope, ErrorCode.JSON_TOO_DEEP)


def test_submit_answers_every_hostile_line_in_order_and_runs_only_the_good_ones(tmp_path, envelopes):
    first, last = envelopes.account("acct-1", roles=["finance"]), envelopes.account("acct-9")
    forged = envelopes.account("acct-2", roles=["admin"], actor="ops-nobody")
    duplicated_actor = orjson.dumps(forged)[:-1] + b', "actor_id": "genesis-admin"}'
    hostile = [nested(254), nested(1_000), nested(100_000), b"[" * 5_000, b"x" * (2 * 1024 * 1024 + 10),
               b'{"\xff": 1}', b"\xc3\x28", duplicated_actor, b'{"a": {"b": 1, "b": 2}}', b"null", b"1e999",
               orjson.dumps(envelopes.account("acct-3") | {"extra": 1})]
    lines = [orjson.dumps(first), *hostile, orjson.dumps(last)]
    data = tmp_path / "ledger"
    cli.init(data)
    run = cli.porto_ledger("submit", cli.write_stream(tmp_path / "in.jsonl", [line + b"\n" for line in lines]),
                           data=data, env={"PORTO_SECURITY_LOG": str(tmp_path / "security.jsonl")})
    assert run.status == 0 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert [(answer["outcome"], answer["code"]) for answer in run.lines] == [
        ("accepted", "OK"),
        *[("refused", "JSON_TOO_DEEP")] * 4, ("refused", "COMMAND_TOO_LARGE"),
        ("refused", "MALFORMED_ENVELOPE"), ("refused", "MALFORMED_ENVELOPE"), ("refused", "DUPLICATE_KEY"),
        ("refused", "DUPLICATE_KEY"), ("refused", "MALFORMED_ENVELOPE"), ("refused", "MALFORMED_ENVELOPE"),
        ("refused", "UNKNOWN_FIELD"), ("accepted", "OK")]
    assert cli.head(data)["sequence"] == 2
    logged = [orjson.loads(line) for line in (tmp_path / "security.jsonl").read_bytes().splitlines()]
    assert [entry["code"] for entry in logged] == [answer["code"] for answer in run.lines[1:-1]]
    assert all(entry["event"] == "refused_before_admission" and entry["at_ms"] > 0 for entry in logged)
    assert logged[-1]["command_id"] == orjson.loads(hostile[-1])["command_id"]


def test_the_security_log_is_json_lines_in_a_rotating_file(tmp_path):
    log = SecurityLog(tmp_path / "security.jsonl", max_bytes=2_000, backups=2)
    for number in range(60):
        log.record("refused_before_admission", "MALFORMED_ENVELOPE", f"attempt {number}", command_id=f"c-{number}")
    log.close()
    files = sorted(tmp_path.glob("security.jsonl*"))
    assert [path.name for path in files] == ["security.jsonl", "security.jsonl.1", "security.jsonl.2"]
    newest = [orjson.loads(line) for line in files[0].read_bytes().splitlines()]
    assert newest[-1]["command_id"] == "c-59" and all(path.stat().st_size <= 2_000 for path in files)


def test_an_admission_time_below_the_last_journalled_one_is_refused_and_changes_nothing(owner, envelopes):
    later = envelopes.account("acct-1")
    assert owner.submit(later).accepted
    earlier = envelopes.account("acct-2") | {"admitted_at_ms": later["admitted_at_ms"] - 1}
    assert_refused(owner, earlier, ErrorCode.ADMISSION_TIME_REGRESSED)
    same_time = envelopes.account("acct-3") | {"admitted_at_ms": later["admitted_at_ms"]}
    assert owner.submit(same_time).accepted  # nondecreasing, not strictly increasing
    assert owner.submit(later).duplicate  # a journalled command is still answered by its ID


def test_the_admission_floor_survives_a_reopen(ledger_dir, envelopes):
    from ledger_engine.application.owner import LedgerOwner
    from ledger_engine.genesis import default_genesis

    with LedgerOwner.open(ledger_dir, genesis=default_genesis()) as owner:
        envelope = envelopes.account("acct-1")
        assert owner.submit(envelope).accepted
    with LedgerOwner.open(ledger_dir) as owner:
        assert owner.admission_floor_ms() == envelope["admitted_at_ms"]
        assert_refused(owner, envelopes.account("acct-2") | {"admitted_at_ms": envelope["admitted_at_ms"] - 1},
                       ErrorCode.ADMISSION_TIME_REGRESSED)


def test_submit_refuses_a_line_admitted_before_the_last_one(tmp_path, envelopes):
    later = envelopes.account("acct-1")
    earlier = envelopes.account("acct-2") | {"admitted_at_ms": later["admitted_at_ms"] - 1_000}
    data = tmp_path / "ledger"
    cli.init(data)
    answers = cli.submit(data, cli.write_stream(tmp_path / "in.jsonl", [orjson.dumps(later) + b"\n",
                                                                           orjson.dumps(earlier) + b"\n"]))
    assert [(a["outcome"], a["code"]) for a in answers] == [("accepted", "OK"), ("refused", "ADMISSION_TIME_REGRESSED")]

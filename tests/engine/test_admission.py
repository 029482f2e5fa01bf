"""Bad input is refused before admission with a stable code, and changes nothing at all."""

from __future__ import annotations

import copy
import uuid
from typing import Any, Callable

import orjson
import pytest
import rfc8785

from ledger_engine.canonical import parse_json
from ledger_engine.envelope import MAX_ENVELOPE_BYTES
from ledger_engine.errors import ErrorCode, LedgerError
from tests.support import cli, payloads
from tests.support.outcomes import assert_refused
from tests.support.store import owner_dump

INGEST = "ingest-1"
Mutation = Callable[[dict[str, Any]], Any]


@pytest.fixture
def ledger(owner, envelopes):
    """An owner with an ingest worker and a finance account already provisioned."""
    for envelope in (envelopes.account(INGEST, "worker", ["ingest"]), envelopes.account("fin-1", roles=["finance"])):
        assert owner.submit(envelope).accepted
    return owner


def account(envelopes) -> dict[str, Any]:
    return envelopes.account("acct-1", roles=["finance"])


def funding(envelopes) -> dict[str, Any]:
    payload = payloads.funding("lot-1", "1000")
    return envelopes("ImportFunding", payload, actor=INGEST, evidence=[payloads.deposit_evidence(payload)])


def catalogue(envelopes, chunk_count: int = 3) -> dict[str, Any]:
    """A one-work import whose rendition has ``chunk_count`` 10 ms chunks."""
    duration_ms = chunk_count * 10
    rendition = payloads.rendition("w-1-aac", duration_ms, chunk_list=payloads.chunks(duration_ms, 10))
    return envelopes("ImportCatalogue", payloads.catalogue("import-1", payloads.work("w-1", rendition)), actor=INGEST)


def mutated(envelope: dict[str, Any], mutation: Mutation) -> Any:
    """A fresh command ID (so no duplicate lookup can hide anything), then the mutation."""
    document = copy.deepcopy(envelope)
    document["command_id"] = str(uuid.uuid4())
    result = mutation(document)
    return document if result is None else result


def setting(path: str, value: Any) -> Mutation:
    """Set a dotted path (``payload.deposit.event_index``) to ``value``."""
    *parents, last = path.split(".")

    def mutate(document: dict[str, Any]) -> None:
        target = document
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value

    return mutate


def without(field: str) -> Mutation:
    return lambda document: document.pop(field) and None


def test_the_unmodified_envelopes_are_admitted(ledger, envelopes):
    for envelope in (account(envelopes), funding(envelopes), catalogue(envelopes)):
        assert ledger.submit(envelope).accepted


@pytest.mark.parametrize("raw", [b"", b"{", b"not json", b'{"a":1,}', b"\xff\xfe", b'{"n": NaN}', b"{'a': 1}"])
def test_malformed_json(ledger, raw):
    before = owner_dump(ledger)
    with pytest.raises(LedgerError) as raised:
        ledger.submit(parse_json(raw))
    assert raised.value.code == ErrorCode.MALFORMED_ENVELOPE
    assert owner_dump(ledger) == before


@pytest.mark.parametrize("raw", [b"[]", b'"envelope"', b"1", b"null", b"true", b"[{}]"])
def test_non_object_envelopes(ledger, raw):
    assert_refused(ledger, parse_json(raw), ErrorCode.MALFORMED_ENVELOPE)


ENVELOPE_FIELDS = ["schema_version", "command_id", "command_type", "actor_id", "admitted_at_ms",
                   "ruleset_version", "expected_revisions", "payload", "evidence_hashes"]


@pytest.mark.parametrize("field", ENVELOPE_FIELDS)
def test_missing_envelope_field(ledger, envelopes, field):
    assert_refused(ledger, mutated(account(envelopes), without(field)), ErrorCode.MALFORMED_ENVELOPE)


def test_missing_payload_field(ledger, envelopes):
    document = mutated(account(envelopes), lambda d: d["payload"].pop("identity_digest") and None)
    assert_refused(ledger, document, ErrorCode.INVALID_PAYLOAD)


UNKNOWN_FIELDS = {
    "envelope": (account, setting("signature", "abc")),
    "payload": (account, setting("payload.nickname", "x")),
    "non-ASCII payload key": (account, setting("payload.r\u00f4le", "x")),
    "expected revision": (account, setting("expected_revisions", [{"cf": "state", "key": "a", "revision": 1, "x": 1}])),
    "nested deposit": (funding, setting("payload.deposit.memo", "x")),
    "nested chunk": (catalogue, setting("payload.works.0.renditions.0.chunks.0.extra", 1)),
}


@pytest.mark.parametrize("case", UNKNOWN_FIELDS, ids=list(UNKNOWN_FIELDS))
def test_unknown_fields(ledger, envelopes, case):
    base, mutation = UNKNOWN_FIELDS[case]
    assert_refused(ledger, mutated(base(envelopes), mutation), ErrorCode.UNKNOWN_FIELD)


WRONG_TYPES = {
    "admitted_at_ms as string": (account, setting("admitted_at_ms", "1790812800000"), ErrorCode.MALFORMED_ENVELOPE),
    "admitted_at_ms as bool": (account, setting("admitted_at_ms", True), ErrorCode.MALFORMED_ENVELOPE),
    "negative admitted_at_ms": (account, setting("admitted_at_ms", -1), ErrorCode.MALFORMED_ENVELOPE),
    "schema_version as string": (account, setting("schema_version", "1"), ErrorCode.MALFORMED_ENVELOPE),
    "actor_id as number": (account, setting("actor_id", 7), ErrorCode.MALFORMED_ENVELOPE),
    "payload as list": (account, setting("payload", []), ErrorCode.MALFORMED_ENVELOPE),
    "expected_revisions as object": (account, setting("expected_revisions", {}), ErrorCode.MALFORMED_ENVELOPE),
    "evidence_hashes as string": (account, setting("evidence_hashes", "ab"), ErrorCode.MALFORMED_ENVELOPE),
    "uppercase evidence hash": (account, setting("evidence_hashes", ["AB" * 32]), ErrorCode.MALFORMED_ENVELOPE),
    "unsorted evidence hashes": (account, setting("evidence_hashes", ["b" * 64, "a" * 64]),
                                 ErrorCode.MALFORMED_ENVELOPE),
    "revision zero": (account, setting("expected_revisions", [{"cf": "state", "key": "a", "revision": 0}]),
                      ErrorCode.MALFORMED_ENVELOPE),
    "revision of a non-record family": (account, setting("expected_revisions", [
        {"cf": "journal", "key": "a", "revision": 1}]), ErrorCode.MALFORMED_ENVELOPE),
    "roles as string": (account, setting("payload.roles", "finance"), ErrorCode.INVALID_PAYLOAD),
    "unknown role": (account, setting("payload.roles", ["root"]), ErrorCode.INVALID_PAYLOAD),
    "kind as number": (account, setting("payload.kind", 1), ErrorCode.INVALID_PAYLOAD),
    "event_index as string": (funding, setting("payload.deposit.event_index", "0"), ErrorCode.INVALID_PAYLOAD),
    "short digest": (account, setting("payload.identity_digest", "ab" * 31), ErrorCode.INVALID_PAYLOAD),
    "long digest": (account, setting("payload.identity_digest", "ab" * 32 + "c"), ErrorCode.INVALID_PAYLOAD),
}


@pytest.mark.parametrize("case", WRONG_TYPES, ids=list(WRONG_TYPES))
def test_wrong_types(ledger, envelopes, case):
    base, mutation, code = WRONG_TYPES[case]
    assert_refused(ledger, mutated(base(envelopes), mutation), code)


NUMBERS = {
    "float admitted_at_ms": (account, setting("admitted_at_ms", 1790812800000.0), ErrorCode.INVALID_NUMBER),
    "float schema_version": (account, setting("schema_version", 1.0), ErrorCode.INVALID_NUMBER),
    "float expected revision": (account, setting("expected_revisions", [{"cf": "state", "key": "a", "revision": 1.0}]),
                                ErrorCode.INVALID_NUMBER),
    "float event_index": (funding, setting("payload.deposit.event_index", 0.0), ErrorCode.INVALID_NUMBER),
    "float amount": (funding, setting("payload.amount", 1000.0), ErrorCode.INVALID_NUMBER),
    "integer above 2^53": (account, setting("admitted_at_ms", 2**53), ErrorCode.INVALID_NUMBER),
    "integer amount": (funding, setting("payload.amount", 1000), ErrorCode.INVALID_AMOUNT),
    "decimal-point amount": (funding, setting("payload.amount", "1000.0"), ErrorCode.INVALID_AMOUNT),
    "exponent amount": (funding, setting("payload.amount", "1e3"), ErrorCode.INVALID_AMOUNT),
    "leading-zero amount": (funding, setting("payload.amount", "01000"), ErrorCode.INVALID_AMOUNT),
    "padded amount": (funding, setting("payload.amount", " 1000"), ErrorCode.INVALID_AMOUNT),
    "amount above u64": (funding, setting("payload.amount", str(2**64)), ErrorCode.INVALID_AMOUNT),
    "negative amount": (funding, setting("payload.amount", "-1000"), ErrorCode.INVALID_AMOUNT),
    "plus-signed amount": (funding, setting("payload.amount", "+1000"), ErrorCode.INVALID_AMOUNT),
    "negative integer amount": (funding, setting("payload.amount", -1000), ErrorCode.INVALID_AMOUNT),
}


@pytest.mark.parametrize("case", NUMBERS, ids=list(NUMBERS))
def test_numbers_and_amounts(ledger, envelopes, case):
    base, mutation, code = NUMBERS[case]
    assert_refused(ledger, mutated(base(envelopes), mutation), code)


VERSIONS = {
    "unknown command type": (setting("command_type", "TransferEverything"), ErrorCode.UNKNOWN_COMMAND_TYPE),
    "malformed command type": (setting("command_type", "registerAccount"), ErrorCode.MALFORMED_ENVELOPE),
    "unknown ruleset": (setting("ruleset_version", "london-2"), ErrorCode.UNSUPPORTED_RULESET),
    "schema version 2": (setting("schema_version", 2), ErrorCode.UNSUPPORTED_SCHEMA_VERSION),
    "schema version 0": (setting("schema_version", 0), ErrorCode.UNSUPPORTED_SCHEMA_VERSION),
}


@pytest.mark.parametrize("case", VERSIONS, ids=list(VERSIONS))
def test_unknown_types_and_versions(ledger, envelopes, case):
    mutation, code = VERSIONS[case]
    assert_refused(ledger, mutated(account(envelopes), mutation), code)


def test_a_valid_command_over_one_mebibyte_is_too_large(ledger, envelopes):
    document = catalogue(envelopes, chunk_count=8_000)
    assert len(rfc8785.dumps(document)) > MAX_ENVELOPE_BYTES
    assert_refused(ledger, document, ErrorCode.COMMAND_TOO_LARGE)


def test_the_envelope_limit_is_exactly_one_mebibyte_of_canonical_json(ledger, envelopes):
    """At the limit the next check runs (the padding is an unknown field); one byte more is too large."""
    document = account(envelopes) | {"padding": ""}
    document["padding"] = "x" * (MAX_ENVELOPE_BYTES - len(rfc8785.dumps(document)))
    assert len(rfc8785.dumps(document)) == MAX_ENVELOPE_BYTES
    assert_refused(ledger, document, ErrorCode.UNKNOWN_FIELD)
    assert_refused(ledger, document | {"padding": document["padding"] + "x"}, ErrorCode.COMMAND_TOO_LARGE)


EXPECTED_REVISIONS = {
    "unsorted keys": [{"cf": "state", "key": "b", "revision": 1}, {"cf": "state", "key": "a", "revision": 1}],
    "unsorted families": [{"cf": "unique", "key": "a", "revision": 1}, {"cf": "state", "key": "b", "revision": 1}],
    "duplicate key": [{"cf": "state", "key": "a", "revision": 1}, {"cf": "state", "key": "a", "revision": None}],
}


@pytest.mark.parametrize("case", EXPECTED_REVISIONS, ids=list(EXPECTED_REVISIONS))
def test_unsorted_or_duplicate_expected_revisions(ledger, envelopes, case):
    document = mutated(account(envelopes), setting("expected_revisions", EXPECTED_REVISIONS[case]))
    assert_refused(ledger, document, ErrorCode.MALFORMED_ENVELOPE)


CANONICAL_ID = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
NON_CANONICAL_IDS = {
    "upper case": CANONICAL_ID.upper(),
    "no hyphens": CANONICAL_ID.replace("-", ""),
    "braces": "{" + CANONICAL_ID + "}",
    "urn": "urn:uuid:" + CANONICAL_ID,
    "version 1": "7c9e6679-7425-10de-944b-e07fc1f90ae7",
    "wrong variant": "7c9e6679-7425-40de-c44b-e07fc1f90ae7",
    "trailing text": CANONICAL_ID + "0",
    "leading text": "0" + CANONICAL_ID,
    "trailing newline": CANONICAL_ID + "\n",
    "leading space": " " + CANONICAL_ID,
    "empty": "",
}


@pytest.mark.parametrize("case", NON_CANONICAL_IDS, ids=list(NON_CANONICAL_IDS))
def test_non_canonical_command_ids(ledger, envelopes, case):
    document = account(envelopes) | {"command_id": NON_CANONICAL_IDS[case]}
    assert_refused(ledger, document, ErrorCode.MALFORMED_ENVELOPE)


@pytest.mark.parametrize("field, value, code", [
    ("actor_id", "genesis-admin/x", ErrorCode.MALFORMED_ENVELOPE),
    ("ruleset_version", "london-1/x", ErrorCode.MALFORMED_ENVELOPE),
])
def test_identifiers_are_whole_key_components(ledger, envelopes, field, value, code):
    assert_refused(ledger, mutated(account(envelopes), setting(field, value)), code)


def test_payload_identifiers_are_whole_key_components(ledger, envelopes):
    document = mutated(account(envelopes), setting("payload.account_id", "acct/1"))
    assert_refused(ledger, document, ErrorCode.INVALID_PAYLOAD)


def test_submit_answers_refused_lines_in_order_and_goes_on(tmp_path, envelopes):
    good = envelopes.account("acct-1", roles=["finance"])
    unknown_field = envelopes.account("acct-2") | {"extra": 1}
    lines = [orjson.dumps(good), b"{not json", b"[1, 2]", orjson.dumps(unknown_field),
             orjson.dumps(envelopes.account("acct-3"))]
    data = tmp_path / "ledger"
    cli.init(data)
    answers = cli.submit(data, cli.write_stream(tmp_path / "in.jsonl", [line + b"\n" for line in lines]))
    assert [(a["outcome"], a["code"], a.get("sequence")) for a in answers] == [
        ("accepted", "OK", 1),
        ("refused", "MALFORMED_ENVELOPE", None),
        ("refused", "MALFORMED_ENVELOPE", None),
        ("refused", "UNKNOWN_FIELD", None),
        ("accepted", "OK", 2),
    ]
    assert answers[3]["command_id"] == unknown_field["command_id"]
    assert cli.head(data)["sequence"] == 2

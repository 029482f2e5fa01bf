"""RecordExportAccess: only auditors, only committed ranges, each export recorded once."""

from __future__ import annotations

from ledger_engine.errors import ErrorCode


def _export(envelopes, actor, **overrides):
    payload = {"export_id": "export-1", "file_format": "csv", "first_sequence": 1, "last_sequence": 1,
               "content_sha256": envelopes.digest("export")} | overrides
    return envelopes("RecordExportAccess", payload, actor=actor)


def test_an_auditor_records_an_export_as_an_event(owner, envelopes):
    owner.submit(envelopes.account("aud-1", roles=["auditor"]))
    outcome = owner.submit(_export(envelopes, "aud-1"))
    assert outcome.accepted
    events = owner.scan("events", f"{outcome.sequence:020d}/")
    assert [value["type"] for _, value in events] == ["ExportAccessed"]
    assert events[0][1]["actor_id"] == "aud-1" and events[0][1]["last_sequence"] == 1


def test_only_auditors_record_exports(owner, envelopes):
    owner.submit(envelopes.account("fin-1", roles=["finance"]))
    assert owner.submit(_export(envelopes, "fin-1")).code == ErrorCode.CAPABILITY_MISSING


def test_an_export_covers_only_committed_sequences_and_is_recorded_once(owner, envelopes):
    owner.submit(envelopes.account("aud-1", roles=["auditor"]))
    assert owner.submit(_export(envelopes, "aud-1", last_sequence=2)).code == ErrorCode.INVALID_REFERENCE
    assert owner.submit(_export(envelopes, "aud-1", first_sequence=2, last_sequence=1)).code == ErrorCode.INVALID_REFERENCE
    assert owner.submit(_export(envelopes, "aud-1")).accepted
    assert owner.submit(_export(envelopes, "aud-1")).code == ErrorCode.ALREADY_EXISTS

"""Sessions: entitlement, one active session per account, leases against admission time."""

from __future__ import annotations

import pytest

from ledger_engine.domain.schema import streaming as schema
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from ledger_engine.errors import LedgerError
from ledger_engine.layout import UNIQUE
from tests.streaming.conftest import COORDINATOR, DAY, INGEST


def test_an_opened_session_snapshots_rights_and_holds_the_account_sentinel(world):
    session_id = world.session()
    session = world.state(schema.session_key(session_id))
    assert (session["status"], session["rights_version"], session["day"], session["period_id"]) == (
        "open", 1, DAY, "period-1")
    assert session["expires_at_ms"] == session["opened_at_ms"] + 600_000
    assert world.owner.get(UNIQUE, schema.active_session_sentinel("listener-1")).data == {"session_id": session_id}
    activity = world.state(schema.listener_activity_key("listener-1", DAY))
    assert activity["sessions"] == [{"session_id": session_id, "opened_at_ms": session["opened_at_ms"],
                                     "closed_at_ms": None}]


def test_an_account_has_at_most_one_active_session(world):
    first = world.session()
    assert world.open_session(session_id="second-device").code == "SESSION_ALREADY_ACTIVE"
    assert world.state(schema.session_key("second-device")) is None
    assert world.close_session(first).accepted
    assert world.owner.get(UNIQUE, schema.active_session_sentinel("listener-1")) is None
    third = world.session()
    assert world.owner.get(UNIQUE, schema.active_session_sentinel("listener-1")).data == {"session_id": third}


def test_a_session_id_is_used_once(world):
    session_id = world.session()
    assert world.close_session(session_id).accepted
    assert world.open_session(session_id=session_id).code == "ALREADY_EXISTS"


def test_streaming_needs_an_entitled_period_of_the_account(world):
    assert world.open_session(period_id="period-9").code == "NOT_FOUND"
    assert world.open_period("period-2", "listener-2").accepted
    assert world.open_session("listener-1", period_id="period-2").code == "INVALID_REFERENCE"
    assert world.open_period("period-3", "listener-2", first_day=DAY + 60).accepted
    assert world.open_session("listener-2", period_id="period-3").code == "EXPIRED"
    assert world.billing("entitlement_cancelled", period_id="period-2", account_id="listener-2").accepted
    assert world.open_session("listener-2", period_id="period-2").code == "INVALID_STATE"


def test_a_refunded_period_entitles_nothing(world):
    assert world.billing("payment_refunded", period_id="period-1").accepted
    assert world.open_session().code == "INVALID_STATE"


def test_only_active_works_and_their_renditions_stream(world):
    world.ok("ImportCatalogue", {"import_id": "import-2", "works": [
        {"work_id": "work-2", "metadata_hash": "ee" * 32, "licence_ref": "licence-2",
         "renditions": [{"rendition_id": "work-2-aac", "codec": "aac", "duration_ms": 10_000,
                         "manifest_hash": "ff" * 32, "chunks": [{"index": 0, "start_ms": 0, "end_ms": 10_000,
                                                                 "size_bytes": 1, "sha256": "aa" * 32}]}]}]},
             actor=INGEST)
    assert world.open_session(work_id="work-2").code == "INVALID_STATE"
    outcome = world.submit("OpenSession", {"session_id": "s-x", "account_id": "listener-1", "period_id": "period-1",
                                           "work_id": "work-1", "rendition_id": "work-2-aac", "lease_ms": 1_000},
                           actor=COORDINATOR)
    assert outcome.code == "INVALID_REFERENCE"


def test_only_active_listener_accounts_stream(world):
    assert world.open_session("operator-1").code == "INVALID_REFERENCE"


def test_a_lease_must_be_closed_as_expired_once_it_has_passed(world):
    session_id = world.session(lease_ms=5_000)
    assert world.close_session(session_id, "expired").code == "INVALID_TIME"
    world.now += 10_000
    assert world.close_session(session_id, "completed").code == "EXPIRED"
    assert world.close_session(session_id, "expired").accepted
    session = world.state(schema.session_key(session_id))
    assert (session["status"], session["close_reason"]) == ("closed", "expired")
    assert world.close_session(session_id).code == "INVALID_STATE"


def test_lease_time_never_runs_backwards(world):
    """Admission time below the ledger's last is refused before admission (the rule's own check stays
    as a second line), journalling nothing."""
    session_id = world.session()
    opened = world.state(schema.session_key(session_id))["updated_at_ms"]
    head = world.owner.head()
    with pytest.raises(LedgerError) as refused:
        world.close_session(session_id, at=opened - 1)
    assert refused.value.code == "ADMISSION_TIME_REGRESSED" and world.owner.head() == head
    assert world.close_session(session_id, at=max(opened + 1, world.owner.admission_floor_ms())).accepted


def test_no_session_opens_on_a_closed_day(world):
    world.listen()
    world.next_day()
    assert world.close_day().accepted
    head = world.owner.head()
    with pytest.raises(LedgerError) as refused:  # a closed day's time is behind the ledger's
        world.open_session(at=DAY * DAY_MS + 23 * 3_600_000)
    assert refused.value.code == "ADMISSION_TIME_REGRESSED" and world.owner.head() == head

"""DisableWork: a withdrawn work streams no more until ActivateWork brings the next rights version."""

from __future__ import annotations

from ledger_engine.domain.commands.catalogue import work_key
from tests.streaming.conftest import COORDINATOR, INGEST
from tests.support import payloads

EVIDENCE = "ee" * 32


def _withdraw(world, **options):
    return world.submit("DisableWork", {"work_id": "work-1", "reason": "rights_dispute", "evidence_digest": EVIDENCE},
                        evidence=[EVIDENCE], **{"actor": INGEST, "expected": world.stated(work_key("work-1")),
                                                **options})


def test_a_withdrawn_work_opens_no_session_until_reactivated(world):
    assert _withdraw(world).accepted
    work = world.state(work_key("work-1"))
    assert (work["status"], work["last_withdrawal"]["reason"]) == ("withdrawn", "rights_dispute")
    assert world.open_session().code == "INVALID_STATE"
    assert world.ok("ActivateWork", payloads.rights("work-1", {"artist-1": 10_000}, version=2), actor=INGEST)
    assert world.state(work_key("work-1"))["status"] == "active"
    assert world.session()


def test_withdrawing_names_the_work_revision_and_happens_once(world):
    payload = {"work_id": "work-1", "reason": "rights_dispute", "evidence_digest": EVIDENCE}
    world.rejected("STALE_REVISION", "DisableWork", payload, actor=INGEST, evidence=[EVIDENCE])
    world.rejected("INVALID_REFERENCE", "DisableWork", payload, actor=INGEST, evidence=[],
                   expected=world.stated(work_key("work-1")))
    assert _withdraw(world).accepted
    assert _withdraw(world).code == "INVALID_STATE"
    world.rejected("NOT_FOUND", "DisableWork", {**payload, "work_id": "work-9"}, actor=INGEST, evidence=[EVIDENCE],
                   expected=[{"cf": "state", "key": work_key("work-9"), "revision": None}])


def test_only_ingest_or_admin_withdraw(world):
    assert _withdraw(world, actor=COORDINATOR).code == "CAPABILITY_MISSING"
    assert world.state(work_key("work-1"))["status"] == "active"

"""Holds (ops): the queue by age and reason, a hold's evidence, single and bulk decisions.

The ledger comes from the streaming tests' world: an active node whose
operator declared the listener affiliated, so its receipts are held.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from ledger_engine.genesis import default_genesis
from porto_console import ledger as console_ledger
from porto_console.console.commands import new_command_id
from porto_console.console.handles import seal
from porto_console.console.labels import human
from porto_console.console.services.users import sync_user
from tests.streaming.conftest import OPS, bare_world, world  # noqa: F401  (the streaming world, on this owner)

HELD_REASONS = ["duration_beyond_rendition", "self_serving_node"]


@pytest.fixture
def owner(tmp_path):
    """The console's owner is the one the streaming world submits to."""
    yield console_ledger.open_owner(tmp_path / "ledger", genesis=default_genesis())
    console_ledger.close_owner()


@pytest.fixture
def held(world) -> dict:  # noqa: F811
    """Three counted receipts on node-1 and three held ones on self-serving node-2, oldest first."""
    world.active_node("node-2", "operator-2", affiliated=["listener-1"])
    session_id = world.session()
    counted = [world.served(session_id, index)["receipt_id"] for index in range(3)]
    holds = []
    for index in range(3):
        world.now += 5_000
        holds.append(world.served(session_id, index, node_id="node-2")["receipt_id"])
    return {"session_id": session_id, "counted": counted, "holds": holds, "world": world}


@pytest.fixture
def ops(db) -> Client:
    user, _ = sync_user(OPS, roles=["ops"], active=True)
    client = Client()
    client.force_login(user)
    return client


def hold_state(world, hold_id: str) -> dict:
    return world.state(f"hold/{hold_id}")


def test_the_queue_lists_open_holds_oldest_first_with_counts_per_reason(ops, held):
    page = ops.get("/ledger/holds/").content.decode()
    listed = re.findall(r'href="/ledger/holds/([^/"]+)/"', page)
    assert listed == [seal("hold", hold_id) for hold_id in held["holds"]]
    counts = page.split('id="hold-counts"')[1].split("</div>")[0]
    for reason in HELD_REASONS:
        assert re.search(rf"<h2>{human(reason)}</h2><p class=\"figure\">3</p>", counts)
    assert "No open holds for late." in ops.get("/ledger/holds/", {"reason": "late"}).content.decode()


def test_a_hold_shows_its_sessions_evidence(ops, held):
    page = ops.get(f"/ledger/holds/{seal('hold', held['holds'][0])}/").content.decode()
    assert held["session_id"] in page and "node-2" in page
    assert "Receipts (6)" in page and "Grants (6)" in page
    assert "Decisions history (6)" in page
    assert ", ".join(f'<span class="enum" title="{reason}">{human(reason)}</span>' for reason in HELD_REASONS) in page


def test_ops_releases_a_hold_with_a_reason_and_a_private_note(ops, held):
    hold_id = held["holds"][0]
    url = f"/ledger/holds/{seal('hold', hold_id)}/"
    response = ops.post(url, {"command_id": new_command_id(), "decision": "release", "reason": "operator_explained",
                              "note": "operator showed the affiliation was stale", "revision": "1"}, follow=True)
    assert "Hold released" in response.content.decode()
    hold = hold_state(held["world"], hold_id)
    assert hold["status"] == "released" and hold["decision"]["actor_id"] == OPS
    assert hold["decision"]["reason"] == "operator_explained" and hold["decision"]["note_digest"]
    assert "operator showed" not in str(held["world"].owner.journal_entry(held["world"].owner.head().sequence))
    assert "a hold is decided once" in response.content.decode()


def test_a_decision_form_reposted_with_another_note_is_refused_and_stores_nothing(ops, held):
    hold_id = held["holds"][0]
    url = f"/ledger/holds/{seal('hold', hold_id)}/"
    form = {"command_id": new_command_id(), "decision": "release", "reason": "operator_explained",
            "note": "the affiliation was stale", "revision": "1"}
    ops.post(url, form)
    evidence_root = console_ledger.gateway().evidence.root
    stored = sorted(evidence_root.rglob("*"))
    response = ops.post(url, {**form, "note": "a note nobody's command cites"}, follow=True)
    assert "COMMAND_ID_CONFLICT" in response.content.decode()
    assert sorted(evidence_root.rglob("*")) == stored
    assert hold_state(held["world"], hold_id)["decision"]["note_digest"] in {path.name for path in stored}


def test_a_decision_on_a_hold_someone_else_just_decided_is_refused(ops, held):
    hold_id = held["holds"][0]
    url = f"/ledger/holds/{seal('hold', hold_id)}/"
    ops.post(url, {"command_id": new_command_id(), "decision": "reject", "reason": "fraud_suspected", "revision": "1",
                   "confirmed": "True"})
    response = ops.post(url, {"command_id": new_command_id(), "decision": "release", "reason": "evidence_verified",
                              "revision": "1"}, follow=True)
    assert "Not allowed: STALE_REVISION" in response.content.decode()
    assert hold_state(held["world"], hold_id)["status"] == "rejected"


def test_bulk_decisions_of_one_reason_are_one_command_each_and_never_repeat(ops, held):
    world, holds = held["world"], held["holds"]
    data = {"command_id": new_command_id(), "hold_reason": "self_serving_node", "holds": holds[:2],
            "decision": "reject", "reason": "policy_violation", "confirmed": "True"}
    head = world.owner.head().sequence
    response = ops.post("/ledger/holds/bulk/", data, follow=True)
    assert "2 of 2 holds rejected, one command each." in response.content.decode()
    entries = [world.owner.journal_entry(sequence) for sequence in (head + 1, head + 2)]
    assert [entry["envelope"]["payload"]["hold_id"] for entry in entries] == holds[:2]
    assert world.owner.head().sequence == head + 2
    assert [hold_state(world, hold_id)["status"] for hold_id in holds] == ["rejected", "rejected", "open"]
    again = ops.post("/ledger/holds/bulk/", data, follow=True).content.decode()
    assert world.owner.head().sequence == head + 2
    assert "2 of 2 holds rejected" in again and "COMMAND_ID_CONFLICT" not in again  # the form's own answers


def test_bulk_refuses_a_hold_of_another_reason(ops, held):
    world = held["world"]
    response = ops.post("/ledger/holds/bulk/", {
        "command_id": new_command_id(), "hold_reason": "late", "holds": held["holds"][:1], "decision": "release",
        "reason": "evidence_verified", "confirmed": "True"}, follow=True)
    assert "the hold is not one of the late holds" in response.content.decode()
    assert hold_state(world, held["holds"][0])["status"] == "open"


def test_the_bulk_form_appears_only_for_one_reason(ops, held):
    assert 'id="bulk"' not in ops.get("/ledger/holds/").content.decode()
    page = ops.get("/ledger/holds/", {"reason": "self_serving_node"}).content.decode()
    assert 'id="bulk"' in page and page.count('name="holds"') == 3


def test_the_decision_form_offers_each_reason_under_its_own_decision(ops, held):
    page = ops.get(f"/ledger/holds/{seal('hold', held['holds'][0])}/").content.decode()
    release = page.split('<optgroup label="Release because">')[1].split("</optgroup>")[0]
    reject = page.split('<optgroup label="Reject because">')[1].split("</optgroup>")[0]
    assert 'value="clock_skew_explained"' in release and 'value="clock_skew_explained"' not in reject
    assert 'value="fraud_suspected"' in reject and 'value="fraud_suspected"' not in release


def test_a_reject_for_a_release_reason_is_refused_and_changes_nothing(ops, held):
    world, hold_id = held["world"], held["holds"][0]
    head = world.owner.head().sequence
    response = ops.post(f"/ledger/holds/{seal('hold', hold_id)}/", {
        "command_id": new_command_id(), "decision": "reject", "reason": "clock_skew_explained", "revision": "1"})
    assert "HOLD_REASON_MISMATCH" in response.content.decode()
    bulk = ops.post("/ledger/holds/bulk/", {"command_id": new_command_id(), "hold_reason": "self_serving_node",
                                            "holds": held["holds"][:2], "decision": "release",
                                            "reason": "fraud_suspected"}, follow=True)
    assert "HOLD_REASON_MISMATCH" in bulk.content.decode()
    assert world.owner.head().sequence == head
    assert hold_state(world, hold_id)["status"] == "open"


def test_bulk_first_lists_what_will_happen_to_each_ticked_hold_and_decides_nothing(ops, held):
    world, holds = held["world"], held["holds"]
    assert ops.post(f"/ledger/holds/{seal('hold', holds[2])}/", {
        "command_id": new_command_id(), "decision": "release", "reason": "evidence_verified", "revision": "1"}
    ).status_code == 302
    head = world.owner.head().sequence
    response = ops.post("/ledger/holds/bulk/", {"command_id": new_command_id(), "hold_reason": "self_serving_node",
                                                "holds": holds, "decision": "reject", "reason": "policy_violation"})
    page = response.content.decode()
    assert response.status_code == 200 and world.owner.head().sequence == head
    plan = page.split('id="bulk-plan"')[1].split("</table>")[0]
    assert plan.count("<tr>") == 4 and plan.count(">rejected</td>") == 2 and "skipped: already released" in plan
    assert "2 holds will be rejected because" in page
    form = page.split('id="bulk-confirm"')[1]
    assert re.findall(r'name="holds" value="([^"]+)"', form) == holds
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form))
    assert fields["confirmed"] == "True"
    done = ops.post("/ledger/holds/bulk/", {**fields, "holds": holds}, follow=True).content.decode()
    assert "2 of 3 holds rejected, one command each." in done
    assert [hold_state(world, hold_id)["status"] for hold_id in holds] == ["rejected", "rejected", "released"]


def test_the_queue_offers_select_all_for_the_bulk_form(ops, held):
    page = ops.get("/ledger/holds/", {"reason": "self_serving_node"}).content.decode()
    assert 'id="select-all" data-select-all="holds"' in page and "console/select_all.js" in page


def test_a_single_rejection_is_asked_about_first_and_decided_only_once_confirmed(ops, held):
    hold_id, world = held["holds"][0], held["world"]
    url = f"/ledger/holds/{seal('hold', hold_id)}/"
    form = {"command_id": new_command_id(), "decision": "reject", "reason": "fraud_suspected", "revision": "1"}
    head = world.owner.head()
    asked = ops.post(url, form).content.decode()
    assert "Reject this hold?" in asked and "A rejection is final" in asked
    assert world.owner.head() == head and hold_state(world, hold_id)["status"] == "open"
    confirm = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', asked))
    assert confirm["command_id"] == form["command_id"] and confirm["confirmed"] == "True"
    decided = ops.post(url, confirm, follow=True).content.decode()
    assert "Hold rejected" in decided and hold_state(world, hold_id)["status"] == "rejected"


def test_a_release_is_decided_at_once(ops, held):
    hold_id = held["holds"][0]
    ops.post(f"/ledger/holds/{seal('hold', hold_id)}/", {"command_id": new_command_id(), "decision": "release",
                                                          "reason": "operator_explained", "revision": "1"})
    assert hold_state(held["world"], hold_id)["status"] == "released"


def test_every_evidence_table_of_a_hold_has_column_headers(ops, held):
    page = ops.get(f"/ledger/holds/{seal('hold', held['holds'][0])}/").content.decode()
    for table, first in (("session-nodes", "Node"), ("session-grants", "Grant"), ("session-receipts", "Receipt"),
                         ("session-decisions", "Decision")):
        assert re.search(rf'id="{table}">\s*<thead><tr><th scope="col">{first}</th>', page), table

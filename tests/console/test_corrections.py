"""Corrections (finance): one user requests a reversal and replacement, another approves it with a code."""

from __future__ import annotations

import json
import re

from django.test import Client

from porto_console.console.commands import new_command_id
from porto_console.console.handles import seal
from porto_console.console.services.corrections import correction_id_for
from tests.console.conftest import code_for
from tests.money_allocation.world import FINANCE, FINANCE_2
from tests.support import payloads


def reversible(world) -> tuple[dict, list[dict]]:
    """A payable artist line and its replacement under a corrected rights version of its work."""
    line = next(value["data"] for _, value in world.owner.scan("state", "allocation_line/", limit=10_000)
                if value["data"]["status"] == "payable" and value["data"]["role"] == "artist")
    work = world.state(f"work/{line['work_id']}")
    version = work["rights_version"] + 1
    world.money.submit_ok("ActivateWork", payloads.rights(line["work_id"], {"artist-c": 10_000}, version=version),
                          actor="ingest-1")
    return line, [{"role": "artist", "recipient_id": "artist-c", "work_id": line["work_id"],
                   "rights_version": version, "amount": line["amount"]}]


def request_correction(client: Client, world) -> tuple[str, str, dict]:
    line, replacements = reversible(world)
    command_id = new_command_id()
    response = client.post("/ledger/corrections/request/", {
        "command_id": command_id, "budget_id": line["budget_id"], "reason": "rights_error",
        "reverses": line["line_id"], "replacements": json.dumps(replacements), "remainder_to": "unallocated",
        "refund_unallocated": "0"})
    assert response.status_code == 302, response.content.decode()[-2000:]
    return response["Location"], correction_id_for(command_id), line


def test_a_request_shows_what_it_will_post_and_holds_its_lines(finance, payouts_world):
    url, correction_id, line = request_correction(finance[FINANCE], payouts_world)
    assert url == f"/ledger/corrections/{seal('correction', correction_id)}/"
    request = payouts_world.state(f"correction_request/{correction_id}")
    assert (request["status"], request["requested_by"]) == ("requested", FINANCE)
    assert payouts_world.state(f"allocation_line/{line['line_id']}")["pending_correction"] == correction_id
    page = finance[FINANCE_2].get(url).content.decode()
    assert request["request_hash"] in page and line["line_id"] in page
    assert all(entry["account"] in page for entry in request["entries"])
    assert "You requested this correction" in finance[FINANCE].get(url).content.decode()
    assert correction_id in finance[FINANCE_2].get("/ledger/corrections/").content.decode()


def test_the_requester_cannot_approve_even_with_a_forged_post(finance, payouts_world):
    url, correction_id, _ = request_correction(finance[FINANCE], payouts_world)
    request = payouts_world.state(f"correction_request/{correction_id}")
    response = finance[FINANCE].post(url + "approve/", {"command_id": new_command_id(), "otp_token": code_for(FINANCE),
                                                        "seen_hash": request["request_hash"]}, follow=True)
    assert "Not allowed: FOUR_EYES_REQUIRED" in response.content.decode()
    assert payouts_world.state(f"correction/{correction_id}") is None


def test_another_finance_user_approves_and_the_correction_posts(finance, payouts_world):
    url, correction_id, line = request_correction(finance[FINANCE], payouts_world)
    request = payouts_world.state(f"correction_request/{correction_id}")
    response = finance[FINANCE_2].post(url + "approve/", {"command_id": new_command_id(),
                                                          "otp_token": code_for(FINANCE_2),
                                                          "seen_hash": request["request_hash"]}, follow=True)
    assert "Correction approved and posted" in response.content.decode()
    assert re.search(r'id="correction-status"><span class="enum" title="approved">Approved<', response.content.decode())
    assert payouts_world.state(f"allocation_line/{line['line_id']}")["status"] == "reversed"
    correction = payouts_world.state(f"correction/{correction_id}")
    assert (correction["requested_by"], correction["approved_by"]) == (FINANCE, FINANCE_2)


def test_declining_releases_the_lines(finance, payouts_world):
    url, correction_id, line = request_correction(finance[FINANCE], payouts_world)
    response = finance[FINANCE_2].post(url + "decline/", {"command_id": new_command_id(),
                                                          "reason": "amounts_disputed"}, follow=True)
    assert "Correction declined" in response.content.decode()
    assert payouts_world.state(f"allocation_line/{line['line_id']}")["pending_correction"] is None
    assert payouts_world.state(f"correction_request/{correction_id}")["decision"]["reason"] == "amounts_disputed"


def test_a_request_the_ledger_refuses_says_why(finance, payouts_world):
    line, replacements = reversible(payouts_world)
    bad = [{**replacements[0], "work_id": "work-404"}]
    response = finance[FINANCE].post("/ledger/corrections/request/", {
        "command_id": new_command_id(), "budget_id": line["budget_id"], "reason": "rights_error",
        "reverses": line["line_id"], "replacements": json.dumps(bad), "remainder_to": "unallocated",
        "refund_unallocated": "0"}, follow=True)
    assert "INVALID_REFERENCE" in response.content.decode()

"""Recipient updates (finance): request with ownership evidence, side-by-side review, four eyes, step-up."""

from __future__ import annotations

import re

from django.test import Client

from porto_console.console.commands import new_command_id
from porto_console.console.handles import seal
from porto_console.console.services.recipients import update_id_for
from tests.console.conftest import code_for
from tests.money_allocation.world import FINANCE, FINANCE_2

RECIPIENT = "artist-a"
NEW_ADDRESS = "0x" + "5e" * 32
EVIDENCE = "I, artist-a, control 0x5e5e... (signed message)"


def request_change(client: Client) -> tuple[str, str]:
    """Request the change through the form; returns its page's URL and the update ID."""
    command_id = new_command_id()
    response = client.post("/ledger/recipients/request/", {"command_id": command_id, "recipient_id": RECIPIENT,
                                                          "payout_address": NEW_ADDRESS, "evidence": EVIDENCE})
    assert response.status_code == 302
    return response["Location"], update_id_for(command_id)


def test_a_request_holds_the_old_and_new_address_side_by_side_with_its_evidence(finance, payouts_world):
    old = payouts_world.state(f"recipient/{RECIPIENT}")
    url, update_id = request_change(finance[FINANCE])
    assert url == f"/ledger/recipients/{seal('recipient-update', f'{RECIPIENT}/{update_id}')}/"
    update = payouts_world.state(f"recipient_update/{RECIPIENT}/{update_id}")
    assert (update["status"], update["old_address"], update["payout_address"]) == ("pending", old["payout_address"],
                                                                                  NEW_ADDRESS)
    page = finance[FINANCE_2].get(url).content.decode()
    old_side, new_side = page.split('class="old"')[1], page.split('class="new"')[1]
    assert old["payout_address"] in old_side.split("</section>")[0]
    assert NEW_ADDRESS in new_side.split("</section>")[0]
    assert EVIDENCE in page and update["evidence_digest"] in page
    assert "You requested this change" in finance[FINANCE].get(url).content.decode()
    listed = finance[FINANCE_2].get("/ledger/recipients/").content.decode()
    assert url in listed


def test_the_requester_cannot_approve_even_with_a_forged_post(finance, payouts_world):
    url, update_id = request_change(finance[FINANCE])
    head = payouts_world.owner.head().sequence
    response = finance[FINANCE].post(url + "approve/", {"command_id": new_command_id(),
                                                        "otp_token": code_for(FINANCE)}, follow=True)
    assert "Not allowed: FOUR_EYES_REQUIRED" in response.content.decode()
    assert payouts_world.owner.journal_entry(head + 1)["result"]["code"] == "FOUR_EYES_REQUIRED"
    assert payouts_world.state(f"recipient/{RECIPIENT}")["version"] == 1


def test_approval_with_a_wrong_code_submits_nothing(finance, payouts_world):
    url, update_id = request_change(finance[FINANCE])
    head = payouts_world.owner.head()
    refused = finance[FINANCE_2].post(url + "approve/", {"command_id": new_command_id(), "otp_token": "000000"},
                                      follow=True)
    assert "authenticator code is not valid" in refused.content.decode()
    assert payouts_world.owner.head() == head


def test_another_finance_user_approves_with_a_current_code(finance, payouts_world):
    url, update_id = request_change(finance[FINANCE])
    response = finance[FINANCE_2].post(url + "approve/", {"command_id": new_command_id(),
                                                          "otp_token": code_for(FINANCE_2)}, follow=True)
    assert "Address change approved" in response.content.decode()
    assert payouts_world.state(f"recipient/{RECIPIENT}") == {"recipient_id": RECIPIENT, "payout_address": NEW_ADDRESS,
                                                             "version": 2}
    assert re.search(r'id="update-status"><span class="enum" title="approved">Approved<', response.content.decode())


def test_a_request_posted_again_after_its_approval_gets_its_own_answer(finance, payouts_world):
    form = {"command_id": new_command_id(), "recipient_id": RECIPIENT, "payout_address": NEW_ADDRESS,
            "evidence": EVIDENCE}
    url = finance[FINANCE].post("/ledger/recipients/request/", form)["Location"]
    finance[FINANCE_2].post(url + "approve/", {"command_id": new_command_id(), "otp_token": code_for(FINANCE_2)})
    assert payouts_world.state(f"recipient/{RECIPIENT}")["version"] == 2
    head = payouts_world.owner.head()
    again = finance[FINANCE].post("/ledger/recipients/request/", form, follow=True)
    page = again.content.decode()
    assert "already submitted: this is the original answer" in page and "COMMAND_ID_CONFLICT" not in page
    assert payouts_world.owner.head() == head


def test_declining_keeps_the_address_and_records_the_reason(finance, payouts_world):
    url, update_id = request_change(finance[FINANCE])
    response = finance[FINANCE_2].post(url + "decline/", {"command_id": new_command_id(),
                                                          "reason": "evidence_insufficient"}, follow=True)
    assert "Address change declined" in response.content.decode()
    update = payouts_world.state(f"recipient_update/{RECIPIENT}/{update_id}")
    assert update["status"] == "declined" and update["decision"]["reason"] == "evidence_insufficient"
    assert payouts_world.state(f"recipient/{RECIPIENT}")["version"] == 1

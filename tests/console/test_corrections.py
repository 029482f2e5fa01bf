"""Corrections (finance): one user requests a reversal and replacement, another approves it with a code."""

from __future__ import annotations

import html
import re

import pytest

from django.test import Client

from porto_console.console.commands import new_command_id
from porto_console.console.handles import seal
from porto_console.console.services.corrections import correction_id_for
from ledger_engine.domain.allocation_policy import split_by_rights
from porto_console.console import commands
from porto_console.console.services import corrections as service
from porto_console.console.services.accounting import formatted
from porto_console.ledger import owner
from porto_console.console.views.corrections import listener_day_value
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


PAGE = "/ledger/corrections/request/"


def in_usdc(minor_units: str) -> str:
    """Minor units as a finance user types them: ``7500`` -> ``0.0075``."""
    whole, fraction = divmod(int(minor_units), 1_000_000)
    return f"{whole}.{fraction:06d}".rstrip("0").rstrip(".")


def listener_day(line: dict) -> str:
    return listener_day_value(line["listener_id"], line["day"])


def edit_page(client: Client, budget_id: str, day: str) -> str:
    response = client.get(PAGE, {"budget": budget_id, "listener_day": day})
    assert response.status_code == 200
    return response.content.decode()


def form_data(page: str, line: dict, rows: list[dict], *, reverses: list[str] | None = None,
              remainder_to: str = "unallocated", **fields: str) -> dict:
    """What the browser posts: the page's command ID, the chosen lines, the rows as typed, in USDC."""
    data = {"command_id": re.search(r'name="command_id" value="([^"]+)"', page)[1], "budget_id": line["budget_id"],
            "listener_day": listener_day(line), "reverses": reverses or [line["line_id"]], "reason": "rights_error",
            "remainder_to": remainder_to, "refund_unallocated": "0", "rows-TOTAL_FORMS": str(len(rows)),
            "rows-INITIAL_FORMS": "0", "rows-MIN_NUM_FORMS": "0", "rows-MAX_NUM_FORMS": "4096", **fields}
    for number, row in enumerate(rows):
        data.update({f"rows-{number}-{name}": value for name, value in row.items()})
    return data


def typed(replacement: dict) -> dict:
    """A replacement line as its row is typed: no rights version (the server fills it), the amount in USDC."""
    return {"role": replacement["role"], "recipient_id": replacement["recipient_id"],
            "work_id": replacement.get("work_id", ""), "node_id": replacement.get("node_id", ""),
            "amount": in_usdc(replacement["amount"])}


def review(client: Client, data: dict):
    response = client.post(PAGE, {**data, "action": "review"})
    assert response.status_code == 200
    return response


def carried(review_page: str) -> dict:
    """The review's hidden fields, as its Submit button posts them."""
    form = review_page[review_page.index('id="review-form"'):]
    data: dict[str, list[str]] = {}
    for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form):
        data.setdefault(name, []).append(html.unescape(value))
    return data


def submit_reviewed(client: Client, data: dict):
    page = review(client, data).content.decode()
    assert 'id="review-form"' in page, page[-3000:]
    return client.post(PAGE, {**carried(page), "action": "submit"})


def request_correction(client: Client, world) -> tuple[str, str, dict]:
    line, replacements = reversible(world)
    data = form_data(edit_page(client, line["budget_id"], listener_day(line)), line, [typed(r) for r in replacements])
    response = submit_reviewed(client, data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    return response["Location"], correction_id_for(data["command_id"]), line


def no_requests(world) -> bool:
    return not world.owner.scan("state", "correction_request/", limit=1)


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


def test_a_request_the_ledger_refuses_says_why_in_words_on_the_row(finance, payouts_world):
    line, replacements = reversible(payouts_world)
    wrong_split = {**typed(replacements[0]), "work_id": "work-3"}  # artist-c alone cannot take all of work-3
    page = edit_page(finance[FINANCE], line["budget_id"], listener_day(line))
    response = submit_reviewed(finance[FINANCE], form_data(page, line, [wrong_split]))
    page = response.content.decode()
    expected = split_by_rights(int(line["amount"]), (("artist-b", 3333), ("artist-c", 6667)))
    row = page[page.index('id="row-0"'):page.index("</tr>", page.index('id="row-0"'))]
    assert "(INVALID_SPLITS)" in row and "must split" in row
    assert all(f"{recipient} {usdc(part)}" in html.unescape(row) for recipient, part in expected)
    assert "The ledger refused the command" not in page and "not {" not in page
    assert 'name="command_id" value="' + response.wsgi_request.POST["command_id"] not in page  # a fresh form ID


def usdc(minor_units: int) -> str:
    return formatted(minor_units, "USDC")


def test_picked_lines_and_usdc_amounts_send_what_the_json_form_sent(finance, payouts_world):
    line, replacements = reversible(payouts_world)
    page = edit_page(finance[FINANCE], line["budget_id"], listener_day(line))
    data = form_data(page, line, [typed(r) for r in replacements])
    assert submit_reviewed(finance[FINANCE], data).status_code == 302
    answered = owner().resolve(commands.journalled_id(FINANCE, data["command_id"]))
    sent = owner().journal_entry(answered.sequence)["envelope"]["payload"]
    old_form = service.request_correction(data["command_id"], line["budget_id"], "rights_error", [line["line_id"]],
                                          replacements, "unallocated", "0")
    assert sent == old_form.payload


def test_the_review_shows_the_totals_in_usdc_before_anything_is_submitted(finance, payouts_world):
    line, replacements = reversible(payouts_world)
    half = {**typed(replacements[0]), "amount": in_usdc(str(int(line["amount"]) // 2))}
    page = edit_page(finance[FINANCE], line["budget_id"], listener_day(line))
    shown = review(finance[FINANCE], form_data(page, line, [half], remainder_to="refund")).content.decode()
    remainder = int(line["amount"]) - int(line["amount"]) // 2
    assert usdc(int(line["amount"])) in shown and f"{usdc(remainder)}</span> goes out as a refund" in shown
    assert no_requests(payouts_world)


@pytest.mark.parametrize("amount, says", [
    ("0.0000001", "at most 6 digits after the point"),
    ("-0.5", "Enter a positive amount"),
    ("1.2x", "digits with one decimal point"),
    ("0", "above zero"),
])
def test_a_bad_amount_is_refused_on_its_row_and_nothing_is_submitted(finance, payouts_world, amount, says):
    line, replacements = reversible(payouts_world)
    page = edit_page(finance[FINANCE], line["budget_id"], listener_day(line))
    response = review(finance[FINANCE], form_data(page, line, [{**typed(replacements[0]), "amount": amount}]))
    page = response.content.decode()
    assert 'id="review-form"' not in page
    row = page[page.index('id="row-0"'):page.index("</tr>", page.index('id="row-0"'))]
    assert says in html.unescape(row)
    submitted = finance[FINANCE].post(PAGE, {**form_data(page, line, [{**typed(replacements[0]), "amount": amount}]),
                                             "action": "submit"})
    assert submitted.status_code == 200 and no_requests(payouts_world)


def test_usdc_amounts_become_minor_units_exactly():
    assert service.minor_units("1.25") == 1_250_000
    assert service.minor_units("0.000001") == 1 and service.minor_units(".5") == 500_000
    assert service.minor_units("18446744073709.551615") == 2**64 - 1
    for refused in ("18446744073709.551616", "1e3", "1.0000001", "-1", "", "1,5", "0.0"):
        with pytest.raises(ValueError):
            service.minor_units(refused)
    assert service.minor_units("0", zero=True) == 0


def test_a_reserved_line_is_shown_not_selectable_saying_which_run(finance, payouts_world):
    line, _ = reversible(payouts_world)
    plan = {line["recipient_id"]: [line["line_id"]]}
    assert payouts_world.prepare("run-1", plan).accepted
    assert payouts_world.approve("run-1", payouts_world.confirmed_statements(list(plan))).accepted
    page = edit_page(finance[FINANCE], line["budget_id"], listener_day(line))
    row = page[page.index(f'id="line-{line["line_id"]}"'):]
    row = row[:row.index("</tr>")]
    assert "Not reversible: reserved in payout run run-1" in row and 'type="checkbox"' not in row
    assert f'value="{line["line_id"]}"' not in page


def test_a_line_held_by_another_request_is_not_selectable(finance, payouts_world):
    _, correction_id, line = request_correction(finance[FINANCE], payouts_world)
    page = edit_page(finance[FINANCE_2], line["budget_id"], listener_day(line))
    assert f"Not reversible: held for correction {correction_id}" in page


def refund_budget(world, budget_id: str, period_id: str, listener_id: str) -> None:
    evidence = "ab" * 32
    outcome = world.money.submit("ApplyBillingObservation", {
        "provider": "test-pay", "event_id": "refund-1", "kind": "payment_refunded", "occurred_at_ms": world.now_ms,
        "provider_period_id": f"pp-{period_id}", "period_id": period_id, "account_id": listener_id,
        "evidence_digest": evidence}, actor="ingest-1", evidence=[evidence])
    assert outcome.accepted, outcome.result
    assert world.state(f"budget_refund/{budget_id}") is not None


def test_a_refunded_budget_offers_only_a_refund_for_the_rest(finance, payouts_world):
    line = next(value["data"] for _, value in payouts_world.owner.scan("state", "allocation_line/", limit=100)
                if value["data"]["status"] == "payable")
    refund_budget(payouts_world, line["budget_id"], "period-1", line["listener_id"])
    page = edit_page(finance[FINANCE], line["budget_id"], listener_day(line))
    assert 'value="refund"' in page and 'value="unallocated"' not in page and 'id="refunded-budget"' in page
    response = submit_reviewed(finance[FINANCE], form_data(page, line, [], remainder_to="refund"))
    assert response.status_code == 302
    request = payouts_world.state(f"correction_request/{correction_id_for(form_data(page, line, [])['command_id'])}")
    assert request["remainder_to"] == "refund"
    assert request["amounts"]["refunded"] == line["amount"]


def test_the_split_helper_fills_rows_the_ledger_accepts(finance, payouts_world):
    line = next(value["data"] for _, value in payouts_world.owner.scan("state", "allocation_line/", limit=100)
                if value["data"].get("work_id") == "work-3" and value["data"]["status"] == "payable")
    siblings = [value["data"]["line_id"] for _, value in payouts_world.owner.scan("state", "allocation_line/", limit=100)
                if value["data"].get("work_id") == "work-3" and value["data"]["day"] == line["day"]]
    total = sum(int(payouts_world.state(f"allocation_line/{line_id}")["amount"]) for line_id in siblings)
    page = edit_page(finance[FINANCE], line["budget_id"], listener_day(line))
    filled = finance[FINANCE].post(PAGE, {**form_data(page, line, [], reverses=siblings),
                                          "split_work": "work-3", "split_total": in_usdc(str(total)),
                                          "action": "split"}).content.decode()
    rows = [dict(zip(("recipient_id", "amount"), found)) for found in re.findall(
        r'name="rows-\d+-recipient_id"[^>]*>.*?<option value="([^"]+)" selected>.*?'
        r'name="rows-\d+-amount" value="([^"]+)"', filled, re.S)]
    expected = [(recipient, part) for recipient, part in split_by_rights(total, (("artist-b", 3333), ("artist-c", 6667)))]
    assert rows == [{"recipient_id": recipient, "amount": in_usdc(str(part))} for recipient, part in expected]
    typed_rows = [{"role": "artist", "recipient_id": row["recipient_id"], "work_id": "work-3", "node_id": "",
                   "amount": row["amount"]} for row in rows]
    response = submit_reviewed(finance[FINANCE], form_data(filled, line, typed_rows, reverses=siblings))
    assert response.status_code == 302, response.content.decode()[-3000:]


def test_the_old_raw_refusals_no_longer_reach_the_page(finance, payouts_world):
    line, replacements = reversible(payouts_world)
    page = edit_page(finance[FINANCE], line["budget_id"], listener_day(line))
    data = form_data(page, line, [typed(r) for r in replacements])
    # Reviewed, then the line is reversed by another request before submitting.
    reviewed = carried(review(finance[FINANCE], data).content.decode())
    other = form_data(edit_page(finance[FINANCE_2], line["budget_id"], listener_day(line)), line, [])
    assert submit_reviewed(finance[FINANCE_2], other).status_code == 302
    page = finance[FINANCE].post(PAGE, {**reviewed, "action": "submit"}).content.decode()
    assert "can no longer be reversed" in page
    for raw in ("The ledger refused the command", "INVALID_PAYLOAD ((root)", "not a canonical unsigned decimal"):
        assert raw not in page


@pytest.mark.parametrize("code, detail, rows, says, where", [
    ("INVALID_AMOUNT", "replacements.0.amount: not a canonical unsigned decimal string: '-500'",
     [{"role": "artist"}], "Enter the amount in USDC above zero", (0, "amount")),
    ("INVALID_PAYLOAD", "(root): Value error, a correction reverses lines (and may replace them) or refunds "
     "unallocated units", [], "Choose at least one line to reverse", (None, "reverses")),
    ("INVALID_STATE", "budget budget-1 was refunded: the 5 this correction does not replace cannot go back into it",
     [], "must go out as a refund", (None, "remainder_to")),
    ("INSUFFICIENT_FUNDS", "budget budget-1 has 0 unallocated, less than the 5 to refund", [],
     "lower that amount", (None, "refund_unallocated")),
    ("INVALID_REFERENCE", "node node-1 is not operated by operator-y",
     [{"role": "operator", "node_id": "node-1", "recipient_id": "operator-y"}], "choose the node's operator",
     (0, "recipient_id")),
])
def test_refusals_of_a_request_are_said_in_words_with_their_code(code, detail, rows, says, where):
    problem = service.in_words(code, detail, rows, {})
    assert says in problem.message and problem.message.endswith(f"({code})")
    assert (problem.row, problem.field) == where
    assert detail not in problem.message

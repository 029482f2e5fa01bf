"""The effect quarantine screen: what the workers parked and why, with the ledger's status; ops retry one by one."""

from __future__ import annotations

import orjson
import pytest

from ledger_engine.layout import INDEXES, OUTBOX
from porto_console.console.handles import seal
from porto_console.console.roles import CONSOLE_ROLES
from porto_console.effects.quarantine import Quarantine
from tests.console.test_permissions import client_with_roles


@pytest.fixture
def parked(ledger, settings) -> tuple[Quarantine, str]:
    """One of the demo's outbox effects, quarantined as a worker would after its retries ran out."""
    quarantine = Quarantine(settings.QUARANTINE_DIR)
    index_key, _ = ledger.scan(INDEXES, "effect_by_status/", limit=1)[0]
    effect_id = index_key.rsplit("/", 1)[1]
    quarantine.add(effect_id, ledger.get(OUTBOX, effect_id).data["kind"], "Poison: chain refused the transfer", 8)
    return quarantine, effect_id


def retry_url(effect_id: str) -> str:
    return f"/ledger/quarantine/{seal('effect', effect_id)}/retry/"


def test_the_screen_lists_each_effect_with_its_reason_and_ledger_status(client_as, ledger, parked):
    _, effect_id = parked
    page = client_as("ops").get("/ledger/quarantine/").content.decode()
    assert effect_id in page and "Poison: chain refused the transfer" in page
    status = ledger.get(OUTBOX, effect_id).data["status"]
    assert f'<td class="ledger-status"><span class="enum" title="{status}">{status.capitalize()}</span></td>' in page
    assert page.count('value="Retry"') == 1


def test_an_empty_quarantine_says_so(client_as, ledger):
    assert "Nothing is quarantined." in client_as("ops").get("/ledger/quarantine/").content.decode()


def test_auditors_see_the_quarantine_without_a_retry_button(client_as, parked):
    page = client_as("auditor").get("/ledger/quarantine/").content.decode()
    assert parked[1] in page and 'value="Retry"' not in page


def test_ops_retry_releases_the_effect_for_the_next_sweep(client_as, parked):
    quarantine, effect_id = parked
    response = client_as("ops").post(retry_url(effect_id), follow=True)
    assert not quarantine.contains(effect_id)
    page = response.content.decode()
    assert "released: the next sweep sends it" in page and "Nothing is quarantined." in page
    again = client_as("ops").post(retry_url(effect_id), follow=True).content.decode()
    assert "is not in quarantine" in again


def test_a_forged_handle_is_not_found_and_releases_nothing(client_as, parked):
    quarantine, effect_id = parked
    assert client_as("ops").post(f"/ledger/quarantine/{seal('hold', effect_id)}/retry/").status_code == 404
    assert quarantine.contains(effect_id)


@pytest.mark.parametrize("role", [*CONSOLE_ROLES, None])
def test_only_ops_may_retry(db, parked, role):
    quarantine, effect_id = parked
    response = client_with_roles([role] if role else []).post(retry_url(effect_id))
    assert response.status_code == (302 if role == "ops" else 403)
    assert quarantine.contains(effect_id) == (role != "ops")


def test_the_screen_shows_each_cause(client_as, parked):
    quarantine, _ = parked
    quarantine.add("run-9.artist-z.effect", "payment.transfer", "Poison: attempt refused: CONFLICTING_EVIDENCE", 0,
                   cause="refused rule: the ledger or the chain contradicts the effect's records")
    page = client_as("ops").get("/ledger/quarantine/").content.decode()
    assert '<td class="cause">refused rule: the ledger or the chain contradicts the effect&#x27;s records</td>' in page
    assert 'Retry all 2' in page and 'Retry selected' in page


def test_ops_retry_the_ticked_effects_or_all_at_once(client_as, parked):
    quarantine, effect_id = parked
    others = ["run-9.artist-y.effect", "run-9.artist-z.effect"]
    for other in others:
        quarantine.add(other, "payment.transfer", "Poison: refused", 0)
    ticked = client_as("ops").post("/ledger/quarantine/retry/", {"effect": [seal("effect", others[0])]}, follow=True)
    assert "1 effect(s) released" in ticked.content.decode()
    assert sorted(entry["effect_id"] for entry in quarantine.entries()) == sorted([effect_id, others[1]])
    everything = client_as("ops").post("/ledger/quarantine/retry/", {"all": "1"}, follow=True).content.decode()
    assert "2 effect(s) released" in everything and "Nothing is quarantined." in everything
    assert quarantine.entries() == []


def test_auditors_cannot_retry_in_bulk(client_as, parked):
    quarantine, effect_id = parked
    assert client_as("auditor").post("/ledger/quarantine/retry/", {"all": "1"}).status_code == 403
    assert quarantine.contains(effect_id)


@pytest.mark.parametrize("stored", [
    b'{"effect_id": "eff',  # truncated
    b"[1, 2, 3]",
    b"\xff\xfe{",
    None,  # an entry of its own without quarantined_at_ms
])
def test_a_damaged_entry_is_listed_as_such_and_hides_nothing(client_as, parked, stored):
    quarantine, effect_id = parked
    damaged = "run-9.artist-y.effect"
    if stored is None:
        entry = quarantine.add(damaged, "payment.transfer", "Poison: refused", 3)
        stored = orjson.dumps({key: value for key, value in entry.items() if key != "quarantined_at_ms"})
    (quarantine.directory / f"{damaged}.json").write_bytes(stored)

    response = client_as("ops").get("/ledger/quarantine/")
    page = response.content.decode()
    assert response.status_code == 200
    assert effect_id in page and "Poison: chain refused the transfer" in page
    assert f"{damaged}: " in page and page.count('class="damaged"') == 1
    assert "Retry all 2" in page and client_as("ops").get("/ledger/").status_code == 200

    client_as("ops").post("/ledger/quarantine/retry/", {"all": "1"})
    assert quarantine.entries() == []


def test_an_entry_whose_file_names_no_effect_is_listed_and_left_for_an_operator(client_as, parked):
    quarantine, effect_id = parked
    (quarantine.directory / "not an effect id!.json").write_bytes(b"{}")
    page = client_as("ops").get("/ledger/quarantine/").content.decode()
    assert "none readable" in page and "Remove its file from the quarantine directory" in page
    assert "Retry all 1" in page
    client_as("ops").post("/ledger/quarantine/retry/", {"all": "1"})
    assert [entry["reason"] for entry in quarantine.entries()] == ["not an effect id!: effect_id is missing or not str"]

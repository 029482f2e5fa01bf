"""Sign-in protection, styled refusals and errors, CSP, the API docs, handles, keys and worker credentials."""

from __future__ import annotations

import logging
import re
import stat

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.adapters.signatures import key_from_seed
from ledger_engine.demo.builder import DEMO_IDENTITY_KEY
from ledger_engine.domain.step_up import public_key_hex
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.genesis import genesis_hash
from ledger_engine.layout import STATE
from porto_console.console import safety
from porto_console.console.commands import new_command_id
from porto_console.console.handles import seal, unseal_id
from porto_console.console.services import dashboard
from porto_console.console.services.users import issue_credentials
from porto_console.internal_api import credentials
from porto_console.internal_api.models import WorkerCredential
from porto_console.ledger import gateway as console_gateway
from tests.conftest import EnvelopeFactory
from tests.console.conftest import STAFF
from tests.support.deployment_keys import keys_of_its_own


def sign_in(client: Client, username: str, password: str, address: str = "10.0.0.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


# Sign-in lockouts.

def test_a_lockout_is_one_username_from_one_address_so_the_office_still_signs_in(users, ledger):
    passwords = {name: issue_credentials(users[name]).password for name in ("finance", "ops")}
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), STAFF["finance"], "wrong password")
    locked = sign_in(Client(), STAFF["finance"], passwords["finance"])
    assert locked.status_code == 429
    page = locked.content.decode()
    assert "Sign-in locked" in page and "Porto London finance console" in page and "Sign-in lockouts" in page
    colleague = Client()
    assert sign_in(colleague, STAFF["ops"], passwords["ops"]).status_code == 302  # same address, another person
    elsewhere = Client()
    assert sign_in(elsewhere, STAFF["finance"], passwords["finance"], address="10.0.0.8").status_code == 302


def test_an_admin_sees_and_clears_a_lockout_and_the_ledger_records_who(users, ledger, client_as):
    password = issue_credentials(users["finance"]).password
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), STAFF["finance"], "wrong password")
    admin = client_as("admin")
    page = admin.get("/ledger/lockouts/").content.decode()
    assert f'class="lockout-username">{STAFF["finance"]}<' in page
    handle = page.split('action="/ledger/lockouts/')[1].split("/")[0]
    head = ledger.head().sequence
    admin.post(f"/ledger/lockouts/{handle}/clear/", {"command_id": new_command_id()})
    entry = ledger.journal_entry(head + 1)
    assert (entry["envelope"]["command_type"], entry["envelope"]["actor_id"], entry["outcome"]) == (
        "RecordLockoutCleared", STAFF["admin"], "accepted")
    payload = entry["envelope"]["payload"]
    assert payload["account_id"] == STAFF["finance"] and payload["failures"] == settings.AXES_FAILURE_LIMIT
    assert "10.0.0.7" not in str(entry)  # the address is only a digest in the ledger
    assert sign_in(Client(), STAFF["finance"], password).status_code == 302
    assert client_as("finance").get("/ledger/lockouts/").status_code == 403


def test_a_lockout_clearance_reposted_for_another_lockout_clears_nothing(users, ledger, client_as):
    for name in ("finance", "ops"):
        for _ in range(settings.AXES_FAILURE_LIMIT):
            sign_in(Client(), STAFF[name], "wrong password")
    admin = client_as("admin")
    page = admin.get("/ledger/lockouts/").content.decode()
    handles = dict(re.findall(r'class="lockout-username">([^<]+)<.*?action="/ledger/lockouts/([^/]+)/', page, re.S))
    command_id = new_command_id()
    admin.post(f"/ledger/lockouts/{handles[STAFF['finance']]}/clear/", {"command_id": command_id})
    head = ledger.head()
    response = admin.post(f"/ledger/lockouts/{handles[STAFF['ops']]}/clear/", {"command_id": command_id},
                          follow=True)
    assert "COMMAND_ID_CONFLICT" in response.content.decode()
    assert ledger.head() == head
    assert sign_in(Client(), STAFF["ops"], issue_credentials(users["ops"]).password).status_code == 429


def test_a_clearance_form_posted_again_clears_no_later_lockout(users, ledger, client_as):
    password = issue_credentials(users["finance"]).password
    admin = client_as("admin")

    def lock_out() -> str:
        for _ in range(settings.AXES_FAILURE_LIMIT):
            sign_in(Client(), STAFF["finance"], "wrong password")
        page = admin.get("/ledger/lockouts/").content.decode()
        return page.split('action="/ledger/lockouts/')[1].split("/")[0]

    command_id = new_command_id()
    admin.post(f"/ledger/lockouts/{lock_out()}/clear/", {"command_id": command_id})
    later = lock_out()
    head = ledger.head()
    response = admin.post(f"/ledger/lockouts/{later}/clear/", {"command_id": command_id}, follow=True)
    assert "is not cleared by it" in response.content.decode()
    assert ledger.head() == head
    assert sign_in(Client(), STAFF["finance"], password).status_code == 429


def test_each_lockout_on_the_page_has_a_form_of_its_own(users, client_as):
    for name in ("finance", "ops"):
        for _ in range(settings.AXES_FAILURE_LIMIT):
            sign_in(Client(), STAFF[name], "wrong password")
    page = client_as("admin").get("/ledger/lockouts/").content.decode()
    command_ids = re.findall(r'name="command_id" value="([^"]+)"', page.split('id="lockouts"')[1])
    assert len(command_ids) == 2 and len(set(command_ids)) == 2


@pytest.mark.parametrize("earlier", [False, True], ids=["its own answer", "an earlier answer"])
def test_a_password_change_whose_answer_a_halt_lost_is_carried_out_once(users, ledger, monkeypatch, earlier):
    """The answer resolved by command ID after ``LEDGER_HALTED`` is this post's own, unless it was there before."""
    first = issue_credentials(users["ops"]).password
    client = Client()
    client.force_login(users["ops"])
    form = {"command_id": new_command_id(), "old_password": first, "new_password1": "a long new passphrase 7",
            "new_password2": "a long new passphrase 7"}
    if earlier:
        client.post("/password_change/", form)
        form = {**form, "old_password": "a long new passphrase 7", "new_password1": "another long passphrase 8",
                "new_password2": "another long passphrase 8"}
    admission, submit = console_gateway(), console_gateway().submit

    def recorded_then_halted(envelope):
        submit(envelope)
        raise LedgerError(ErrorCode.LEDGER_HALTED, "the answer was lost")

    monkeypatch.setattr(admission, "submit", recorded_then_halted)
    response = client.post("/password_change/", form)
    users["ops"].refresh_from_db()
    assert users["ops"].check_password("a long new passphrase 7")
    assert response.status_code == (200 if earlier else 302)
    changes = [ledger.journal_entry(sequence)["envelope"]["payload"].get("change")
               for sequence in range(1, ledger.head().sequence + 1)]
    assert changes.count("password_changed") == 1


def test_a_password_change_under_a_spent_form_id_is_refused_with_its_code(users, ledger, client_as):
    password = issue_credentials(users["auditor"]).password
    client = client_as("auditor")
    command_id = new_command_id()
    client.post("/ledger/journal/export/", {"command_id": command_id, "first": "1", "last": "2",
                                            "file_format": "json"})
    head = ledger.head()
    response = client.post("/password_change/", {"command_id": command_id, "old_password": password,
                                                  "new_password1": "a long new passphrase 7",
                                                  "new_password2": "a long new passphrase 7"})
    assert response.status_code == 200 and "COMMAND_ID_CONFLICT" in response.content.decode()
    assert ledger.head() == head
    users["auditor"].refresh_from_db()
    assert users["auditor"].check_password(password)


def test_a_password_change_form_posted_again_changes_nothing_the_ledger_did_not_record(users, ledger):
    first = issue_credentials(users["ops"]).password
    client = Client()
    client.force_login(users["ops"])
    command_id = new_command_id()
    changed = client.post("/password_change/", {"command_id": command_id, "old_password": first,
                                                "new_password1": "a long new passphrase 7",
                                                "new_password2": "a long new passphrase 7"})
    assert changed.status_code == 302
    head = ledger.head()
    entry = ledger.journal_entry(head.sequence)["envelope"]
    assert (entry["command_type"], entry["payload"]["change"]) == ("RecordProfileChange", "password_changed")
    again = client.post("/password_change/", {"command_id": command_id, "old_password": "a long new passphrase 7",
                                              "new_password1": "another long passphrase 8",
                                              "new_password2": "another long passphrase 8"})
    assert "This form was already submitted" in again.content.decode()
    assert ledger.head() == head
    users["ops"].refresh_from_db()
    assert users["ops"].check_password("a long new passphrase 7")


# Styled refusals and errors.

def test_a_refused_screen_is_a_console_page_naming_the_role_it_needs(client_as):
    page = client_as("finance").get("/ledger/holds/")
    assert page.status_code == 403
    text = page.content.decode()
    assert "This screen needs the auditor or ops role." in text
    assert "Porto London finance console" in text and 'id="not-allowed"' in text


def test_the_dashboard_offers_only_links_the_user_may_follow(client_as):
    page = client_as("finance").get("/ledger/").content.decode()
    assert 'href="/ledger/holds/"' not in page and 'href="/ledger/payouts/"' in page


@pytest.mark.parametrize("handle", [
    "not-a-handle",
    seal("recipient-update", "no-slash-here"),  # sealed with the key, but not an update's two IDs
    seal("recipient-update", "a/b/c"),
])
def test_a_forged_or_malformed_handle_is_a_styled_404_never_a_500(client_as, handle):
    response = client_as("finance").get(f"/ledger/recipients/{handle}/")
    assert response.status_code == 404
    assert "There is nothing here" in response.content.decode()


def test_a_handle_sealed_with_the_secret_key_does_not_open(client_as, settings):
    handle = seal("account", STAFF["ops"])
    settings.HANDLE_KEY = settings.SECRET_KEY + "-rotated"
    assert client_as("admin").get(f"/ledger/accounts/{handle}/").status_code == 404


def test_a_server_error_is_a_console_page_and_its_traceback_is_logged(users, ledger, monkeypatch, caplog):
    def broken(_ledger):
        raise RuntimeError("marker-for-the-500-test")

    monkeypatch.setattr(dashboard, "figures", broken)
    client = Client(raise_request_exception=False)
    client.force_login(users["ops"])
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = client.get("/ledger/")
    assert response.status_code == 500
    assert "Something went wrong" in response.content.decode() and "marker" not in response.content.decode()
    [record] = [record for record in caplog.records if record.name == "django.request"]
    assert record.exc_info and "marker-for-the-500-test" in str(record.exc_info[1])
    for handler in logging.getLogger("django.request").handlers:
        handler.flush()
    logged = (settings.LOG_DIR / "console.log").read_text()
    assert "Traceback" in logged and "marker-for-the-500-test" in logged


def test_no_authenticator_page_exists_for_anyone(users, client_as):
    device = TOTPDevice.objects.create(user=users["finance"], name="authenticator", confirmed=True)
    admin = client_as("admin")
    for path in (f"/otp_totp/totpdevice/{device.pk}/config/", f"/otp_totp/totpdevice/{device.pk}/qrcode/",
                 "/otp_totp/totpdevice/999999/config/", "/otp_totp/totpdevice/", "/auth/user/", "/auth/group/",
                 f"/auth/user/{users['finance'].pk}/password/", "/axes/accessattempt/"):
        assert admin.get(path).status_code == 404, path


# Content-Security-Policy and the API docs.

@pytest.mark.parametrize("path", ["/login/", "/ledger/", "/ledger/accounts/", "/ledger/holds/", "/internal/docs",
                                  "/enrol/", "/no-such-page/"])
def test_every_page_carries_a_content_security_policy(client_as, path):
    policy = client_as("admin").get(path)["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


def test_the_api_docs_need_a_staff_sign_in_and_load_swagger_from_this_origin(client_as, ledger):
    assert Client().get("/internal/docs")["Location"].startswith("/login/")
    assert Client().get("/internal/openapi.json")["Location"].startswith("/login/")
    page = client_as("auditor").get("/internal/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in page and "/static/ninja/swagger-ui.css" in page
    assert "cdn" not in page.lower() and "<script>" not in page.replace(" ", "")


# Keys.

def test_outside_the_demo_the_console_refuses_default_or_shared_keys(ledger, settings, monkeypatch):
    monkeypatch.setattr(safety, "is_demo", lambda ledger: False)
    settings.SECRET_KEY, settings.HANDLE_KEY, settings.STEP_UP_KEY = settings.DEFAULT_SECRET_KEY, None, None
    settings.IDENTITY_KEY = None
    with pytest.raises(safety.UnsafeConfiguration) as refused:
        safety.prepare(ledger)
    assert [problem.split(" ")[0] for problem in refused.value.problems] == [
        "DJANGO_SECRET_KEY", "PORTO_HANDLE_KEY", "PORTO_IDENTITY_KEY", "PORTO_STEP_UP_KEY"]
    settings.SECRET_KEY = settings.HANDLE_KEY = "x" * 40
    assert any("a key of its own" in problem for problem in safety.problems(ledger))


def test_outside_the_demo_identity_digests_need_a_key_of_their_own(ledger, settings, monkeypatch):
    monkeypatch.setattr(safety, "is_demo", lambda ledger: False)
    keys_of_its_own(settings)
    for unfit in (None, "short", DEMO_IDENTITY_KEY.decode(), settings.SECRET_KEY, settings.HANDLE_KEY):
        settings.IDENTITY_KEY = unfit
        [problem] = safety.problems(ledger)
        assert problem.startswith("PORTO_IDENTITY_KEY"), problem


def test_outside_the_demo_the_console_refuses_to_back_up_without_a_password_of_its_own(ledger, settings, monkeypatch):
    monkeypatch.setattr(safety, "is_demo", lambda ledger: False)
    keys_of_its_own(settings)
    for password in (None, settings.DEMO_BACKUP_PASSWORD):
        settings.BACKUP_PASSWORD = password
        [problem] = safety.problems(ledger)
        assert problem.startswith("RESTIC_PASSWORD")
    settings.BACKUP_PASSWORD = "a-password-of-its-own"
    assert safety.problems(ledger) == []


def test_outside_the_demo_the_step_up_key_must_be_the_one_the_ledger_trusts(ledger, settings, monkeypatch):
    monkeypatch.setattr(safety, "is_demo", lambda ledger: False)
    keys_of_its_own(settings)
    assert safety.problems(ledger) == []  # the console fixture signs with the demo key its ledger trusts
    other = key_from_seed("porto:test:untrusted-step-up-key")
    settings.STEP_UP_KEY = other.private_bytes_raw().hex()
    [problem] = safety.problems(ledger)
    assert public_key_hex(other) in problem and "approvals would all be refused" in problem


def test_outside_the_demo_the_console_serves_only_a_ledger_from_the_genesis_it_trusts(ledger, settings, monkeypatch):
    monkeypatch.setattr(safety, "is_demo", lambda ledger: False)
    keys_of_its_own(settings)
    assert safety.problems(ledger) == []  # the test settings trust the demo's genesis, which this ledger has
    settings.GENESIS_HASH = "0" * 64
    [problem] = safety.problems(ledger)
    assert f"not the genesis this deployment trusts ({'0' * 64})" in problem
    settings.GENESIS_HASH = None
    [problem] = safety.problems(ledger)
    assert problem.startswith("PORTO_GENESIS_HASH is not set") and genesis_hash(ledger.genesis()) in problem


def test_the_labelled_demo_gets_keys_of_its_own_that_a_restart_keeps(ledger, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    settings.SECRET_KEY, settings.HANDLE_KEY, settings.STEP_UP_KEY = settings.DEFAULT_SECRET_KEY, None, None
    settings.IDENTITY_KEY = None
    made = safety.prepare(ledger)
    assert len(made) == 4 and settings.SECRET_KEY != settings.DEFAULT_SECRET_KEY
    assert settings.HANDLE_KEY and settings.HANDLE_KEY != settings.SECRET_KEY
    assert settings.IDENTITY_KEY.encode() == DEMO_IDENTITY_KEY  # the demo's accounts were provisioned under it
    # Public like the demo itself: fit for the labelled demo only.
    assert [problem.split(" ")[0] for problem in safety.problems(ledger)] == ["PORTO_IDENTITY_KEY"]
    first = (settings.SECRET_KEY, settings.HANDLE_KEY)
    link = seal("run", "run-1")
    assert stat.S_IMODE((tmp_path / "demo-keys.json").stat().st_mode) == 0o600

    settings.SECRET_KEY, settings.HANDLE_KEY = settings.DEFAULT_SECRET_KEY, None  # the console starts again
    safety.prepare(ledger)
    assert (settings.SECRET_KEY, settings.HANDLE_KEY) == first  # nobody is signed out
    assert unseal_id("run", link) == "run-1"  # a record link handed out before still opens


# Attack 3: a worker token cannot approve.

@pytest.mark.parametrize("arguments", [["--command", "ApprovePayoutRun"], ["--role", "finance"],
                                       ["--command", "DecideStaffChange"], ["--command", "UpdateRecipient"]])
def test_worker_credentials_are_never_issued_for_a_human_approval(db, arguments):
    with pytest.raises(CommandError, match="refusing .*a person approves these with a fresh authenticator code"):
        call_command("worker_credentials", "issue", "finance-bot", "--actor", STAFF["finance2"], *arguments)
    assert not WorkerCredential.objects.exists()


def test_a_worker_token_that_allows_approvals_still_cannot_approve(ledger, db):
    """A credential made before this rule (straight into the database) is refused by the ledger itself."""
    token = "porto-worker.0123456789abcdef.secret"
    WorkerCredential.objects.create(name="old-bot", actor_id=STAFF["finance2"], command_types=["ApprovePayoutRun"],
                                    selector="0123456789abcdef", secret_sha256=credentials._digest("secret"))
    run = next(value["data"] for _, value in ledger.scan(STATE, "payment_run/", limit=100)
               if value["data"]["status"] == "prepared")
    head = ledger.head().sequence
    for step_up in (None, {"issued_at_ms": 1, "signature": "ab" * 64}):
        payload = {"run_id": run["run_id"], "run_hash": run["run_hash"], "statement_ids": ["statement-x"]}
        if step_up:
            payload["step_up"] = step_up
        response = Client(HTTP_AUTHORIZATION=f"Bearer {token}").post("/internal/commands", {
            "command_id": new_command_id(), "command_type": "ApprovePayoutRun", "payload": payload,
            "expected_revisions": [], "evidence_hashes": []}, content_type="application/json")
        assert response.json()["outcome"] == "rejected"
    codes = [ledger.journal_entry(head + n)["result"]["code"] for n in (1, 2)]
    assert codes == ["STEP_UP_REQUIRED", "STEP_UP_INVALID"]
    assert ledger.get(STATE, f"payment_run/{run['run_id']}").data["status"] == "prepared"


def test_a_ledger_halt_is_logged_with_its_cause(ledger, caplog, monkeypatch):
    def failing_write(ops):
        raise OSError("disk said no")

    monkeypatch.setattr(ledger.store, "write", failing_write)
    envelopes = EnvelopeFactory()
    envelopes.advance_to(ledger.admission_floor_ms())
    with caplog.at_level(logging.CRITICAL, logger="porto.ledger"), pytest.raises(LedgerError) as halted:
        ledger.submit(envelopes.account("halt-probe"))
    assert halted.value.code == ErrorCode.LEDGER_HALTED
    [record] = [record for record in caplog.records if record.name == "porto.ledger"]
    assert record.levelname == "CRITICAL" and "ledger halted" in record.getMessage()
    assert "disk said no" in str(record.exc_info[1])
    assert {"stderr", "file"} <= {handler.get_name() for handler in logging.getLogger("porto").handlers}

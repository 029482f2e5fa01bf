"""End to end: the demo's allocation, a statement index frozen with its tree, anchored on the SIMULATED chain by
the commitment session, and one recipient's file, its checkpoint signed with the test settings' key, checked by
``porto-ledger verify-statement --verifier-key`` and by /verify/.

The console serves in this process (live server) on a copy of the demo ledger; the committer is the real
commitment session talking to the console's internal API with its own credential and to a SIMULATED chain on
loopback.
"""

from __future__ import annotations

import os
import uuid

import httpx
import orjson
import pytest
from playwright.sync_api import expect

from ledger_engine.demo.foundation import DISPLAY_NAMES
from ledger_engine.layout import STATE
from ledger_engine.merkle import verify_statement_file
from ledger_engine.merkle.statement import FILE_VERSION
from porto_console.console.handles import seal
from porto_console.effects.commitment_journal import SignedCommitmentJournal
from porto_console.effects.commitment_session import CommitmentWorker, carry_out
from porto_console.effects.aptos_rest import AptosRestClient
from porto_console.effects.config import EffectsConfig
from porto_console.effects.ledger_api import LedgerApi
from porto_console.effects.signer import Signer
from porto_console.internal_api.credentials import commands_for_role, issue
from porto_console.ledger import gateway
from ledger_engine.selectors.statement_index import prepare_statement_index, statements_of_index
from tests.console.test_browser import chromium, screenshots  # noqa: F401  (the project's browser fixtures)
from tests.merkle import checkpoint_keys
from tests.effects.conftest import COMMITTER_KEY, chain_server  # noqa: F401  (the SIMULATED chain on loopback)
from tests.support.cli import porto_ledger

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = pytest.mark.browser

FINANCE, ADMIN, COMMITTER = "demo-finance-1", "demo-admin", "demo-statements-committer"


def submit(command_type: str, payload: dict, actor: str, evidence: list[str] = ()):
    admission = gateway()
    envelope = admission.envelope(command_type, payload, actor_id=actor, command_id=str(uuid.uuid4()), expected=[],
                                  evidence=list(evidence))
    outcome = admission.submit(envelope)
    assert outcome.accepted, (command_type, outcome.result)
    return outcome


def demo_allocation_window(ledger) -> dict:
    batch = next(row["data"] for _, row in ledger.scan(STATE, "batch/", limit=1_000)
                 if row["data"]["kind"] == "allocation" and row["data"]["state"] == "confirmed")
    return {"window_start_ms": batch["window_start_ms"], "window_end_ms": batch["window_end_ms"]}


@pytest.fixture
def committer(ledger, live_server, chain_server, tmp_path, db):  # noqa: F811
    """The commitment session as a worker with its own ledger account (committer and observer) and credential."""
    submit("RegisterAccount", {"account_id": COMMITTER, "kind": "worker", "roles": ["committer", "observer"],
                               "identity_digest": "ab" * 32}, ADMIN)
    _, token = issue("statements-committer", COMMITTER,
                     sorted({*commands_for_role("committer"), *commands_for_role("observer")}))
    config = EffectsConfig.from_env({
        "PORTO_CHAIN_URL": chain_server.url, "PORTO_CHAIN_ID": "4", "PORTO_COMMITTER_KEY": COMMITTER_KEY,
        "PORTO_INTERNAL_API_URL": f"{live_server.url}/internal", "PORTO_WORKER_ID": COMMITTER,
        "PORTO_WORKER_TOKEN": token, "PORTO_COMMITMENT_JOURNAL": str(tmp_path / "commitments.jsonl"),
        "PORTO_VAR_DIR": str(tmp_path / "var")})
    api = LedgerApi.from_config(config)
    worker = CommitmentWorker(config, api, AptosRestClient(config.chain_url, simulated=True), Signer.committer(config),
                              SignedCommitmentJournal(config.commitment_journal))
    worker.token = token
    yield worker
    api.close()


def freeze_and_anchor(worker: CommitmentWorker, ledger, kind: str, window: dict, *, accounting: str | None = None):
    """Prepare and freeze a batch as finance, then let the commitment session anchor it; the batch record."""
    batch_id, anchor = f"e2e-{kind}-{uuid.uuid4().hex[:8]}", f"e2e-anchor-{uuid.uuid4().hex[:8]}"
    submit("FreezeArtifact", {"batch_id": batch_id, "step": {"action": "prepare", "kind": kind, **window}}, FINANCE)
    if kind == "statement_index":
        step, artifact = ledger.read(lambda view: prepare_statement_index(
            view, batch_id, accounting, anchor, read_evidence=gateway().evidence.get))
    else:
        artifact = f"allocation artifact {batch_id}".encode()
        step = {"action": "freeze", "artifact_ref": f"{batch_id}-bytes", "count": 0, "anchor_effect_id": anchor}
    step["artifact_hash"] = gateway().evidence.put(artifact)
    submit("FreezeArtifact", {"batch_id": batch_id, "step": step}, FINANCE, evidence=[step["artifact_hash"]])
    assert carry_out(worker, worker.api.effect(anchor)) == "observed confirmed"
    return ledger.get(STATE, f"batch/{batch_id}").data, step


def test_a_recipient_file_from_the_demo_allocation_verifies_on_the_command_line_and_in_the_browser(
        ledger, committer, client_as, live_server, chain_server, chromium, tmp_path, screenshots):  # noqa: F811
    window = demo_allocation_window(ledger)
    accounting, _ = freeze_and_anchor(committer, ledger, "allocation", window)
    index, step = freeze_and_anchor(committer, ledger, "statement_index", window, accounting=accounting["batch_id"])
    assert (index["state"], index["artifact"]["statement_root"]) == ("confirmed", step["statement_root"])

    # On chain: the statement root and count, with the journal tree the ledger recorded for the batch.
    anchored = next(a for a in chain_server.chain.anchors() if a["hash"] == index["transaction_hash"])
    assert anchored["payload"]["arguments"] == ["0x" + step["statement_root"], str(step["count"]),
                                                "0x" + index["journal_tree"]["root"], str(index["journal_tree"]["size"])]
    assert ledger.journal_root_at(index["journal_tree"]["size"]) == index["journal_tree"]["root"]

    # Finance downloads one recipient's file from the console; the worker API serves the same bytes.
    statement = next(s for s in statements_of_index(ledger.view(), index["batch_id"])
                     if s["recipient_id"].startswith("demo-artist"))
    response = client_as("finance").get(f"/ledger/statements/{seal('statement', statement['statement_id'])}/file/")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    served = httpx.get(f"{live_server.url}/internal/statements/{statement['statement_id']}/file",
                       headers={"Authorization": f"Bearer {committer.token}"})
    assert served.status_code == 200 and served.content == response.content
    path = tmp_path / "statement.json"
    path.write_bytes(response.content)
    document = orjson.loads(response.content)
    assert document["statement"]["recipient_id"] == statement["recipient_id"]
    assert document["anchor"]["transaction_hash"] == index["transaction_hash"]
    assert document["version"] == FILE_VERSION and document["checkpoint"].startswith(f"{checkpoint_keys.ORIGIN}\n")
    pinned = checkpoint_keys.signer().verifier_key
    verified = verify_statement_file(response.content, pinned)
    assert (verified["verdict"], verified["batch_root"]) == ("verified", step["statement_root"])

    # The command-line verifier, with no ledger, pinning the published key.
    verdict = porto_ledger("verify-statement", "--verifier-key", pinned.encoded(), path)
    assert (verdict.status, verdict.last["verdict"], verdict.last["batch_root"]) == (0, "verified",
                                                                                     step["statement_root"])
    assert porto_ledger("verify-statement", "--verifier-key", checkpoint_keys.stranger().verifier_key.encoded(),
                        path).status == 1

    # The page, in headless Chromium, connecting nowhere.
    context = chromium.new_context(base_url=live_server.url)
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto("/verify/")
    expect(page.locator("body")).to_have_attribute("data-ready", "true")
    page.set_input_files("#statement-file", str(path))
    expect(page.locator("#verdict")).to_have_attribute("data-state", "verified")
    for step_name in ("file", "leaf", "root", "checkpoint", "signature"):
        expect(page.locator(f"#step-{step_name}")).to_have_attribute("data-state", "passed")
    expect(page.locator("#step-anchor")).to_contain_text(index["transaction_hash"])
    recipient_id = statement["recipient_id"]  # the demo names each recipient: its name, then its ID
    expect(page.locator("#statement-recipient")).to_have_text(f"{DISPLAY_NAMES[recipient_id]} ({recipient_id})")
    assert all(url.startswith(live_server.url) and "/internal/" not in url for url in requests)
    context.close()


def test_statement_files_are_refused_to_credentials_that_do_not_anchor_statements(ledger, live_server, db):
    statement_id = ledger.scan(STATE, "statement/", limit=1)[0][0].split("/", 1)[1]
    _, token = issue("statements-reader", "demo-dispatcher", commands_for_role("dispatcher"))
    refused = httpx.get(f"{live_server.url}/internal/statements/{statement_id}/file",
                        headers={"Authorization": f"Bearer {token}"})
    assert (refused.status_code, refused.json()["code"]) == (403, "COMMAND_NOT_ALLOWED")


def test_the_demo_statement_index_gives_every_recipient_a_file_to_download(ledger, client_as):
    index = next(row["data"] for _, row in ledger.scan(STATE, "batch/", limit=1_000)
                 if row["data"]["kind"] == "statement_index" and row["data"]["state"] == "confirmed")
    statements = statements_of_index(ledger.view(), index["batch_id"])
    assert statements and index["artifact"]["statement_root"]
    page = client_as("finance").get("/ledger/payouts/prepare/")
    assert page.status_code == 200 and b"Download statement file" in page.content
    for statement in statements:
        response = client_as("finance").get(f"/ledger/statements/{seal('statement', statement['statement_id'])}/file/")
        assert response.status_code == 200, statement
        verdict = verify_statement_file(response.content, checkpoint_keys.signer().verifier_key)
        assert verdict["verdict"] == "verified"
        assert (verdict["recipient_id"], verdict["batch_root"], verdict["tree_size"]) == (
            statement["recipient_id"], index["artifact"]["statement_root"], len(statements))

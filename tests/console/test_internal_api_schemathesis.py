"""Schemathesis against the OpenAPI schema the console publishes (to signed-in staff), on a live server on 127.0.0.1.

It must find no server error, and the answers must keep the published
contract: documented statuses, content types and response schemas, refusal
of schema-violating requests and of requests without credentials. One check
is left out: ``positive_data_acceptance`` expects every schema-valid request
to succeed, but a payload's shape depends on its command type (the schema
says only "object"), and the ledger refuses floats even where JSON Schema
counts ``1.0`` as an integer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from pytest_django.live_server_helper import LiveServer

from ledger_engine.domain.actors import GUARDED_ROLES
from ledger_engine.domain.registry import registered_types, spec_for
from ledger_engine.domain.ruleset import ROLES
from ledger_engine.genesis import default_genesis
from porto_console.internal_api import credentials
from porto_console.internal_api.api import api
from porto_console.ledger import close_owner, open_owner
from tests.support.tiers import examples

# The live server answers on its own thread with its own database connection. Schemathesis runs as its own
# command line for about ten seconds: a long end-to-end test (docs/adr/0100).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
OPERATIONS = {"POST /internal/commands", "GET /internal/commands/{command_id}", "POST /internal/effects/{effect_id}/claim",
              "GET /internal/effects", "GET /internal/head", "POST /internal/evidence", "GET /internal/dispatch",
              "GET /internal/payments/{payment_id}", "GET /internal/attempts", "GET /internal/batches",
              "POST /internal/maintenance/backups"}


@pytest.fixture
def server(tmp_path, envelopes, settings, backup_repository):
    """A live server whose ledger has one worker actor holding every role a worker may hold but observer, so
    requests reach the rules; its backup repository is initialised (the maintenance backups it is asked for go
    there)."""
    settings.BACKUP_DIR = tmp_path / "backups"
    owner = open_owner(tmp_path / "ledger", genesis=default_genesis())
    # No account holds signer with observer (docs/adr/0090).
    roles = sorted(ROLES - GUARDED_ROLES - {"observer"})
    assert owner.submit(envelopes.account("fuzz-1", kind="worker", roles=roles)).accepted
    live = LiveServer("127.0.0.1:0")
    yield live
    live.stop()
    close_owner()


def test_schemathesis_finds_no_server_error_and_no_contract_breach(server, tmp_path):
    # Nor does a credential carry two duties kept apart: it carries every command a worker credential may but the
    # observations and the admin's (whose roles it would otherwise hold with signer's and finance's); those are
    # fuzzed as a refusal at the edge (COMMAND_NOT_ALLOWED), as the contract documents. No credential carries a
    # command only the ledger's owner submits (OWNER_ONLY, docs/adr/0073).
    worker_types = [command_type for command_type in registered_types() if not spec_for(command_type).human_approval
                    and not spec_for(command_type).owner_only
                    and spec_for(command_type).roles not in ({"observer"}, {"admin"})]
    token = credentials.issue("fuzz-1", "fuzz-1", worker_types)[1]
    schema = tmp_path / "openapi.json"
    schema.write_text(json.dumps(api.get_openapi_schema()))
    run = subprocess.run(
        [SCHEMATHESIS, "run", str(schema), "--url", server.url,
         "--checks", "all", "--exclude-checks", "positive_data_acceptance",
         "--header", f"Authorization: Bearer {token}", "--max-examples", str(examples(40)), "--seed", "1",
         "--workers", "1", "--generation-database", "none", "--no-color",
         "--report", "junit", "--report-dir", str(tmp_path / "report")],
        capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    suites = ElementTree.parse(next((tmp_path / "report").glob("junit-*.xml"))).getroot()
    assert OPERATIONS <= {case.get("name") for case in suites.iter("testcase")}
    assert suites.get("failures") == suites.get("errors") == "0"

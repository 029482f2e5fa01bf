"""The engine's typed environment: every variable it reads named once, a bad value refused by its name, and
the owner, the security log and ``porto-ledger`` reading through it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ledger_engine.application.admission_clock import AdmissionClock
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.export import export_store
from ledger_engine.environment import EngineEnvironment, EnvironmentRefused, read_engine_environment
from ledger_engine.genesis import default_genesis, genesis_hash
from ledger_engine.security_log import configured_path, default_path
from tests.support import cli

ROOT = Path(__file__).resolve().parents[2]
TRUSTED = genesis_hash(default_genesis())
OTHER = "0" * 64


def test_unset_variables_take_their_defaults():
    environment = read_engine_environment({})
    assert (environment.admission_skew_ms, environment.security_log, environment.genesis_hash) == (5_000, None, None)
    assert not environment.restic_password.given and environment.restic_password.value() is None


def test_each_variable_is_read_into_its_type():
    environment = read_engine_environment({"PORTO_ADMISSION_SKEW_MS": " 2000 ", "PORTO_SECURITY_LOG": "/srv/sec.jsonl",
                                           "PORTO_GENESIS_HASH": TRUSTED, "RESTIC_PASSWORD": "inline-password"})
    assert environment.admission_skew_ms == 2_000 and environment.security_log == Path("/srv/sec.jsonl")
    assert environment.genesis_hash == TRUSTED and environment.restic_password.value() == "inline-password"


def test_an_empty_variable_counts_as_unset():
    empty = {name: "" for name in EngineEnvironment.variables()}
    assert read_engine_environment(empty) == read_engine_environment({})


def test_this_process_environment_is_read_when_no_mapping_is_given(monkeypatch, tmp_path):
    monkeypatch.setenv("PORTO_ADMISSION_SKEW_MS", "750")
    monkeypatch.setenv("PORTO_SECURITY_LOG", str(tmp_path / "elsewhere.jsonl"))
    assert read_engine_environment().admission_skew_ms == 750
    assert AdmissionClock.configured().max_ahead_ms == 750
    assert configured_path(tmp_path / "ledger") == tmp_path / "elsewhere.jsonl"


def test_the_security_log_is_beside_the_ledger_unless_a_variable_says_where(tmp_path):
    ledger = tmp_path / "ledger"
    assert configured_path(ledger, {}) == default_path(ledger) == tmp_path / "ledger.security.jsonl"
    assert configured_path(ledger, {"PORTO_SECURITY_LOG": ""}) == default_path(ledger)
    assert configured_path(ledger, {"PORTO_SECURITY_LOG": "/var/log/porto.jsonl"}) == Path("/var/log/porto.jsonl")


@pytest.mark.parametrize(("variables", "named"), [
    ({"PORTO_ADMISSION_SKEW_MS": "0"}, "PORTO_ADMISSION_SKEW_MS='0': must be a whole number of milliseconds from "
                                       "1 to 60000"),
    ({"PORTO_ADMISSION_SKEW_MS": "60001"}, "PORTO_ADMISSION_SKEW_MS='60001'"),
    ({"PORTO_ADMISSION_SKEW_MS": "-5"}, "PORTO_ADMISSION_SKEW_MS='-5'"),
    ({"PORTO_ADMISSION_SKEW_MS": "5s"}, "PORTO_ADMISSION_SKEW_MS='5s'"),
    ({"PORTO_ADMISSION_SKEW_MS": "1e3"}, "PORTO_ADMISSION_SKEW_MS='1e3'"),
    ({"PORTO_ADMISSION_SKEW_MS": "1_000"}, "PORTO_ADMISSION_SKEW_MS='1_000'"),
    ({"PORTO_GENESIS_HASH": "ABC"}, "PORTO_GENESIS_HASH='ABC': must be 64 lowercase hex digits"),
    ({"PORTO_GENESIS_HASH": TRUSTED.upper()}, "PORTO_GENESIS_HASH="),
    ({"PORTO_GENESIS_HASH": "g" * 64}, "PORTO_GENESIS_HASH="),
])
def test_a_value_that_does_not_parse_is_refused_by_its_variable(variables, named):
    with pytest.raises(EnvironmentRefused) as refused:
        read_engine_environment(variables)
    assert named in str(refused.value)


def test_the_largest_skew_is_accepted_and_refusals_are_value_errors():
    assert AdmissionClock.configured({"PORTO_ADMISSION_SKEW_MS": "60000"}).max_ahead_ms == 60_000
    with pytest.raises(ValueError, match="PORTO_ADMISSION_SKEW_MS"):
        AdmissionClock.configured({"PORTO_ADMISSION_SKEW_MS": "60001"})


def test_every_bad_variable_is_named_at_once_and_nothing_else_is():
    with pytest.raises(EnvironmentRefused) as refused:
        read_engine_environment({"PORTO_ADMISSION_SKEW_MS": "soon", "PORTO_GENESIS_HASH": "abc",
                                 "PORTO_SECURITY_LOG": "/srv/sec.jsonl"})
    causes = str(refused.value).removeprefix("the environment is refused: ").split("; ")
    assert sorted(cause.split("=")[0] for cause in causes) == ["PORTO_ADMISSION_SKEW_MS", "PORTO_GENESIS_HASH"]


def test_the_restic_password_may_come_from_a_file_read_only_when_asked_for(tmp_path):
    environment = read_engine_environment({"RESTIC_PASSWORD_FILE": str(tmp_path / "password")})
    assert environment.restic_password.given
    with pytest.raises(EnvironmentRefused, match="RESTIC_PASSWORD_FILE names .*password, which cannot be read"):
        environment.restic_password.value()
    (tmp_path / "password").write_text("from-the-file\n")
    assert environment.restic_password.value() == "from-the-file"


def test_the_restic_password_given_both_ways_is_refused_without_repeating_it():
    with pytest.raises(EnvironmentRefused) as refused:
        read_engine_environment({"RESTIC_PASSWORD": "inline-password", "RESTIC_PASSWORD_FILE": "/run/password"})
    assert "set RESTIC_PASSWORD or RESTIC_PASSWORD_FILE, not both" in str(refused.value)
    assert "inline-password" not in str(refused.value)
    environment = read_engine_environment({"RESTIC_PASSWORD": "inline-password"})
    assert "inline-password" not in repr(environment)


def test_every_variable_is_named_once_and_described():
    names = EngineEnvironment.variables()
    assert len(names) == len(set(names))
    assert set(names) == {"PORTO_ADMISSION_SKEW_MS", "PORTO_SECURITY_LOG", "PORTO_GENESIS_HASH", "RESTIC_PASSWORD",
                          "RESTIC_PASSWORD_FILE"}
    assert all(info.description for info in EngineEnvironment.model_fields.values())


def test_no_other_engine_module_reads_a_variable_by_name():
    reads = re.compile(r"""(?:\benv(?:iron)?(?:\.get\(|\[)|getenv\()\s*f?["']([A-Z][A-Z0-9_]*)["']""")
    elsewhere = {(str(path.relative_to(ROOT)), name) for path in (ROOT / "ledger_engine").rglob("*.py")
                 if path.name != "environment.py" for name in reads.findall(path.read_text())}
    assert not elsewhere


def test_porto_ledger_refuses_a_restic_password_given_both_ways_and_restores_nothing(tmp_path):
    (tmp_path / "password").write_text("from-the-file\n")
    run = cli.porto_ledger("recover", "--admission", tmp_path / "admission", "--repository", tmp_path / "repository",
                           data=tmp_path / "ledger", env={"RESTIC_PASSWORD": "inline-password",
                                                          "RESTIC_PASSWORD_FILE": str(tmp_path / "password")})
    assert (run.status, run.last["code"]) == (2, "MALFORMED_ENVELOPE")
    assert "RESTIC_PASSWORD or RESTIC_PASSWORD_FILE, not both" in run.last["detail"]
    assert not (tmp_path / "ledger").exists() and not (tmp_path / "admission").exists()


def test_porto_ledger_names_an_unreadable_restic_password_file(tmp_path, monkeypatch):
    monkeypatch.delenv("RESTIC_PASSWORD", raising=False)
    run = cli.porto_ledger("recover", "--admission", tmp_path / "admission", "--repository", tmp_path / "repository",
                           data=tmp_path / "ledger", env={"RESTIC_PASSWORD_FILE": str(tmp_path / "missing")})
    assert (run.status, run.last["code"]) == (2, "MALFORMED_ENVELOPE")
    assert "RESTIC_PASSWORD_FILE names" in run.last["detail"]


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A portable checkpoint of a ledger from the default genesis."""
    root = tmp_path_factory.mktemp("environment")
    with LedgerOwner.open(root / "ledger", genesis=default_genesis()) as owner:
        owner.with_checkpoint(lambda store: export_store(store, root / "export"))
    return root / "export"


def test_the_genesis_hash_flag_wins_over_the_variable_and_an_empty_variable_pins_nothing(export):
    refused = cli.porto_ledger("verify-export", export, env={"PORTO_GENESIS_HASH": OTHER})
    assert (refused.status, refused.last["code"]) == (1, "VERIFICATION_FAILED")
    cli.succeeded(cli.porto_ledger("verify-export", export, "--genesis-hash", TRUSTED,
                                   env={"PORTO_GENESIS_HASH": OTHER}))
    cli.succeeded(cli.porto_ledger("verify-export", export, env={"PORTO_GENESIS_HASH": ""}))


def test_a_malformed_genesis_hash_variable_is_bad_input_naming_it(export):
    run = cli.porto_ledger("verify-export", export, env={"PORTO_GENESIS_HASH": TRUSTED.upper()})
    assert (run.status, run.last["code"]) == (2, "MALFORMED_ENVELOPE")
    assert "PORTO_GENESIS_HASH=" in run.last["detail"]


def test_a_malformed_skew_stops_the_owner_opening_with_bad_input_naming_it(tmp_path):
    cli.init(tmp_path / "ledger")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    run = cli.porto_ledger("submit", tmp_path / "empty.jsonl", data=tmp_path / "ledger",
                           env={"PORTO_ADMISSION_SKEW_MS": "5s"})
    assert (run.status, run.last["code"]) == (2, "MALFORMED_ENVELOPE")
    assert "PORTO_ADMISSION_SKEW_MS='5s'" in run.last["detail"]

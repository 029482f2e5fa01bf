"""The typed environment: every variable named once, parsed at start, and a bad value refused by its name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from ledger_engine.environment import EngineEnvironment, read_engine_environment
from porto_console.environment import Environment, NotConfigured, read_environment
from tests.support.settings_module import settings_under

ROOT = Path(__file__).resolve().parents[2]


def test_unset_variables_take_their_defaults_and_paths_follow_the_var_directory(tmp_path):
    environment = read_environment({"PORTO_VAR_DIR": str(tmp_path)})
    assert (environment.port, environment.host, environment.threads, environment.chain) == (
        8000, "127.0.0.1", 8, "simulated")
    assert environment.data_dir == tmp_path / "ledger" and environment.log_dir == tmp_path / "log"
    assert environment.backup_dir == tmp_path / "backups" and environment.backup_repository == str(tmp_path / "backups")
    assert environment.database_url == f"sqlite:///{tmp_path / 'console.sqlite3'}"
    assert environment.quarantine_dir == tmp_path / "effects" / "quarantine"


def test_values_are_parsed_into_their_types():
    environment = read_environment({
        "PORT": "8123", "DJANGO_DEBUG": "1", "DJANGO_ALLOWED_HOSTS": "console.porto.example,127.0.0.1",
        "PORTO_SWEEP_SECS": "0.5", "PORTO_CELERY_VISIBILITY_SECS": "5", "PORTO_LOG_FORMAT": "plain",
        "DATA_DIR": "/srv/porto/ledger", "PORTO_CHAIN": "aptos", "PORTO_CHAIN_ID": "1"})
    assert environment.port == 8123 and environment.debug is True and environment.sweep_secs == 0.5
    assert environment.allowed_hosts == ("console.porto.example", "127.0.0.1")
    assert environment.queued_mark_secs == 65  # by default the visibility timeout and a minute
    assert environment.admission_dir == Path("/srv/porto/admission")
    assert (environment.log_format, environment.chain, environment.chain_id) == ("plain", "aptos", 1)


def test_an_empty_variable_counts_as_unset():
    assert read_environment({"PORT": "", "PORTO_OBSERVER_ID": "", "PORTO_SIGNER_KEY": ""}) == read_environment({})


@pytest.mark.parametrize(("variables", "named"), [
    ({"PORT": "eighty"}, "PORT='eighty': must be a whole number"),
    ({"PORT": "70000"}, "PORT='70000'"),
    ({"PORTO_THREADS": "0"}, "PORTO_THREADS='0'"),
    ({"PORTO_CHAIN": "ethereum"}, "PORTO_CHAIN='ethereum': Input should be 'simulated' or 'aptos'"),
    ({"PORTO_LOG_FORMAT": "xml"}, "PORTO_LOG_FORMAT='xml'"),
    ({"DJANGO_DEBUG": "true"}, "DJANGO_DEBUG='true': must be 1 (on) or 0 (off)"),
    ({"PORTO_CHAIN_ID": "-4"}, "PORTO_CHAIN_ID='-4'"),
    ({"PORTO_SWEEP_SECS": "inf"}, "PORTO_SWEEP_SECS='inf'"),
    ({"PORTO_GENESIS_HASH": "ABC"}, "PORTO_GENESIS_HASH='ABC': must be 64 lowercase hex digits"),
])
def test_a_value_that_does_not_parse_is_refused_by_its_variable(variables, named):
    with pytest.raises(NotConfigured) as refused:
        read_environment(variables)
    assert named in str(refused.value)


def test_every_bad_variable_is_named_at_once_and_nothing_else_is():
    with pytest.raises(NotConfigured) as refused:
        read_environment({"PORT": "x", "PORTO_VAR_DIR": "/srv/porto", "PORTO_CHAIN": "nope"})
    causes = str(refused.value).removeprefix("the environment is refused: ").split("; ")
    assert sorted(cause.split("=")[0] for cause in causes) == ["PORT", "PORTO_CHAIN"]


def test_a_secret_given_twice_is_refused_without_repeating_it():
    with pytest.raises(NotConfigured) as refused:
        read_environment({"PORTO_WORKER_TOKEN": "porto-worker.secret", "PORTO_WORKER_TOKEN_FILE": "/run/token"})
    assert "PORTO_WORKER_TOKEN or PORTO_WORKER_TOKEN_FILE, not both" in str(refused.value)
    assert "secret" not in str(refused.value)


def test_a_secret_file_is_read_only_by_whoever_asks_for_the_secret(tmp_path):
    environment = read_environment({"PORTO_SIGNER_KEY_FILE": str(tmp_path / "missing"),
                                    "PORTO_HANDLE_KEY": "porto-handle-secret"})
    assert environment.signer_key.given and "porto-handle-secret" not in repr(environment)
    with pytest.raises(NotConfigured, match="PORTO_SIGNER_KEY_FILE names .*missing, which cannot be read"):
        environment.signer_key.value()
    (tmp_path / "missing").write_text("0x01\n")
    assert environment.signer_key.value() == "0x01" and environment.handle_key.value() == "porto-handle-secret"


def test_every_variable_is_named_once_and_described():
    names = Environment.variables()
    assert len(names) == len(set(names))
    assert all(info.description for info in Environment.model_fields.values())


def test_a_variable_the_engine_reads_too_is_the_engines_field_described_once():
    engines = {info.validation_alias: info for info in EngineEnvironment.model_fields.values()}
    shared = {info.validation_alias: info for info in Environment.model_fields.values()
              if info.validation_alias in engines}
    assert set(shared) == {"PORTO_GENESIS_HASH", "RESTIC_PASSWORD"}
    assert all(info.description == engines[name].description for name, info in shared.items())


def test_whoever_catches_not_configured_catches_the_engines_refusal_too():
    with pytest.raises(NotConfigured, match="RESTIC_PASSWORD or RESTIC_PASSWORD_FILE, not both"):
        read_engine_environment({"RESTIC_PASSWORD": "inline-password", "RESTIC_PASSWORD_FILE": "/run/password"})


def test_no_other_module_reads_a_variable_the_environment_names():
    reads = re.compile(r"""(?:\benv(?:iron)?(?:\.get\(|\[)|getenv\()\s*f?["']([A-Z][A-Z0-9_]*)["']""")
    ours = set(Environment.variables())
    elsewhere = {(str(path.relative_to(ROOT)), name)
                 for path in [*(ROOT / "porto_console").rglob("*.py"), *(ROOT / "scripts").rglob("*.py")]
                 if path.name != "environment.py"
                 for name in reads.findall(path.read_text()) if name in ours}
    assert not elsewhere


def test_the_console_refuses_to_start_naming_the_variable(tmp_path):
    with pytest.raises(ImproperlyConfigured, match="PORTO_HSTS_SECONDS='a year'"):
        settings_under({"PORTO_VAR_DIR": str(tmp_path), "PORTO_HSTS_SECONDS": "a year"})
    launched = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_console.py")], capture_output=True,
                              text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "PORT": "eighty",
                                                          "PORTO_VAR_DIR": str(tmp_path)})
    assert launched.returncode == 2
    assert "PORT='eighty': must be a whole number written in digits" in launched.stderr

"""Worker configuration: secrets inline or from files, strict integers, a known chain kind."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from porto_console.effects.config import EffectsConfig, NotConfigured
from porto_console.effects.ledger_api import LedgerApi
from porto_console.effects.signer import Signer
from tests.effects.conftest import COMMITTER_KEY, PAYER_KEY


def test_defaults_name_the_simulated_chain_and_no_key():
    config = EffectsConfig.from_env({})
    assert config.simulated and config.signer_key is None and config.chain_id == 4
    with pytest.raises(NotConfigured, match="no signing key"):
        Signer.from_config(config)


def test_key_from_a_file_gives_the_same_signer_as_inline(tmp_path, signer):
    key_file = tmp_path / "payer.key"
    key_file.write_text(PAYER_KEY + "\n")
    from_file = Signer.from_config(EffectsConfig.from_env({"PORTO_SIGNER_KEY_FILE": str(key_file)}))
    inline = Signer.from_config(EffectsConfig.from_env({"PORTO_SIGNER_KEY": PAYER_KEY}))
    assert from_file.address == inline.address == signer.address
    assert PAYER_KEY not in repr(from_file)


@pytest.mark.parametrize("env, message", [
    ({"PORTO_CHAIN": "ethereum"}, "PORTO_CHAIN"),
    ({"PORTO_CHAIN_ID": "4.0"}, "PORTO_CHAIN_ID"),
    ({"PORTO_SIGNER_KEY": "x", "PORTO_SIGNER_KEY_FILE": "/dev/null"}, "not both"),
    ({"PORTO_PAYER_WINDOW": "0"}, "PORTO_PAYER_WINDOW"),
])
def test_bad_settings_are_named(env, message):
    with pytest.raises(NotConfigured, match=message):
        EffectsConfig.from_env(env)


def test_a_malformed_key_is_refused_without_echoing_it():
    with pytest.raises(NotConfigured) as refused:
        Signer.from_config(EffectsConfig.from_env({"PORTO_SIGNER_KEY": "0xnothex-secret"}))
    assert "secret" not in str(refused.value)


def test_workers_load_neither_django_nor_the_ledger_store():
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, porto_console.effects.tasks, porto_console.effects.reconcile; "
                               "print(' '.join(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True, env={**os.environ, "DJANGO_SETTINGS_MODULE": ""}).stdout.split()
    forbidden = ("django.conf", "django.db", "rocksdict", "ledger_engine.storage", "ledger_engine.application")
    assert [name for name in loaded if name.startswith(forbidden)] == []


def test_the_committer_has_its_own_key_apart_from_the_payer(signer):
    config = EffectsConfig.from_env({"PORTO_SIGNER_KEY": PAYER_KEY})
    with pytest.raises(NotConfigured, match="PORTO_COMMITTER_KEY"):
        Signer.committer(config)
    committer = Signer.committer(EffectsConfig.from_env({"PORTO_COMMITTER_KEY": COMMITTER_KEY}))
    assert committer.address != signer.address


OBSERVER = {"PORTO_WORKER_ID": "payments-worker-1", "PORTO_OBSERVER_ID": "payments-observer-1"}


@pytest.mark.parametrize("env, message", [
    ({"PORTO_OBSERVER_ID": "payments-observer-1"}, "together"),
    ({"PORTO_OBSERVER_TOKEN": "observer-token"}, "together"),
    ({**OBSERVER, "PORTO_OBSERVER_ID": "payments-worker-1", "PORTO_OBSERVER_TOKEN": "t"}, "another actor"),
    ({**OBSERVER, "PORTO_OBSERVER_TOKEN": "t", "PORTO_OBSERVER_TOKEN_FILE": "/dev/null"}, "not both"),
])
def test_the_observers_credential_is_given_whole_and_is_not_the_workers_own(env, message):
    with pytest.raises(NotConfigured, match=message):
        EffectsConfig.from_env(env)


def test_the_observers_token_may_come_from_a_file_and_stays_out_of_the_repr(tmp_path):
    token_file = tmp_path / "observer.token"
    token_file.write_text("porto-worker.observer-secret\n")
    config = EffectsConfig.from_env({**OBSERVER, "PORTO_OBSERVER_TOKEN_FILE": str(token_file)})
    config.require_observer()
    assert config.observer_token == "porto-worker.observer-secret" and "observer-secret" not in repr(config)
    assert LedgerApi.observer_from_config(config) is not None


def test_without_an_observer_there_is_no_observers_ledger_api():
    config = EffectsConfig.from_env({"PORTO_WORKER_ID": "payments-worker-1", "PORTO_WORKER_TOKEN": "t"})
    with pytest.raises(NotConfigured, match="PORTO_OBSERVER_ID and PORTO_OBSERVER_TOKEN"):
        LedgerApi.observer_from_config(config)


def test_a_payment_worker_without_an_observer_refuses_to_start(tmp_path):
    """The worker process exits with the reason before it takes a message."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("PORTO_", "CELERY_", "DJANGO_"))}
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "porto_console.effects.celery_app", "worker", "-Q", "payers,payments",
         "-c", "1", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        env={**env, "PORTO_VAR_DIR": str(tmp_path), "PORTO_WORKER_ID": "payments-worker-1",
             "PORTO_WORKER_TOKEN": "t"}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "a payment worker needs a second credential for its chain observations" in done.stderr


@pytest.mark.parametrize("queues, refused", [({"payments"}, True), ({"payers"}, True), ({"commitments"}, False),
                                             ({"maintenance"}, False)])
def test_only_a_worker_taking_payments_needs_the_observer(monkeypatch, queues, refused):
    """A committer observes its own anchors and a maintenance worker observes nothing: they start without one."""
    from porto_console.effects import tasks

    monkeypatch.setattr(tasks, "config", lambda: EffectsConfig.from_env({"PORTO_WORKER_ID": "worker-1"}))
    worker = SimpleNamespace(app=SimpleNamespace(amqp=SimpleNamespace(queues=SimpleNamespace(
        consume_from=dict.fromkeys(queues)))))
    if refused:
        with pytest.raises(SystemExit, match="PORTO_OBSERVER_ID"):
            tasks._refuse_to_start_unconfigured("worker-1@host", worker)
    else:
        assert tasks._refuse_to_start_unconfigured("worker-1@host", worker) is None

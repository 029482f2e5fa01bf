"""Worker configuration: secrets inline or from files, strict integers, a known chain kind."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from porto_console.effects.config import EffectsConfig, NotConfigured
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

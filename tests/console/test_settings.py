"""Settings from the environment: where backups go, and when the console announces effects to workers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.support.settings_module import settings_under


def console_settings(tmp_path: Path, **env: str) -> dict[str, Any]:
    return settings_under({"PORTO_VAR_DIR": str(tmp_path), "DATA_DIR": str(tmp_path / "ledger"), **env})


def test_backups_default_to_a_folder_beside_the_data_directory(tmp_path):
    assert console_settings(tmp_path)["BACKUP_DIR"] == (tmp_path / "backups").resolve()


def test_a_backup_directory_inside_the_data_directory_is_refused_at_start(tmp_path):
    with pytest.raises(ImproperlyConfigured, match="is inside the ledger data directory"):
        console_settings(tmp_path, PORTO_BACKUP_DIR=str(tmp_path / "ledger" / "backups"))


@pytest.mark.parametrize(("env", "enabled"), [
    ({}, False),
    ({"CELERY_BROKER_URL": "redis://127.0.0.1:6379/0"}, False),
    ({"PORTO_SIGNER_KEY": "0x01"}, False),
    ({"CELERY_BROKER_URL": "redis://127.0.0.1:6379/0", "PORTO_SIGNER_KEY": "0x01"}, True),
    ({"CELERY_BROKER_URL": "redis://127.0.0.1:6379/0", "PORTO_SIGNER_KEY_FILE": "/run/secrets/signer"}, True),
    ({"CELERY_BROKER_URL": "redis://127.0.0.1:6379/0", "PORTO_SIGNER_KEY": "0x01", "PORTO_EFFECTS_ENABLED": "0"},
     False),
    ({"PORTO_EFFECTS_ENABLED": "1"}, True),
])
def test_effects_are_announced_only_with_a_broker_and_a_signer_unless_set_explicitly(tmp_path, env, enabled):
    assert console_settings(tmp_path, **env)["EFFECTS_ENABLED"] is enabled

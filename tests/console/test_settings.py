"""Settings from the environment: where backups go, and when the console announces effects to workers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

READ = ("import json, django; django.setup(); from django.conf import settings; "
        "print(json.dumps({'backups': str(settings.BACKUP_DIR), 'effects': settings.EFFECTS_ENABLED}))")


def console_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {"DJANGO_SETTINGS_MODULE": "porto_console.settings", "PORTO_VAR_DIR": str(tmp_path),
                   "DATA_DIR": str(tmp_path / "ledger"), **env}
    return subprocess.run([sys.executable, "-c", READ], env=environment, capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2])


def test_backups_default_to_a_folder_beside_the_data_directory(tmp_path):
    read = json.loads(console_settings(tmp_path).stdout)
    assert read["backups"] == str((tmp_path / "backups").resolve())


def test_a_backup_directory_inside_the_data_directory_is_refused_at_start(tmp_path):
    started = console_settings(tmp_path, PORTO_BACKUP_DIR=str(tmp_path / "ledger" / "backups"))
    assert started.returncode != 0 and "is inside the ledger data directory" in started.stderr


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
    assert json.loads(console_settings(tmp_path, **env).stdout)["effects"] is enabled

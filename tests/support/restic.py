"""Initialised, empty restic repositories for tests that back up: made once per test run, copied per test.

``restic init`` calibrates its key derivation (scrypt) to cost about half a second of CPU, and every later
restic command pays that cost again to open the repository: a backup that counts runs six commands, so
most of a backup test's wait was scrypt. ``initialised_repository`` makes one repository per password with
``restic init`` at the first request in this test run, then wraps its master key again under a cheap scrypt
cost (``TEST_KDF``), and copies that repository into the test's own directory; a copy is a whole repository
of its own. Everything after the key derivation is restic's own: the master key, the config, packs,
snapshots, and the refusal of a wrong password (the wrapped key's MAC does not verify). Repositories a
deployment uses are made by ``restic init`` and keep its calibrated cost; tests of the first backup into a
location where nothing is yet (``upload_and_verify`` initialising it) do not use this.

The key file follows restic's repository format (``doc/design.rst``, "Keys, Encryption and MAC"): scrypt
gives 32 bytes of AES-256 key and 32 of Poly1305-AES key; ``data`` is IV, AES-256-CTR ciphertext and MAC
over the ciphertext; the file is named by the SHA-256 of its bytes. ``tests/conftest.py`` registers this
module as a plugin.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import shutil
from pathlib import Path
from typing import Callable

import orjson
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.poly1305 import Poly1305

from ledger_engine.checkpoint.offsite import ResticRepository

InitialisedRepository = Callable[[Path, str], ResticRepository]

TEST_KDF = {"N": 1024, "r": 8, "p": 1}


@pytest.fixture(scope="session")
def initialised_repository(tmp_path_factory, worker_id) -> InitialisedRepository:
    """``initialised_repository(location, password)``: an empty repository at ``location``, opened with ``password``.

    The pytest-xdist workers of one run share a run directory, so they share the templates: whichever worker
    asks first for a password makes its template, under a lock the others wait on.
    """
    run_directory = tmp_path_factory.getbasetemp()
    templates = (run_directory if worker_id == "master" else run_directory.parent) / "restic-templates"
    templates.mkdir(exist_ok=True)

    def copy(location: Path, password: str) -> ResticRepository:
        shutil.copytree(template_for(templates, password), location)
        return ResticRepository(str(location), password)

    return copy


def template_for(templates: Path, password: str) -> Path:
    """The initialised repository of ``password`` under ``templates``, made by the first process to ask."""
    template = templates / hashlib.sha256(password.encode()).hexdigest()[:16]
    with open(templates / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():
            building = templates / f".building-{os.getpid()}"
            shutil.rmtree(building, ignore_errors=True)
            ResticRepository(str(building), password).run("init")
            cheapen_key(building, password)
            drop_empty_pack_directories(building)
            building.rename(template)
    return template


def drop_empty_pack_directories(repository: Path) -> None:
    """``restic init`` makes 256 empty ``data/XX`` directories; restic makes the one a pack needs when it is
    missing, so a copy need not carry them (each copy made and removed them all, most of a test's file work)."""
    for directory in (repository / "data").iterdir():
        directory.rmdir()


def cheapen_key(repository: Path, password: str) -> None:
    """Replace the repository's one key file with one holding the same master key under ``TEST_KDF``."""
    [key_file] = (repository / "keys").iterdir()
    document = orjson.loads(key_file.read_bytes())
    wrapping = _derive(password, base64.b64decode(document["salt"]), document["N"], document["r"], document["p"])
    master_key = _decrypt(wrapping, base64.b64decode(document["data"]))
    salt = os.urandom(64)
    document.update(TEST_KDF, salt=base64.b64encode(salt).decode(),
                    data=base64.b64encode(_encrypt(_derive(password, salt, **TEST_KDF), master_key)).decode())
    raw = orjson.dumps(document)
    (repository / "keys" / hashlib.sha256(raw).hexdigest()).write_bytes(raw)
    key_file.unlink()


def _derive(password: str, salt: bytes, N: int, r: int, p: int) -> bytes:  # noqa: N803 (restic's field names)
    return hashlib.scrypt(password.encode(), salt=salt, n=N, r=r, p=p, dklen=64, maxmem=1 << 30)


def _mac(wrapping: bytes, nonce: bytes, ciphertext: bytes) -> bytes:
    """Poly1305-AES: the one-time key is the MAC's r and AES_k(nonce)."""
    k, r = wrapping[32:48], wrapping[48:64]
    s = Cipher(algorithms.AES(k), modes.ECB()).encryptor().update(nonce)
    return Poly1305.generate_tag(r + s, ciphertext)


def _decrypt(wrapping: bytes, blob: bytes) -> bytes:
    nonce, ciphertext, tag = blob[:16], blob[16:-16], blob[-16:]
    assert _mac(wrapping, nonce, ciphertext) == tag, "restic's key file did not open with the password"
    return Cipher(algorithms.AES(wrapping[:32]), modes.CTR(nonce)).decryptor().update(ciphertext)


def _encrypt(wrapping: bytes, plaintext: bytes) -> bytes:
    nonce = os.urandom(16)
    ciphertext = Cipher(algorithms.AES(wrapping[:32]), modes.CTR(nonce)).encryptor().update(plaintext)
    return nonce + ciphertext + _mac(wrapping, nonce, ciphertext)

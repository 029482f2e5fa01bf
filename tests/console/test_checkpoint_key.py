"""The statement checkpoint key: outside the labelled demo a console refuses to serve without a key of its own.

It signs what recipients verify at /verify/, so a missing key, the demo's public one, or one shared with
another deployment secret would let a forged statement pass for Porto's.
"""

from __future__ import annotations

import pytest

from ledger_engine.merkle.checkpoint import DEMO_CHECKPOINT_SEED_HEX
from porto_console.console import safety
from porto_console.statement_files import pinned_verifier_key
from tests.merkle import checkpoint_keys


@pytest.fixture
def production(ledger, settings, monkeypatch):
    """A console that is not the demo, with every other key its own: only the checkpoint key is in question."""
    monkeypatch.setattr(safety, "is_demo", lambda ledger: False)
    settings.SECRET_KEY, settings.HANDLE_KEY = "s" * 40, "h" * 40
    settings.IDENTITY_KEY = "i" * 40
    assert safety.problems(ledger) == []
    return ledger


@pytest.mark.parametrize(("key", "problem"), [
    (None, "PORTO_CHECKPOINT_KEY is not set"),
    ("ab" * 31, "a 32-byte seed in 64 hex digits"),
    (DEMO_CHECKPOINT_SEED_HEX, "the demo's public checkpoint key"),
    (DEMO_CHECKPOINT_SEED_HEX.upper(), "the demo's public checkpoint key"),
])
def test_outside_the_demo_a_missing_malformed_or_demo_checkpoint_key_is_refused(production, settings, key, problem):
    settings.CHECKPOINT_KEY = key
    [found] = safety.problems(production)
    assert found.startswith("PORTO_CHECKPOINT_KEY") and problem in found


def test_outside_the_demo_the_checkpoint_key_is_no_other_secret(production, settings):
    settings.CHECKPOINT_KEY = settings.STEP_UP_KEY
    assert safety.problems(production) == ["PORTO_CHECKPOINT_KEY must be a key of its own, not PORTO_STEP_UP_KEY"]
    settings.CHECKPOINT_KEY = settings.SECRET_KEY = "c" * 64
    assert safety.problems(production) == ["PORTO_CHECKPOINT_KEY must be a key of its own, not DJANGO_SECRET_KEY"]


def test_the_labelled_demo_signs_with_its_labelled_public_key_and_the_page_says_so(ledger, settings, client):
    settings.CHECKPOINT_KEY = None
    made = safety.prepare(ledger)
    assert settings.CHECKPOINT_KEY == DEMO_CHECKPOINT_SEED_HEX
    assert any("demo's public checkpoint key" in item for item in made)
    page = client.get("/verify/").content.decode()
    assert pinned_verifier_key().encoded() in page and "labelled demo's public key" in page


def test_the_verify_page_pins_the_configured_key_and_no_other(ledger, settings, client):
    page = client.get("/verify/").content.decode()
    assert checkpoint_keys.signer().verifier_key.encoded() in page
    assert "labelled demo's public key" not in page
    settings.CHECKPOINT_KEY = checkpoint_keys.STRANGER_SEED_HEX
    assert checkpoint_keys.stranger().verifier_key.encoded() in client.get("/verify/").content.decode()

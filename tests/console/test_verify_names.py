"""Recipients' names on /verify/, in headless Chromium: the page reaches the Python verifier's verdict on every named
vector (tests/merkle/vectors/named_statements/), shows the name before the recipient's ID as text, markup included,
isolated from the ID, and a demo recipient's statement file, downloaded from the console, names its recipient."""

from __future__ import annotations

import os

import orjson
import pytest
from playwright.sync_api import expect

from ledger_engine.demo.foundation import DISPLAY_NAMES
from porto_console.console.handles import seal
from tests.console.test_browser import chromium, screenshots  # noqa: F401  (the project's browser fixtures)
from tests.console.test_verify_page import VERIFY, choose_bytes, verifier  # noqa: F401  (the page, opened)
from tests.console.test_work_titles import demo_statements
from tests.merkle.named_statement_vectors import MARKUP_NAME, RIGHT_TO_LEFT_NAME, committed
from tests.merkle.statement_vectors import python_verdict
from tests.merkle.test_statement_vector_sets import SETS

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("label", sorted(SETS))
def test_the_page_and_the_python_verifier_agree_on_every_vector_of_each_set(verifier, label):  # noqa: F811
    vectors = SETS[label].committed()
    assert len(vectors) == {"named": 7, "titled": 4}[label]
    for name, (raw, expected) in vectors.items():
        assert verifier.evaluate(VERIFY, list(raw)) == expected, name
        assert python_verdict(raw) == expected, name


@pytest.mark.parametrize("vector, name", [("valid-named.json", MARKUP_NAME),
                                          ("valid-right-to-left-name.json", RIGHT_TO_LEFT_NAME)])
def test_the_name_is_shown_as_text_before_the_recipients_id(verifier, vector, name):  # noqa: F811
    raw = committed()[vector][0]
    recipient_id = orjson.loads(raw)["statement"]["recipient_id"]
    choose_bytes(verifier, "statement.json", raw)
    expect(verifier.locator("#verdict")).to_have_attribute("data-state", "verified")
    recipient = verifier.locator("#statement-recipient")
    expect(recipient).to_have_text(f"{name} ({recipient_id})")
    expect(recipient.locator("bdi")).to_have_text(name)
    expect(recipient.locator("img")).to_have_count(0)


def test_an_unnamed_recipient_is_shown_by_its_id_alone(verifier):  # noqa: F811
    choose_bytes(verifier, "statement.json", committed()["valid-unnamed-neighbour.json"][0])
    expect(verifier.locator("#verdict")).to_have_attribute("data-state", "verified")
    expect(verifier.locator("#statement-recipient")).to_have_text("artist-bento")
    expect(verifier.locator("#statement-recipient bdi")).to_have_count(0)


def test_a_demo_recipients_statement_names_its_recipient(ledger, client_as, verifier):  # noqa: F811
    statements = demo_statements(ledger)
    assert all(s.get("recipient_name") == DISPLAY_NAMES.get(s["recipient_id"]) for s in statements)
    statement = next(s for s in statements if "recipient_name" in s)
    response = client_as("finance").get(f"/ledger/statements/{seal('statement', statement['statement_id'])}/file/")
    assert response.status_code == 200
    choose_bytes(verifier, "statement.json", response.content)
    expect(verifier.locator("#verdict")).to_have_attribute("data-state", "verified")
    recipient = verifier.locator("#statement-recipient")
    expect(recipient.locator("bdi")).to_have_text(DISPLAY_NAMES[statement["recipient_id"]])
    expect(recipient).to_have_text(f"{statement['recipient_name']} ({statement['recipient_id']})")

"""Works' titles on /verify/, in headless Chromium (the page's verdict on every titled vector:
test_verify_names.py): the page shows each title in the Title column as text, markup included,
and a demo recipient's statement file, downloaded from the console, names its works' titles."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from porto_console.console.handles import seal
from tests.console.test_browser import chromium, screenshots  # noqa: F401  (the project's browser fixtures)
from tests.console.test_verify_page import VERIFY, choose_bytes, verifier  # noqa: F401  (the page, opened)
from tests.console.test_work_titles import demo_statements
from tests.merkle.titled_statement_vectors import MARKUP_TITLE, TITLES, committed

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = pytest.mark.browser


def test_each_title_is_shown_in_the_title_column_as_text(verifier):  # noqa: F811
    choose_bytes(verifier, "statement.json", committed()["valid-titled-lines.json"][0])
    expect(verifier.locator("#verdict")).to_have_attribute("data-state", "verified")
    expect(verifier.locator("#statement-lines thead th").first).to_have_text("Title")
    titles = verifier.locator("#statement-lines tbody tr td:first-child")
    expect(titles).to_have_text([TITLES["work-0012"], MARKUP_TITLE, ""])
    expect(verifier.locator("#statement-lines tbody img, #statement-lines tbody b")).to_have_count(0)
    expect(verifier.locator("#statement-lines tbody tr").nth(1)).to_contain_text("work-0031")


def test_a_demo_recipients_statement_names_its_works_titles(ledger, client_as, verifier):  # noqa: F811
    statement = next(s for s in demo_statements(ledger) if any("title" in line for line in s["lines"]))
    response = client_as("finance").get(f"/ledger/statements/{seal('statement', statement['statement_id'])}/file/")
    assert response.status_code == 200
    choose_bytes(verifier, "statement.json", response.content)
    expect(verifier.locator("#verdict")).to_have_attribute("data-state", "verified")
    titled = next(line for line in statement["lines"] if "title" in line)
    assert titled["title"].startswith("Demo Song ")
    expect(verifier.locator("#statement-lines tbody")).to_contain_text(titled["title"] + titled["work_id"])

"""The sign-in page of the labelled demo says where its sign-ins are (the terminal ``make run`` printed them in, and
the host-only file that keeps the passwords); the sign-in page of any other ledger says nothing of the kind."""

from __future__ import annotations

import re

from ledger_engine.demo import DEMO_LABEL
from porto_console.console.services.demo import CREDENTIALS_FILE

DEMO_WORDS = ("demo-sign-ins", "make run", "demo_credentials", "demo_totp_code", CREDENTIALS_FILE, "DEMO DATA")


def hint(page: str) -> str:
    return re.search(r'<p id="demo-sign-ins">(.*?)</p>', page, re.DOTALL).group(1)


def test_the_demo_sign_in_page_names_the_terminal_and_the_file_that_hold_the_sign_ins(client, ledger, db):
    said = hint(client.get("/login/").content.decode())
    assert "printed in the terminal where <code>make run</code> started the console" in said
    assert f"<code>var/{CREDENTIALS_FILE}</code>" in said and "readable by that host's user alone" in said


def test_the_sign_in_page_of_a_ledger_that_is_not_the_demo_says_nothing_of_demo_sign_ins(client, payouts_world, db):
    assert payouts_world.owner.genesis()["label"] != DEMO_LABEL
    page = client.get("/login/").content.decode()
    assert 'id="id_username"' in page
    assert [word for word in DEMO_WORDS if word in page] == []

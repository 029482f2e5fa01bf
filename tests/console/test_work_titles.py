"""Works' titles on the console: the demo's statements name each work's title beside its ID, as the ledger's
statement index would, and the screens that list a statement's or a run's lines show it, escaped as any text."""

from __future__ import annotations

import re

from django.template.loader import render_to_string

from ledger_engine.domain.schema.streaming import work_key
from ledger_engine.layout import STATE
from ledger_engine.selectors.statement_index import confirmed_statement
from porto_console.console.handles import seal
from porto_console.ledger import gateway

DEMO_TITLE = re.compile(r"^Demo Song \d+$")


def demo_statements(ledger) -> list[dict]:
    """Every statement of the demo's confirmed index, as its recipient's file holds it."""
    evidence = gateway().evidence
    records = [row["data"] for _, row in ledger.scan(STATE, "statement/", limit=1_000)]
    found = []
    for record in records:
        _, _, tree = ledger.read(lambda view: confirmed_statement(view, evidence.get, record["statement_id"]))
        statement = tree.statements[tree.index_of(record["public_proof_id"])]
        found.append({**statement, "statement_id": record["statement_id"]})
    return found


def test_every_demo_statement_line_of_a_work_names_the_works_title_and_no_other_line_does(ledger):
    lines = [line for statement in demo_statements(ledger) for line in statement["lines"]]
    works = [line for line in lines if "work_id" in line]
    assert works and len(works) < len(lines)  # nodes' lines and day lines too
    for line in lines:
        work = ledger.get(STATE, work_key(line["work_id"])).data if "work_id" in line else {}
        assert line.get("title") == work.get("title"), line
    number = int(works[0]["work_id"].rsplit("-", 1)[1])
    assert works[0]["title"] == f"Demo Song {number}" and all(DEMO_TITLE.match(line["title"]) for line in works)


def test_a_statements_page_lists_its_lines_with_each_works_title_beside_its_id(ledger, client_as):
    statement = next(s for s in demo_statements(ledger) if any("title" in line for line in s["lines"]))
    page = client_as("finance").get(f"/ledger/statements/{seal('statement', statement['statement_id'])}/")
    assert page.status_code == 200
    listed = page.content.decode().split('id="statement-lines"')[1].split("</table>")[0]
    for line in statement["lines"]:
        if "title" in line:
            assert (f'work <code>{line["work_id"]}</code> <q class="work-title">{line["title"]}</q>') in listed
    assert listed.count("<tr>") == len(statement["lines"]) + 1  # its head, and every line


def test_a_runs_page_shows_each_artist_lines_work_title_beside_its_id(ledger, client_as):
    run = next(row["data"] for _, row in ledger.scan(STATE, "payment_run/", limit=100)
               if row["data"]["status"] == "approved")
    page = client_as("finance").get(f"/ledger/payouts/{seal('run', run['run_id'])}/").content.decode()
    shown = re.findall(r'work <code>(demo-work-(\d+))</code> <q class="work-title">([^<]*)</q>', page)
    assert shown and all(title == f"Demo Song {int(number)}" for _, number, title in shown)


def test_a_title_is_shown_as_text_never_as_markup():
    line = {"work_id": "work-1", "title": '<img src=x onerror="alert(1)"> & <b>Fado</b>'}
    shown = render_to_string("console/includes/line_work.html", {"line": line})
    assert "<img" not in shown and "<b>" not in shown
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &lt;b&gt;Fado&lt;/b&gt;" in shown
    assert render_to_string("console/includes/line_work.html", {"line": {"work_id": "work-2"}}).strip() == (
        '<span class="line-work">work <code>work-2</code></span>')
    assert render_to_string("console/includes/line_work.html", {"line": {"node_id": "node-1"}}).strip() == ""

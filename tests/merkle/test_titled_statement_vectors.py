"""Statement files whose lines name their works' titles verify as any other; a title changed or dropped does not
(each file's verdict: test_statement_vector_sets.py)."""

from __future__ import annotations

import orjson

from tests.merkle.titled_statement_vectors import MARKUP_TITLE, TITLES, committed

COMMITTED = committed()


def test_the_valid_file_states_each_titled_work_by_its_title_and_no_other_line_by_one():
    statement = orjson.loads(COMMITTED["valid-titled-lines.json"][0])["statement"]
    assert [(line["work_id"], line.get("title")) for line in statement["lines"]] == [
        ("work-0012", TITLES["work-0012"]), ("work-0031", MARKUP_TITLE), ("work-0044", None)]
    neighbour = orjson.loads(COMMITTED["valid-untitled-neighbour.json"][0])["statement"]
    assert all("title" not in line for line in neighbour["lines"])

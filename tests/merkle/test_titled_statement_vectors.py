"""Statement files whose lines name their works' titles verify as any other; a title changed or dropped does not."""

from __future__ import annotations

import orjson
import pytest

from tests.merkle.statement_vectors import python_verdict
from tests.merkle.titled_statement_vectors import DIRECTORY, MARKUP_TITLE, TITLES, committed, vectors

COMMITTED = committed()


def test_the_committed_titled_vectors_are_the_ones_this_module_makes():
    assert vectors() == COMMITTED
    assert sorted(path.name for path in DIRECTORY.glob("*.json") if path.name != "expected.json") == sorted(COMMITTED)


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_the_python_verifier_reaches_the_expected_verdict(name):
    raw, expected = COMMITTED[name]
    assert python_verdict(raw) == expected


def test_the_valid_file_states_each_titled_work_by_its_title_and_no_other_line_by_one():
    statement = orjson.loads(COMMITTED["valid-titled-lines.json"][0])["statement"]
    assert [(line["work_id"], line.get("title")) for line in statement["lines"]] == [
        ("work-0012", TITLES["work-0012"]), ("work-0031", MARKUP_TITLE), ("work-0044", None)]
    neighbour = orjson.loads(COMMITTED["valid-untitled-neighbour.json"][0])["statement"]
    assert all("title" not in line for line in neighbour["lines"])

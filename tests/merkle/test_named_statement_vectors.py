"""Statement files that name their recipients verify as any other; a name changed, dropped or added does not, and a
name that is not a string is no statement."""

from __future__ import annotations

import orjson
import pytest

from tests.merkle.named_statement_vectors import DIRECTORY, MARKUP_NAME, RIGHT_TO_LEFT_NAME, committed, vectors
from tests.merkle.statement_vectors import python_verdict

COMMITTED = committed()


def statement_of(name: str) -> dict:
    return orjson.loads(COMMITTED[name][0])["statement"]


def test_the_committed_named_vectors_are_the_ones_this_module_makes():
    assert vectors() == COMMITTED
    assert sorted(path.name for path in DIRECTORY.glob("*.json") if path.name != "expected.json") == sorted(COMMITTED)


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_the_python_verifier_reaches_the_expected_verdict(name):
    raw, expected = COMMITTED[name]
    assert python_verdict(raw) == expected


def test_the_valid_files_name_their_recipients_and_the_neighbour_is_not_named():
    assert (statement_of("valid-named.json")["recipient_id"],
            statement_of("valid-named.json")["recipient_name"]) == ("artist-amara", MARKUP_NAME)
    assert statement_of("valid-right-to-left-name.json")["recipient_name"] == RIGHT_TO_LEFT_NAME
    assert "recipient_name" not in statement_of("valid-unnamed-neighbour.json")

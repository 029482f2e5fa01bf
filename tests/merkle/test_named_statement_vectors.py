"""Statement files that name their recipients verify as any other; a name changed, dropped or added does not, and a
name that is not a string is no statement (each file's verdict: test_statement_vector_sets.py)."""

from __future__ import annotations

import orjson

from tests.merkle.named_statement_vectors import MARKUP_NAME, RIGHT_TO_LEFT_NAME, committed

COMMITTED = committed()


def statement_of(name: str) -> dict:
    return orjson.loads(COMMITTED[name][0])["statement"]


def test_the_valid_files_name_their_recipients_and_the_neighbour_is_not_named():
    assert (statement_of("valid-named.json")["recipient_id"],
            statement_of("valid-named.json")["recipient_name"]) == ("artist-amara", MARKUP_NAME)
    assert statement_of("valid-right-to-left-name.json")["recipient_name"] == RIGHT_TO_LEFT_NAME
    assert "recipient_name" not in statement_of("valid-unnamed-neighbour.json")

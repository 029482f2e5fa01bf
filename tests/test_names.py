"""One word, one meaning: the words that once named two things each name one module now (docs/adr/0061)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("ledger_engine", "porto_console")

# The word, and the one module or package it names; what it meant elsewhere now has its own name.
ONE_MEANING = {
    "keys": {"ledger_engine/keys.py"},  # canonical key encoding; the streaming record keys live in schema/streaming.py
    "records": set(),  # stored-value encoding is storage/value_codec.py; money record access is lifecycle.py
    "effects": {"porto_console/effects"},  # the workers that carry out effects; claims on effects are money/leases.py
    "dispatch": {"porto_console/console/views/dispatch.py"},  # the dispatch switch; sending messages is delivery.py
}


def modules_named(word: str) -> set[str]:
    found = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob(f"{word}*"):
            if path.name in (f"{word}.py", word) and "__pycache__" not in path.parts:
                found.add(path.relative_to(ROOT).as_posix())
    return found


@pytest.mark.parametrize("word", sorted(ONE_MEANING))
def test_each_word_names_one_module(word):
    assert modules_named(word) == ONE_MEANING[word]

"""Each set of statement-file vectors made by a module of its own (titled works, named recipients): the committed
files are the ones its module makes, none more, and the Python verifier reaches each file's expected verdict."""

from __future__ import annotations

import pytest

from tests.merkle import named_statement_vectors, titled_statement_vectors
from tests.merkle.statement_vectors import python_verdict

SETS = {"titled": titled_statement_vectors, "named": named_statement_vectors}
CASES = [(label, name) for label, module in SETS.items() for name in sorted(module.committed())]


@pytest.mark.parametrize("label", sorted(SETS))
def test_the_committed_vectors_are_the_ones_their_module_makes(label):
    module = SETS[label]
    committed = module.committed()
    assert module.vectors() == committed
    assert sorted(path.name for path in module.DIRECTORY.glob("*.json") if path.name != "expected.json") == sorted(
        committed)


@pytest.mark.parametrize("label, name", CASES)
def test_the_python_verifier_reaches_the_expected_verdict(label, name):
    raw, expected = SETS[label].committed()[name]
    assert python_verdict(raw) == expected

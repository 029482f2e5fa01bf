"""The engine's layers import downward only: a layer never reaches one above it, so each reads without the rest.

From the bottom: ``domain`` (the pure rules) and ``storage`` (RocksDB, value encoding, the head, the state
digest); ``projections`` (the indexes the executor keeps); ``selectors`` (reads over a ``LedgerView``);
``application`` (the owner and its executor); ``adapters``, ``checkpoint`` and ``demo`` on top. Imports inside a
function count too: a cycle hidden in a function is still a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ledger_engine

ENGINE = Path(ledger_engine.__file__).parent
ABOVE = {
    "domain": ("storage", "projections", "selectors", "application", "adapters", "checkpoint", "demo"),
    "storage": ("projections", "selectors", "application", "adapters", "checkpoint", "demo", "domain.commands"),
    "projections": ("selectors", "application", "adapters", "checkpoint", "demo"),
    "selectors": ("application", "adapters", "checkpoint", "demo"),
    "application": ("adapters", "checkpoint", "demo"),
}


def imported_modules(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def reaches_above(layer: str, root: Path = ENGINE) -> list[str]:
    forbidden = tuple(f"ledger_engine.{above}" for above in ABOVE[layer])
    return [f"{path.relative_to(root)} imports {module}" for path in sorted((root / layer).rglob("*.py"))
            for module in imported_modules(path) if module == "ledger_engine" or module.startswith(forbidden)]


@pytest.mark.parametrize("layer", sorted(ABOVE))
def test_a_layer_imports_nothing_above_it(layer):
    assert (ENGINE / layer).is_dir()
    assert reaches_above(layer) == []


def test_the_check_finds_an_import_from_above_even_inside_a_function(tmp_path):
    layer = tmp_path / "selectors"
    layer.mkdir()
    (layer / "sneaky.py").write_text("def f():\n    from ledger_engine.application.owner import LedgerOwner\n")
    assert reaches_above("selectors", tmp_path) == ["selectors/sneaky.py imports ledger_engine.application.owner"]

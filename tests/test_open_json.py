"""Every JSON object the engine or the console leaves open says why: it takes a name of
``ledger_engine/open_json.py``, never a bare ``dict[str, Any]``, and each name there carries its reason on its own
line."""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pytest

import ledger_engine
import porto_console
from ledger_engine import open_json

ENGINE = Path(ledger_engine.__file__).parent
CONSOLE = Path(porto_console.__file__).parent
ALIASES = ENGINE / "open_json.py"
BARE = re.compile(r"\b[Dd]ict\[\s*str\s*,\s*(?:typing\.)?Any\s*\]")


def bare_open_dicts(root: Path = ENGINE) -> list[str]:
    return [f"{path.relative_to(root)}:{number}: {line.strip()}" for path in sorted(root.rglob("*.py"))
            if path.name != ALIASES.name or path.parent != root
            for number, line in enumerate(path.read_text().splitlines(), start=1) if BARE.search(line)]


def aliases() -> dict[str, str]:
    """Each alias the module declares (``Name: TypeAlias = ...``), with its line."""
    lines = ALIASES.read_text().splitlines()
    return {node.target.id: lines[node.lineno - 1] for node in ast.parse(ALIASES.read_text()).body
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
            and ast.unparse(node.annotation) == "TypeAlias"}


@pytest.mark.parametrize("root", [ENGINE, CONSOLE], ids=["ledger_engine", "porto_console"])
def test_no_open_dict_goes_unnamed(root):
    assert bare_open_dicts(root) == []


def test_the_check_finds_a_bare_open_dict(tmp_path):
    (tmp_path / "layer").mkdir()
    (tmp_path / "layer" / "reads.py").write_text("def read() -> Dict[str,Any]:\n    return {}\n")
    (tmp_path / ALIASES.name).write_text("Named = dict[str, Any]  # its reason\n")
    assert bare_open_dicts(tmp_path) == ["layer/reads.py:1: def read() -> Dict[str,Any]:"]


def test_each_alias_says_why_on_its_line():
    found = aliases()
    assert 1 <= len(found) <= 8, sorted(found)
    assert [name for name, line in found.items() if not line.split("#", 1)[-1].strip() or "#" not in line] == []


def test_each_alias_is_a_plain_open_dict():
    assert {name: getattr(open_json, name) for name in aliases()} == dict.fromkeys(aliases(), dict[str, typing.Any])

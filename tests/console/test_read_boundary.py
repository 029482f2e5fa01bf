"""The console, the internal API and the workers read the ledger only through its selectors.

No module of ``porto_console`` imports the key builders, the column-family
layout or the store, imports a function that builds a key or a key prefix,
scans the ledger itself, or takes a key apart with ``split("/")``: key shapes
belong to ``ledger_engine`` alone (docs/adr/0058). Each exception names its
reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import porto_console

ROOT = Path(porto_console.__file__).parent
FORBIDDEN_MODULES = ("ledger_engine.keys", "ledger_engine.layout", "ledger_engine.storage",
                     "ledger_engine.application.pending", "ledger_engine.domain.changes")
FORBIDDEN_NAMES = {"key", "seq20", "component", "RocksStore", "PendingBatch", "Changes"}
FORBIDDEN_SUFFIXES = ("_key", "_prefix", "_KEY", "_PREFIX")
SPLIT_METHODS = {"split", "rsplit", "partition", "rpartition"}
RAW_READS = {"scan", "at_boundary", "view"}  # a view is made in ledger.py alone: read_view, read_settled
# (path under porto_console, what the check found) -> why it stands.
ALLOWED = {
    ("console/handles.py", 'split("/")'): "a handle's own sealed value joins several IDs with '/', no ledger key",
    ("console/safety.py", "DEMO_STEP_UP_KEY"): "the demo's fixture signing key, not a ledger key",
    ("console/safety.py", "DEMO_IDENTITY_KEY"): "the demo's public identity-digest key, not a ledger key",
    ("ledger.py", "view"): "read_view and read_settled make the console's views; announcing reads the new effects",
    ("ledger.py", "ledger_engine.storage.head"): "the head's value type, which each read pairs with its data",
}


def _violations(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ledger_engine"):
            if node.module.startswith(FORBIDDEN_MODULES):
                found.append(node.module)
            found.extend(alias.name for alias in node.names
                         if alias.name in FORBIDDEN_NAMES or alias.name.endswith(FORBIDDEN_SUFFIXES))
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names if alias.name.startswith(FORBIDDEN_MODULES))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in SPLIT_METHODS and any(isinstance(arg, ast.Constant) and arg.value == "/" for arg in node.args):
                found.append(f'{method}("/")')
            elif method in RAW_READS:
                found.append(method)
        elif isinstance(node, ast.Attribute) and node.attr == "store" and isinstance(node.ctx, ast.Load):
            found.append(".store")
    return found


def boundary_violations() -> list[tuple[str, str]]:
    return [(str(path.relative_to(ROOT)), what) for path in sorted(ROOT.rglob("*.py")) for what in _violations(path)]


def test_no_porto_console_module_builds_splits_or_scans_a_ledger_key():
    unexplained = [found for found in boundary_violations() if found not in ALLOWED]
    assert unexplained == []


def test_every_exception_still_occurs_and_says_why():
    found = set(boundary_violations())
    assert [allowed for allowed in ALLOWED if allowed not in found] == []
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_check_sees_each_kind_of_violation(tmp_path, monkeypatch):
    module = tmp_path / "sample.py"
    module.write_text('from ledger_engine.layout import STATE\nfrom ledger_engine.domain.actors import account_key\n'
                      'import ledger_engine.storage.rocks\nledger.scan(STATE, "account/")\nname.rsplit("/", 1)\n'
                      'owner.store\n')
    assert _violations(module) == ["ledger_engine.layout", "account_key", "ledger_engine.storage.rocks",
                                   "scan", 'rsplit("/")', ".store"]

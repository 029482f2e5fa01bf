"""``make run`` installs only ``pip install -e .``: nothing the console, the ledger or the scripts import may
need the test extra."""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_SOURCES = [ROOT / "porto_console", ROOT / "ledger_engine", ROOT / "scripts", ROOT / "manage.py"]
OWN_PACKAGES = {"porto_console", "ledger_engine", "scripts"}
PROJECT = "porto-london"


def imported_top_level_modules() -> dict[str, str]:
    """Every top-level module the runtime sources import anywhere (module level or inside a function)."""
    found: dict[str, str] = {}
    for source in RUNTIME_SOURCES:
        for path in [source] if source.is_file() else sorted(source.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else (
                    [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
                for name in names:
                    found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def requirement_closure(name: str, extras: frozenset[str] = frozenset()) -> set[str]:
    """The distributions ``pip install NAME[EXTRAS]`` brings, by canonical name."""
    seen: set[str] = set()
    pending = [(name, extras)]
    while pending:
        current, wanted = pending.pop()
        key = canonicalize_name(current)
        seen.add(key)
        for text in metadata.requires(current) or []:
            requirement = Requirement(text)
            environments = [{"extra": extra} for extra in wanted] or [{"extra": ""}]
            applies = requirement.marker is None or any(requirement.marker.evaluate(env) for env in environments)
            if applies and canonicalize_name(requirement.name) not in seen:
                pending.append((requirement.name, frozenset(requirement.extras)))
    return seen


def test_every_third_party_import_of_the_runtime_comes_from_the_runtime_dependencies():
    runtime = requirement_closure(PROJECT)
    providers = metadata.packages_distributions()
    missing = {}
    for module, where in imported_top_level_modules().items():
        if module in sys.stdlib_module_names or module in OWN_PACKAGES:
            continue
        distributions = {canonicalize_name(name) for name in providers.get(module, [])}
        if not distributions & runtime:
            missing[module] = (where, sorted(distributions))
    assert not missing, f"imported by the runtime but not installed by `pip install -e .`: {missing}"


def test_the_test_extra_is_not_part_of_the_runtime_install():
    runtime = requirement_closure(PROJECT)
    test_only = {canonicalize_name(Requirement(text).name) for text in metadata.requires(PROJECT)
                 if Requirement(text).marker and Requirement(text).marker.evaluate({"extra": "test"})
                 and not Requirement(text).marker.evaluate({"extra": ""})}
    assert {"pytest", "playwright", "hypothesis", "schemathesis"} <= test_only
    assert not test_only & runtime


BLOCK_TEST_PACKAGES = """
import importlib.abc, sys
BLOCKED = {"pytest", "_pytest", "pytest_django", "hypothesis", "playwright", "schemathesis", "pytest_timeout", "xdist",
           "execnet"}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"test-only package {name} imported by the runtime", name=name)
sys.meta_path.insert(0, Block())
for name in list(sys.modules):
    if name.split(".")[0] in BLOCKED:
        del sys.modules[name]
sys.argv = ["manage.py", "check"]
import runpy
runpy.run_path("manage.py", run_name="__main__")
import porto_console.console.launcher, porto_console.urls, porto_console.effects.tasks
"""


def test_the_console_starts_its_checks_and_imports_with_every_test_package_missing(tmp_path):
    checked = subprocess.run([sys.executable, "-c", BLOCK_TEST_PACKAGES], cwd=ROOT, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "PORTO_VAR_DIR": str(tmp_path),
                                  "DJANGO_SETTINGS_MODULE": "porto_console.settings"}, timeout=120)
    assert checked.returncode == 0, checked.stderr
    assert "System check identified no issues" in checked.stdout

"""The locks under ``requirements/`` are what ``pyproject.toml`` asks for: every dependency it names, in every
install set, is pinned to one version its range allows, with the hashes pip checks (docs/adr/0096). A dependency
added to or changed in ``pyproject.toml`` without ``make lock`` fails here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# Each install set as the Makefile installs it, with the extras it adds to the project's own dependencies.
INSTALL_SETS = {"run": (), "test": ("test",), "bench": ("test", "bench")}
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?P<operator>===|==|~=|!=|<=|>=|<|>)?\s*"
                 r"(?P<version>[^\s;]*)(?P<rest>.*)$")


def lock_path(install_set: str) -> Path:
    return ROOT / "requirements" / f"{install_set}.txt"


def requirement_lines(text: str) -> list[str]:
    """The lock's requirement lines, each with its continuation lines (its hashes) joined on."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line for line in joined.splitlines() if line and not line.lstrip().startswith(("#", "-"))]


def pins(install_set: str) -> dict[str, tuple[str, str, frozenset[str]]]:
    """Each locked distribution, by canonical name: its operator, its version and its hashes."""
    locked = {}
    for line in requirement_lines(lock_path(install_set).read_text()):
        match = PIN.match(line)
        assert match, f"{install_set}.txt: a line that is not a requirement: {line!r}"
        hashes = frozenset(re.findall(r"--hash=sha256:([0-9a-f]{64})", match["rest"]))
        locked[canonicalize_name(match["name"])] = (match["operator"], match["version"], hashes)
    return locked


def asked_for(install_set: str) -> list[Requirement]:
    """The requirements ``pyproject.toml`` names for an install set: the project's, then each extra's."""
    texts = list(PROJECT["dependencies"])
    for extra in INSTALL_SETS[install_set]:
        texts += PROJECT["optional-dependencies"][extra]
    return [Requirement(text) for text in texts]


def test_the_install_sets_are_the_projects_extras():
    assert set(PROJECT["optional-dependencies"]) == {extra for extras in INSTALL_SETS.values() for extra in extras}


@pytest.mark.parametrize("install_set", INSTALL_SETS)
def test_every_dependency_pyproject_names_is_pinned_in_the_lock_within_its_range(install_set):
    locked = pins(install_set)
    for requirement in asked_for(install_set):
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement} is in pyproject.toml but not in {install_set}.txt: run `make lock`"
        operator, version, _ = locked[name]
        assert operator == "==", f"{install_set}.txt: {name} is not pinned with ==: {operator}{version}"
        assert requirement.specifier.contains(Version(version), prereleases=True), (
            f"{install_set}.txt pins {name}=={version}, outside pyproject.toml's {requirement}: run `make lock`")


@pytest.mark.parametrize("install_set", INSTALL_SETS)
def test_every_pin_is_exact_and_carries_hashes_so_pip_checks_every_file(install_set):
    for name, (operator, version, hashes) in pins(install_set).items():
        assert operator == "==" and Version(version), f"{install_set}.txt: {name}{operator}{version}"
        assert hashes, f"{install_set}.txt: {name}=={version} has no hash"


def test_each_lock_keeps_the_versions_of_the_set_below_it():
    """Adding the test or bench set to a venv never moves a version the smaller set installed."""
    for smaller, larger in (("run", "test"), ("test", "bench")):
        below, above = pins(smaller), pins(larger)
        moved = {name: (pin[1], above.get(name, ("", "missing"))[1]) for name, pin in below.items()
                 if above.get(name, (None, None))[1] != pin[1]}
        assert not moved, f"{larger}.txt moves or drops what {smaller}.txt pins: {moved}"


def test_the_run_lock_holds_only_what_the_project_needs_directly_or_through_another_pin():
    """pip-compile notes why each distribution is there; one no pyproject dependency leads to is left over."""
    text = lock_path("run").read_text()
    direct = {canonicalize_name(requirement.name) for requirement in asked_for("run")}
    reasons = dict(re.findall(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==.*?\n((?:\s+(?:--hash|#).*\n?)+)", text, re.M))
    named_by_pyproject = {canonicalize_name(name) for name, why in reasons.items() if "(pyproject.toml)" in why}
    assert named_by_pyproject == direct, (
        f"run.txt and pyproject.toml differ on {sorted(named_by_pyproject ^ direct)}: run `make lock`")


@pytest.mark.parametrize("install_set", INSTALL_SETS)
def test_the_locks_are_resolved_for_python_3_11_by_make_lock(install_set):
    header = lock_path(install_set).read_text().split("\n\n", 1)[0]
    assert "autogenerated by pip-compile with Python 3.11" in header and "make lock" in header

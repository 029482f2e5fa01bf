"""Every document the code and docs cite is in the repository, and every section they cite exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITING = ("ledger_engine", "porto_console", "tests", "docs", "benchmarks", "scripts", "templates")
TOP_LEVEL = ("README.md", "Makefile", "pyproject.toml", ".ci/run")
SUFFIXES = {".py", ".md", ".html", ".txt", ".toml", ".cfg", ".ini", ""}
CITATION = re.compile(r"(?<![\w/.])docs/[\w./-]*[\w/]")
SECTION = re.compile(r"(docs/spec/[\w-]+\.md)`?((?:,? (?:and )?§\d+)+)")
# Documents outside the repository, spelled in pieces so this file does not cite them itself.
OUTSIDE = re.compile("|".join((r"\bseeds? 0\d\d\b", r"\bseeds/", "DESIGN" + r"\.md", r"\bDESIGN section",
                               r"\.\./" + "shared", "/work/" + "shared")), re.IGNORECASE)


def citing_files() -> list[Path]:
    files = [ROOT / name for name in TOP_LEVEL if (ROOT / name).is_file()]
    for folder in CITING:
        files += [path for path in sorted((ROOT / folder).rglob("*"))
                  if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts]
    return files


def cited_paths(text: str) -> set[str]:
    return {match.group(0).rstrip("./") for match in CITATION.finditer(text)}


def resolves(citation: str) -> bool:
    """A path, a folder, or an ADR named by its number alone (``docs/adr/0010``)."""
    path = ROOT / citation
    if path.exists():
        return True
    adr = re.fullmatch(r"docs/adr/(\d{4})", citation)
    return adr is not None and any((ROOT / "docs/adr").glob(f"{adr.group(1)}-*.md"))


def sections_of(spec: str) -> set[int]:
    return {int(number) for number in re.findall(r"^## (\d+)\.", (ROOT / spec).read_text(), re.MULTILINE)}


def test_every_cited_document_exists():
    missing = sorted({f"{path.relative_to(ROOT)}: {citation}" for path in citing_files()
                      for citation in cited_paths(path.read_text(errors="replace")) if not resolves(citation)})
    assert missing == []


def test_every_cited_section_of_the_specification_exists():
    missing = []
    for path in citing_files():
        for match in SECTION.finditer(path.read_text(errors="replace")):
            spec, cited = match.group(1), {int(number) for number in re.findall(r"\d+", match.group(2))}
            if (ROOT / spec).is_file() and cited - sections_of(spec):
                missing.append(f"{path.relative_to(ROOT)}: {spec} §{sorted(cited - sections_of(spec))}")
    assert missing == []


def test_no_citation_names_a_document_outside_the_repository():
    outside = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in citing_files()
               for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
               if OUTSIDE.search(line)]
    assert outside == []


def test_the_checks_see_citations_at_all():
    """The patterns find what they look for: a check that finds nothing checks nothing."""
    assert cited_paths("see docs/adr/0043 and `docs/spec/engine-and-journal.md` §7.") == {
        "docs/adr/0043", "docs/spec/engine-and-journal.md"}
    assert not resolves("docs/spec/" + "no-such-rule.md") and resolves("docs/adr/0010")
    assert OUTSIDE.search("(seed" + " 001, \"Audit events\")") and OUTSIDE.search("DESIGN" + ".md section 6")
    assert SECTION.search("docs/spec/engine-and-journal.md §7 and §9").group(2) == " §7 and §9"

"""A work's display title: given on import, kept in the work's record only when given, and refused when it is not
one line of 1 to 200 visible characters (NFC), before anything is journalled."""

from __future__ import annotations

import re
import unicodedata

import pytest

from ledger_engine.domain.commands.catalogue import MAX_TITLE_CHARS, display_title
from ledger_engine.domain.schema import streaming as schema
from ledger_engine.errors import ErrorCode, LedgerError
from tests.engine.test_rules_catalogue import catalogue_ledger, import_works  # noqa: F401  (its ledger fixture)
from tests.streaming.test_record_shapes import mismatches
from tests.support import payloads
from tests.support.outcomes import assert_accepted, assert_refused
from tests.support.store import owner_dump

DECOMPOSED = unicodedata.normalize("NFD", "Saudade em Dó")
BAD_TITLES = {
    "empty": "",
    "too long": "x" * (MAX_TITLE_CHARS + 1),
    "leading space": " Fado",
    "trailing no-break space": "Fado\u00a0",
    "line feed inside": "Fado\n(live)",
    "tab inside": "Fado\t(live)",
    "escape character": "Fado\u001b[31m",
    "C1 control": "Fado\u0085",
    "line separator": "Fado\u2028Lisboa",
    "unassigned code point": "Fado\u0378",
}


def titled(work_id: str, title: object) -> dict:
    return {**payloads.work(work_id), "title": title}


def test_a_title_is_stored_with_the_work_in_its_normal_form(catalogue_ledger, envelopes):  # noqa: F811
    assert_accepted(catalogue_ledger, import_works(envelopes, "import-1", titled("w-1", DECOMPOSED),
                                                   titled("w-2", "x" * MAX_TITLE_CHARS)))
    work = catalogue_ledger.get("state", "work/w-1").data
    assert work["title"] == unicodedata.normalize("NFC", DECOMPOSED) != DECOMPOSED
    assert catalogue_ledger.get("state", "work/w-2").data["title"] == "x" * MAX_TITLE_CHARS
    assert mismatches(work, schema.Work, "work/w-1") == []


def test_a_work_imported_without_a_title_has_no_title_key(catalogue_ledger, envelopes):  # noqa: F811
    assert_accepted(catalogue_ledger, import_works(envelopes, "import-1", payloads.work("w-1"),
                                                   titled("w-2", None)))
    for work_id in ("w-1", "w-2"):
        assert "title" not in catalogue_ledger.get("state", f"work/{work_id}").data


def test_activating_and_withdrawing_a_work_keep_its_title(catalogue_ledger, envelopes):  # noqa: F811
    assert_accepted(catalogue_ledger, import_works(envelopes, "import-1", titled("w-1", "Noite 🎵 Clara")))
    assert_accepted(catalogue_ledger, envelopes("ActivateWork", payloads.rights("w-1", {"art-1": 10_000}),
                                                actor="ingest-1"))
    work = catalogue_ledger.get("state", "work/w-1").data
    assert (work["status"], work["title"]) == ("active", "Noite 🎵 Clara")


@pytest.mark.parametrize("title", BAD_TITLES.values(), ids=list(BAD_TITLES))
def test_a_bad_title_refuses_the_whole_import_and_writes_nothing(catalogue_ledger, envelopes, title):  # noqa: F811
    envelope = import_works(envelopes, "import-1", payloads.work("w-0"), titled("w-1", title))
    assert_refused(catalogue_ledger, envelope, ErrorCode.INVALID_PAYLOAD)
    with pytest.raises(LedgerError) as raised:
        catalogue_ledger.submit(envelope)
    assert raised.value.detail.startswith("works.1.title")
    assert catalogue_ledger.get("state", "work/w-0") is None


def test_a_title_that_is_not_a_string_is_refused(catalogue_ledger, envelopes):  # noqa: F811
    before = owner_dump(catalogue_ledger)
    for title in (15, ["Demo Song 15"], True):
        assert_refused(catalogue_ledger, import_works(envelopes, "import-1", titled("w-1", title)),
                       ErrorCode.INVALID_PAYLOAD)
    assert owner_dump(catalogue_ledger) == before


def test_the_rule_reads_each_reason_in_words():
    assert display_title("Ínsula") == "Ínsula"
    for title, says in (("", "1 to 200 characters, not 0"), (" a", "no whitespace"),
                        ("a\u0007b", "(U+0007)"), ("a\u0378", "(U+0378)")):
        with pytest.raises(ValueError, match=re.escape(says)):
            display_title(title)

"""ImportCatalogue and ActivateWork: unique imports and works, exact chunk coverage, sound append-only rights."""

from __future__ import annotations

from typing import Any

import pytest

from ledger_engine.errors import ErrorCode
from ledger_engine.keys import seq20
from tests.support import payloads
from tests.support.outcomes import assert_accepted, assert_refused, assert_rejected

INGEST = "ingest-1"
ARTISTS = ("art-1", "art-2", "art-3")
FIRST_RIGHTS = f"rights/w-1/{seq20(1)}"


@pytest.fixture
def catalogue_ledger(owner, envelopes):
    """An ingest worker, three artists with payout addresses, one listener."""
    assert_accepted(owner, envelopes.account(INGEST, "worker", ["ingest"]))
    for artist in ARTISTS:
        assert_accepted(owner, envelopes.account(artist, "artist", payout_address=payloads.address(artist)))
    assert_accepted(owner, envelopes.account("listener-1", "listener"))
    return owner


def import_works(envelopes, import_id: str, *works: dict[str, Any], actor: str = INGEST) -> dict[str, Any]:
    return envelopes("ImportCatalogue", payloads.catalogue(import_id, *works), actor=actor)


def activate(envelopes, work_id: str, splits: dict[str, int], *, version: int = 1) -> dict[str, Any]:
    return envelopes("ActivateWork", payloads.rights(work_id, splits, version=version), actor=INGEST)


def test_an_import_creates_works_and_renditions(catalogue_ledger, envelopes):
    outcome = assert_accepted(catalogue_ledger, import_works(envelopes, "import-1", payloads.work("w-1"),
                                                             payloads.work("w-2")))
    assert outcome.result["data"] == {"import_id": "import-1", "work_ids": ["w-1", "w-2"]}
    work = catalogue_ledger.get("state", "work/w-1").data
    assert (work["status"], work["rights_version"], work["rendition_ids"]) == ("imported", 0, ["w-1-aac"])
    assert catalogue_ledger.get("state", "rendition/w-1-aac").data["chunks"] == payloads.chunks(30_000)


def test_an_import_is_applied_once(catalogue_ledger, envelopes):
    assert_accepted(catalogue_ledger, import_works(envelopes, "import-1", payloads.work("w-1")))
    assert_rejected(catalogue_ledger, import_works(envelopes, "import-1", payloads.work("w-2")), "ALREADY_EXISTS")
    assert catalogue_ledger.get("state", "work/w-2") is None


def test_a_work_is_imported_once(catalogue_ledger, envelopes):
    assert_accepted(catalogue_ledger, import_works(envelopes, "import-1", payloads.work("w-1")))
    again = import_works(envelopes, "import-2", payloads.work("w-2"), payloads.work("w-1"))
    assert_rejected(catalogue_ledger, again, "ALREADY_EXISTS")


def test_a_work_twice_in_one_import_is_refused(catalogue_ledger, envelopes):
    doubled = import_works(envelopes, "import-1", payloads.work("w-1"),
                           payloads.work("w-1", payloads.rendition("w-1-flac")))
    assert_rejected(catalogue_ledger, doubled, "ALREADY_EXISTS")


def test_a_rendition_belongs_to_one_work(catalogue_ledger, envelopes):
    shared = payloads.rendition("shared-aac")
    assert_rejected(catalogue_ledger, import_works(envelopes, "import-1", payloads.work("w-1", shared),
                                                   payloads.work("w-2", shared)), "ALREADY_EXISTS")


def test_only_ingest_imports(catalogue_ledger, envelopes):
    """The catalogue decides whom works pay: an admin provisions accounts, not rights (roles-and-processes §2)."""
    assert_accepted(catalogue_ledger, envelopes.account("fin-1", roles=["finance"]))
    for actor in ("fin-1", "genesis-admin"):
        assert_rejected(catalogue_ledger, import_works(envelopes, "import-1", payloads.work("w-1"), actor=actor),
                        "CAPABILITY_MISSING")
    assert_accepted(catalogue_ledger, import_works(envelopes, "import-1", payloads.work("w-1")))


def test_an_admin_cannot_change_whom_a_work_pays(catalogue_ledger, envelopes):
    assert_accepted(catalogue_ledger, import_works(envelopes, "import-1", payloads.work("w-1")))
    assert_accepted(catalogue_ledger, activate(envelopes, "w-1", {"art-1": 10_000}))
    for command_type, payload in (
            ("ActivateWork", payloads.rights("w-1", {"art-2": 10_000}, version=2)),
            ("DisableWork", {"work_id": "w-1", "reason": "rights_dispute", "evidence_digest": payloads.digest(1)})):
        assert_rejected(catalogue_ledger, envelopes(command_type, payload, actor="genesis-admin"), "CAPABILITY_MISSING")


def chunk_list(*spans: tuple[int, int], indexes: list[int] | None = None) -> list[dict[str, Any]]:
    indexes = indexes if indexes is not None else list(range(len(spans)))
    return [{"index": index, "start_ms": start, "end_ms": end, "size_bytes": 1_000, "sha256": payloads.digest(index)}
            for index, (start, end) in zip(indexes, spans)]


BAD_COVERAGE = {
    "gap": chunk_list((0, 10_000), (12_000, 30_000)),
    "overlap": chunk_list((0, 10_000), (9_000, 30_000)),
    "short of the duration": chunk_list((0, 10_000), (10_000, 29_000)),
    "beyond the duration": chunk_list((0, 10_000), (10_000, 31_000)),
    "not from zero": chunk_list((1_000, 30_000)),
    "empty chunk": chunk_list((0, 10_000), (10_000, 10_000), (10_000, 30_000)),
    "misnumbered": chunk_list((0, 10_000), (10_000, 30_000), indexes=[0, 2]),
    "out of order": chunk_list((10_000, 30_000), (0, 10_000), indexes=[1, 0]),
    "no chunks": [],
}


@pytest.mark.parametrize("case", BAD_COVERAGE, ids=list(BAD_COVERAGE))
def test_chunks_must_cover_the_rendition_exactly_in_order(catalogue_ledger, envelopes, case):
    rendition = payloads.rendition("w-1-aac", 30_000, chunk_list=BAD_COVERAGE[case])
    assert_refused(catalogue_ledger, import_works(envelopes, "import-1", payloads.work("w-1", rendition)),
                   ErrorCode.INVALID_PAYLOAD)


@pytest.fixture
def imported(catalogue_ledger, envelopes):
    assert_accepted(catalogue_ledger, import_works(envelopes, "import-1", payloads.work("w-1")))
    return catalogue_ledger


def test_activation_records_the_first_rights_version(imported, envelopes):
    assert_accepted(imported, activate(envelopes, "w-1", {"art-1": 6_000, "art-2": 4_000}))
    work = imported.get("state", "work/w-1").data
    assert (work["status"], work["rights_version"]) == ("active", 1)
    rights = imported.get("state", FIRST_RIGHTS).data
    assert rights["recipients"] == [{"recipient_id": "art-1", "split_bps": 6_000},
                                    {"recipient_id": "art-2", "split_bps": 4_000}]


BAD_SPLITS = {
    "short of 10000": ({"art-1": 5_000, "art-2": 4_999}, "INVALID_SPLITS"),
    "over 10000": ({"art-1": 5_000, "art-2": 5_001}, "INVALID_SPLITS"),
    "unsorted recipients": ({"art-2": 5_000, "art-1": 5_000}, "INVALID_SPLITS"),
    "unknown recipient": ({"art-1": 5_000, "nobody": 5_000}, "INVALID_REFERENCE"),
    "listener as recipient": ({"art-1": 5_000, "listener-1": 5_000}, "INVALID_REFERENCE"),
}


@pytest.mark.parametrize("case", BAD_SPLITS, ids=list(BAD_SPLITS))
def test_splits_are_sound(imported, envelopes, case):
    splits, code = BAD_SPLITS[case]
    assert_rejected(imported, activate(envelopes, "w-1", splits), code)
    assert imported.get("state", "work/w-1").data["status"] == "imported"


def test_recipients_must_be_distinct(imported, envelopes):
    envelope = activate(envelopes, "w-1", {"art-1": 5_000})
    envelope["payload"]["rights"]["recipients"].append({"recipient_id": "art-1", "split_bps": 5_000})
    assert_rejected(imported, envelope, "INVALID_SPLITS")


def test_a_zero_split_is_refused(imported, envelopes):
    assert_refused(imported, activate(envelopes, "w-1", {"art-1": 10_000, "art-2": 0}), ErrorCode.INVALID_PAYLOAD)


def test_an_unknown_work_is_not_found(imported, envelopes):
    assert_rejected(imported, activate(envelopes, "w-9", {"art-1": 10_000}), "NOT_FOUND")


def test_rights_versions_are_append_only(imported, envelopes):
    assert_rejected(imported, activate(envelopes, "w-1", {"art-1": 10_000}, version=2), "INVALID_STATE")
    assert_accepted(imported, activate(envelopes, "w-1", {"art-1": 10_000}))
    first = imported.get("state", FIRST_RIGHTS)
    assert_rejected(imported, activate(envelopes, "w-1", {"art-2": 10_000}), "INVALID_STATE")
    assert_rejected(imported, activate(envelopes, "w-1", {"art-2": 10_000}, version=3), "INVALID_STATE")
    assert_accepted(imported, activate(envelopes, "w-1", {"art-2": 5_000, "art-3": 5_000}, version=2))
    assert imported.get("state", FIRST_RIGHTS) == first
    assert imported.get("state", "work/w-1").data["rights_version"] == 2

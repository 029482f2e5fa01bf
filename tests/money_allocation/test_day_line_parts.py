"""Day lines' parts (docs/adr/0073, step 3): a frozen day's statements link each day line to the listener-days it is
made of, the recipient checks that link, and replay and verify hold it to the chunk evidence.

A town of listeners, their first day split by the real day allocator and frozen in chunks by the owner's loop (the
fixtures of ``test_allocate_day.py``), its chunks' bytes in the evidence store. Each day line's parts are held to the
independent oracle (``oracle.london_1_lines``) of the listener-day at each part's position, a statement index is
prepared from the ledger and its evidence, anchored, and every recipient's statement file and parts files verified.
"""

from __future__ import annotations

import copy
import hashlib
from collections import defaultdict
from typing import Any, Callable

import orjson
import pytest

from ledger_engine.application import admission_clock
from ledger_engine.application.day_allocator import DayAllocator
from ledger_engine.canonical import canonical_bytes
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.integrity import verify_store
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.checkpoint.verify import VerificationError, verify_export
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.merkle.day_line_parts import parts_total
from ledger_engine.merkle.document import encode_document
from ledger_engine.merkle.statement import (
    StatementTree, check_statement_file, sign_statement_file, statement_file_bytes, statement_leaf_hash,
)
from ledger_engine.projections.day_line_evidence import day_line_documents, state_reader
from ledger_engine.selectors.statement_index import (
    index_artifact, parts_file, prepare_statement_index, statement_document, statement_file, statements_of_index,
)
from tests.conftest import SUITE_WALL_CLOCK_MS
from tests.merkle import checkpoint_keys
from tests.money_allocation.oracle import london_1_lines, records
from tests.money_allocation.test_allocate_day import (  # noqa: F401 (the ledger fixture)
    CHUNK, SLICE, Ledger, funded_first_days, heard, ledger, listener_ids, request, served_by,
)
from tests.money_allocation.world import FINANCE, NODES, RIGHTS
from tests.money_payouts.test_statement_trees import anchor_root
from tests.money_payouts.world import WORKERS, PayoutWorld
from tests.support import cli

TOWN = listener_ids()[:100]  # three chunks: 40, 40 and 20 listener-days
CHAIN = "simulated chain 4"
PINNED = checkpoint_keys.signer().verifier_key


@pytest.fixture
def town(ledger: Ledger, monkeypatch) -> Ledger:
    """The workers that anchor batches, and the town's first day, frozen. The owner's wall clock keeps up with the
    envelopes' clock: after its own freeze, this ledger admits more commands than the suite's fixed clock leaves
    room for."""
    monkeypatch.setattr(admission_clock, "wall_clock_ms",
                        lambda: max(SUITE_WALL_CLOCK_MS, ledger.world.envelopes.clock_ms + 1_000))
    for worker, roles in WORKERS.items():
        assert ledger.owner.submit(ledger.world.envelopes.account(worker, "worker", roles)).accepted
    funded_first_days(ledger.world, TOWN)
    assert request(ledger.world).accepted
    with DayAllocator(workers=1) as allocator:
        assert ledger.freezer(allocator).run("request-1")["status"] == "done"
    return ledger


def day_lines(ledger: Ledger) -> list[dict[str, Any]]:
    return [line for line in records(ledger.owner, "allocation_line/") if line["budget_id"] is None]


def documents(ledger: Ledger, lines: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return list(day_line_documents(state_reader(ledger.owner.store.get), ledger.evidence.get, lines))


def oracle_lines(listener_id: str) -> list[tuple]:
    """What the oracle, written from the specification, pays for this town listener's first day."""
    number = int(listener_id.rsplit("-", 1)[1])
    works = [{"work_id": work_id, "rights_version": 1, "listened_ms": listened, "splits": RIGHTS[work_id]}
             for work_id, listened in heard(number).items()]
    nodes = [{"node_id": node_id, "operator_id": NODES[node_id], "served_bytes": served}
             for node_id, served in served_by(number).items()]
    return london_1_lines(SLICE, works, nodes)


def listener_at(ledger: Ledger, artifact: dict[str, Any], position: int) -> str:
    return orjson.loads(ledger.evidence.get(artifact["hash"]).splitlines()[position])["listener_id"]


# The parts of a frozen day.

def test_every_day_lines_parts_sum_to_it_and_are_the_oracles_lines_of_the_listener_days_at_their_positions(town):
    found = documents(town, day_lines(town))
    assert len({line["artifact"]["chunk"] for line, _ in found}) == 3
    in_parts: dict[int, set[int]] = defaultdict(set)
    for line, document in found:
        assert parts_total(document["parts"]) == int(line["amount"]) and document["count"] == len(document["parts"])
        for part in document["parts"]:
            expected = [(work or node, amount) for role, recipient, work, _, node, amount
                        in oracle_lines(listener_at(town, line["artifact"], part["position"]))
                        if (role, recipient) == (line["role"], line["recipient_id"])]
            assert [(found_line.get("work_id") or found_line.get("node_id"), int(found_line["amount"]))
                    for found_line in part["lines"]] == expected
            in_parts[line["artifact"]["chunk"]].add(part["position"])
    assert {chunk: len(positions) for chunk, positions in in_parts.items()} == {0: CHUNK, 1: CHUNK, 2: 100 - 2 * CHUNK}
    assert all(b"listener-" not in encode_document(document) for _, document in found)


def test_a_chunk_whose_stored_bytes_are_not_its_hash_gives_no_parts(town):
    line = day_lines(town)[0]
    with pytest.raises(LedgerError) as refused:
        documents(town, [{**line, "artifact": {**line["artifact"], "hash": hashlib.sha256(b"other").hexdigest()}}])
    assert refused.value.code == ErrorCode.NOT_FOUND
    with pytest.raises(LedgerError) as refused:
        list(day_line_documents(state_reader(town.owner.store.get), lambda _: b"other bytes", [line]))
    assert refused.value.code == ErrorCode.CONFLICTING_EVIDENCE


# Statements of a frozen day, and the recipient's check.

def index_statements(ledger: Ledger, number: int = 9, *, forge: Callable[[list[dict]], None] | None = None
                     ) -> tuple[PayoutWorld, dict, bytes]:
    """An accounting batch over everything allocated so far and a statement index over it, frozen and anchored;
    ``forge`` changes the statements before they are frozen, as an owner that lied about them would."""
    payouts = PayoutWorld(ledger.world)
    accounting, index_id = f"allocation-batch-{number}", f"statement-index-{number}"
    payouts.anchor(accounting, payouts.batch(accounting, "allocation"))
    prepared = {"action": "prepare", "kind": "statement_index", "window_start_ms": 0, "window_end_ms": 10}
    assert payouts.submit("FreezeArtifact", {"batch_id": index_id, "step": prepared}, actor=FINANCE).accepted
    step, artifact = ledger.owner.read(lambda view: prepare_statement_index(
        view, index_id, accounting, f"{index_id}-anchor", read_evidence=ledger.evidence.get))
    if forge is not None:
        step, artifact = forged_index(step, artifact, forge)
    ledger.evidence.put(artifact)
    outcome = payouts.submit("FreezeArtifact", {"batch_id": index_id, "step": step}, actor=FINANCE,
                             evidence=[step["artifact_hash"]])
    assert outcome.accepted, outcome.result
    anchor_root(payouts, step, index_id)
    return payouts, step, artifact


def forged_index(step: dict, artifact: bytes, forge: Callable[[list[dict]], None]) -> tuple[dict, bytes]:
    """The index with its statements changed by ``forge`` and every hash made again: whole by every hash."""
    index = orjson.loads(artifact)
    statements = copy.deepcopy(index["statements"])
    forge(statements)
    tree = StatementTree.build(statements)
    leaves = {s["public_proof_id"]: s for s in statements}
    listed = [{**listed, "leaf_hash": statement_leaf_hash(leaves[listed["public_proof_id"]]).hex(),
               "artifact_hash": hashlib.sha256(canonical_bytes(leaves[listed["public_proof_id"]])).hexdigest()}
              for listed in step["statements"]]
    raw = index_artifact(index["index_batch_id"], index["accounting_batch_id"], tree)
    return {**step, "statements": listed, "statement_root": tree.root,
            "artifact_hash": hashlib.sha256(raw).hexdigest()}, raw


def files_of(ledger: Ledger, statement_id: str) -> tuple[bytes, dict[str, bytes]]:
    """A recipient's signed statement file, and the parts file of each of its day lines by line ID."""
    def read(view):
        document = statement_file(view, ledger.evidence.get, statement_id, CHAIN)
        line_ids = [line["line_id"] for line in document["statement"]["lines"] if "parts" in line]
        return document, {line_id: encode_document(parts_file(view, ledger.evidence.get, statement_id, line_id))
                          for line_id in line_ids}

    document, parts = ledger.owner.read(read)
    return statement_file_bytes(sign_statement_file(document, checkpoint_keys.signer())), parts


def statement_ids(ledger: Ledger, index_id: str = "statement-index-9") -> dict[str, str]:
    found = ledger.owner.read(lambda view: statements_of_index(view, index_id))
    return {statement["recipient_id"]: statement["statement_id"] for statement in found}


def test_every_recipients_statement_and_parts_files_of_a_frozen_day_verify_together(town):
    _, step, _ = index_statements(town)
    by_recipient: dict[str, list[dict]] = defaultdict(list)
    for line in day_lines(town):
        by_recipient[line["recipient_id"]].append(line)
    ids = statement_ids(town)
    assert set(by_recipient) - {None} == set(ids)
    for recipient, statement_id in ids.items():
        raw, parts = files_of(town, statement_id)
        assert sorted(parts) == sorted(line["line_id"] for line in by_recipient[recipient])
        verdict = check_statement_file(raw, PINNED, list(parts.values()))
        assert (verdict["verdict"], verdict["batch_root"]) == ("verified", step["statement_root"]), verdict
        assert {line["result"] for line in verdict["day_lines"]} == {"passed"}
        assert check_statement_file(raw, PINNED)["verdict"] == "verified"  # no parts files: verified, unlinked


def test_a_parts_file_changed_in_any_way_is_refused_by_the_recipients_check(town):
    index_statements(town)
    statement_id = statement_ids(town)["artist-a"]
    raw, parts = files_of(town, statement_id)
    first, second = (orjson.loads(parts[line_id]) for line_id in sorted(parts)[:2])

    def changed(document: dict, change: Callable[[dict], None]) -> bytes:
        document = copy.deepcopy(document)
        change(document)
        return encode_document(document)

    def one_more(document: dict) -> None:
        document["parts"][0]["lines"][0]["amount"] = str(int(document["parts"][0]["lines"][0]["amount"]) + 1)

    def dropped(document: dict) -> None:
        document["parts"].pop()
        document["count"] -= 1

    def lines_swapped(document: dict) -> None:
        parts = document["parts"]
        other = next(part for part in parts[1:] if part["lines"] != parts[0]["lines"])
        parts[0]["lines"], other["lines"] = other["lines"], parts[0]["lines"]

    forgeries = {
        "PARTS_SUM_MISMATCH": changed(first, one_more),
        "PARTS_COUNT_MISMATCH": changed(first, dropped),
        "PARTS_DAY_LINE_MISMATCH": changed(first, lambda d: d["day_line"].update(line_id=second["day_line"]["line_id"])),
        "PARTS_DIGEST_MISMATCH": changed(first, lines_swapped),
    }
    for reason, forged in forgeries.items():
        verdict = check_statement_file(raw, PINNED, [forged])
        assert (verdict["verdict"], verdict["reason"]) == ("failed", reason), verdict
    assert check_statement_file(raw, PINNED, [parts[sorted(parts)[0]]])["verdict"] == "verified"


def test_a_remainder_day_line_is_made_of_its_chunks_parts_less_the_listener_days_corrected(town):
    """Two listener-days of the first chunk corrected one after the other: each recipient's day line is reversed and
    a remainder written, then that remainder reversed and another written. Each line's parts leave out exactly the
    listener-days corrected before it, and every statement still verifies with all its parts files."""
    content = town.evidence.get(chunk_hash(town, 0))
    for correction_id, listener_id in (("fix-1", "listener-0005"), ("fix-2", "listener-0012")):
        correct(town, correction_id, content, listener_id)
    taken = {None: set(), "fix-1": {5}, "fix-2": {5, 12}}  # a recipient not in the first is not in its parts anyway
    chained = 0
    for line, document in documents(town, [line for line in day_lines(town) if line["artifact"]["chunk"] == 0]):
        assert {part["position"] for part in document["parts"]} == \
            positions_in(content, line["role"], line["recipient_id"]) - taken[line["correction_id"]]
        assert parts_total(document["parts"]) == int(line["amount"])
        chained += line["correction_id"] == "fix-2" and town.world.state(
            f"allocation_line/{line['replaces'][0]}")["correction_id"] == "fix-1"
    assert chained > 0, "some recipient was in both listener-days: its second remainder follows its first"
    index_statements(town)
    for recipient, statement_id in statement_ids(town).items():
        raw, parts = files_of(town, statement_id)
        verdict = check_statement_file(raw, PINNED, list(parts.values()))
        assert verdict["verdict"] == "verified" and {line["result"] for line in verdict["day_lines"]} == {"passed"}


def positions_in(content: bytes, role: str, recipient_id: str | None) -> set[int]:
    """The chunk's listener-days paying (role, recipient) anything, read straight from its bytes."""
    return {position for position, raw in enumerate(content.splitlines())
            if any((line["role"], line["recipient_id"]) == (role, recipient_id) for line in orjson.loads(raw)["lines"])}


def chunk_hash(ledger: Ledger, chunk: int) -> str:
    return next(line["artifact"]["hash"] for line in day_lines(ledger) if line["artifact"]["chunk"] == chunk)


def correct(ledger: Ledger, correction_id: str, content: bytes, listener_id: str) -> None:
    """A correction of a frozen listener-day, its slice back to its budget, requested and approved."""
    line = next(orjson.loads(raw) for raw in content.splitlines() if orjson.loads(raw)["listener_id"] == listener_id)
    quoted = {"chunk": 0, "hash": hashlib.sha256(content).hexdigest(), **line}
    requested = ledger.world.submit("RequestCorrection", {
        "correction_id": correction_id, "budget_id": quoted["budget_id"], "reason": "allocation_error",
        "frozen_listener_day": quoted}, actor=FINANCE, evidence=[quoted["hash"]])
    assert requested.accepted, requested.result
    assert ledger.world.decide_correction(correction_id).accepted


# Statements without day lines keep their bytes.

def test_a_statement_without_day_lines_is_the_leaf_it_always_was():
    """The leaf of a statement of ordinary lines, with a fixed proof ID, byte for byte as it was before day lines
    committed to their parts."""
    batch = {"batch_id": "allocation-batch-9", "window_start_ms": 0, "window_end_ms": 10}
    lines = [{"line_id": "line-2", "listener_id": "listener-1", "day": 20_001, "budget_id": "budget-1",
              "role": "artist", "recipient_id": "artist-a", "amount": "600", "status": "paid", "work_id": "work-1",
              "rights_version": 1, "run_id": "run-1"},
             {"line_id": "line-3", "listener_id": "listener-1", "day": 20_001, "budget_id": "budget-1",
              "role": "operator", "recipient_id": "artist-a", "amount": "40", "status": "payable", "node_id": "node-1"}]
    document = statement_document("proof-0123456789abcdef", "artist-a", batch, lines)
    assert canonical_bytes(document) == (
        b'{"lines":[{"amount":"600","day":20001,"line_id":"line-2","role":"artist","status":"paid",'
        b'"work_id":"work-1"},{"amount":"40","day":20001,"line_id":"line-3","node_id":"node-1","role":"operator",'
        b'"status":"payable"}],"payment":{"paid_amount":"600","status":"partly_paid"},"period":{'
        b'"accounting_batch_id":"allocation-batch-9","window_end_ms":10,"window_start_ms":0},'
        b'"public_proof_id":"proof-0123456789abcdef","recipient_id":"artist-a","total":"640"}')
    assert statement_leaf_hash(document).hex() == STATEMENT_LEAF_BEFORE


STATEMENT_LEAF_BEFORE = "92ba4c3a14b98a6fa4c4c62834bb3e1954fda15dc07d7153a244c3a8aa43e6ad"


# The auditor's side: replay and verify hold each commitment to the chunk evidence.

def exported(ledger: Ledger, tmp_path) -> dict:
    return ledger.owner.with_checkpoint(lambda store: export_store(store, tmp_path / "export"))


def test_replay_and_verify_with_the_evidence_accept_an_honest_index(town, tmp_path):
    index_statements(town)
    metadata = exported(town, tmp_path)
    replayed = replay_export(tmp_path / "export", tmp_path / "replayed", evidence=town.evidence)
    assert replayed["logical_state_hash"] == metadata["logical_state_hash"]
    assert verify_export(tmp_path / "export", evidence=town.evidence)["sequence"] == metadata["sequence"]
    assert town.owner.with_checkpoint(lambda store: verify_store(store, town.evidence))["ok"]


def a_day_lines_commitment_swapped_with_another(statements: list[dict]) -> None:
    statement = next(s for s in statements if sum("parts" in line for line in s["lines"]) > 1)
    first, second = [line for line in statement["lines"] if "parts" in line][:2]
    first["parts"], second["parts"] = second["parts"], first["parts"]


def a_day_line_stated_without_its_commitment(statements: list[dict]) -> None:
    line = next(line for s in statements for line in s["lines"] if "parts" in line)
    del line["parts"], line["artifact"]


@pytest.mark.parametrize("forge", [a_day_lines_commitment_swapped_with_another, a_day_line_stated_without_its_commitment])
def test_an_index_whose_day_lines_commit_to_other_parts_is_refused_where_its_artifact_is_held(town, tmp_path, forge):
    """The owner lied about a day line's parts: the rule cannot tell (it sees leaf hashes), and the history is whole
    by every hash. With the evidence store, replay and verify recompute the parts and refuse the index's entry."""
    index_statements(town, forge=forge)
    exported(town, tmp_path)
    entry = freeze_entry(tmp_path, "statement-index-9")

    for check in (lambda: replay_export(tmp_path / "export", tmp_path / "replayed", evidence=town.evidence),
                  lambda: verify_export(tmp_path / "export", evidence=town.evidence),
                  lambda: town.owner.with_checkpoint(lambda store: verify_store(store, town.evidence))):
        with pytest.raises(VerificationError) as refused:
            check()
        assert (refused.value.code, refused.value.item) == ("CONFLICTING_EVIDENCE", f"journal.jsonl:{entry}")
        assert "statement index refused" in refused.value.reason
    assert not (tmp_path / "replayed").exists()
    assert verify_export(tmp_path / "export")["sequence"]  # without the artifact, nothing to hold it to
    run = cli.porto_ledger("verify-export", tmp_path / "export", "--admission", town.directory / "admission")
    assert (run.status, run.last["code"], run.last["item"]) == (1, "CONFLICTING_EVIDENCE", f"journal.jsonl:{entry}")
    assert cli.porto_ledger("verify-export", tmp_path / "export").status == 0


def freeze_entry(tmp_path, index_id: str) -> int:
    """The journal line of the index's freeze step."""
    for number, raw in enumerate((tmp_path / "export" / "journal.jsonl").read_bytes().splitlines(), start=1):
        envelope = orjson.loads(raw)["envelope"]
        step = envelope["payload"].get("step", {}) if envelope["command_type"] == "FreezeArtifact" else {}
        if envelope["payload"].get("batch_id") == index_id and step.get("action") == "freeze":
            return number
    raise AssertionError(f"no freeze of {index_id}")

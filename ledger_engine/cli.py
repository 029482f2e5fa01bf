"""``porto-ledger``: drive the engine without Django. Verbs and JSON output are a public interface.

Exit status: 0 success, 1 a verification failed, 2 bad input, 3 the ledger is owned or halted,
4 the ledger's storage is missing, incomplete or damaged (nothing in it was changed), or (recover) no
good backup could be read, 5 (verify-statement) no check failed but one that "verified" needs could not
be made (no signed checkpoint, no ``--verifier-key``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import shutil
import sys
import queue
import re
import threading
import time
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import Any, BinaryIO, Callable, TextIO

import orjson

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.application.envelopes import build_envelope
from ledger_engine.application import day_freeze, journal_tree
from ledger_engine.application.owner import (
    LedgerOwner, check_for_owning, initialise, promote, read_genesis, read_reconciliation_owed,
)
from ledger_engine.open_json import Document, Report
from ledger_engine.storage.head import read_head
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.canonical import parse_json
from ledger_engine.checkpoint import offsite
from ledger_engine.checkpoint.backup import backup, restore
from ledger_engine.checkpoint.offsite import ResticRepository
from ledger_engine.storage.digest import logical_state_hash
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.form import METADATA_FILE, VerificationError
from ledger_engine.checkpoint.integrity import verify_directory
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.checkpoint.verify import verify_export
from ledger_engine.demo import demo_envelopes, demo_genesis
from ledger_engine.demo.load import DEMO_SEED, load_demo
from ledger_engine.environment import EnvironmentRefused, read_engine_environment
from ledger_engine.errors import STORAGE_CODES, ErrorCode, LedgerError, StorageFault
from ledger_engine.genesis import GENESIS_HASH_PATTERN, default_genesis, genesis_hash, validate_genesis
from ledger_engine.merkle import verify_proof_document
from ledger_engine.merkle.checkpoint import VerifierKey
from ledger_engine.merkle.statement import NOT_VERIFIED, REFUSED, check_statement_file
from ledger_engine.merkle.document import encode_document
from ledger_engine.projections.rebuild import rebuild_indexes
from ledger_engine.storage.rocks import RocksStore

SUBMIT_WINDOW = 256
# One submitted line: its command ID, and the future of its outcome or the refusal it already got.
Submitted = tuple[str | None, "Future[CommandOutcome] | Report"]


def emit(value: Any, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout  # looked up at each call: whoever runs ``main`` may have redirected it
    stream.write(orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode() + "\n")
    stream.flush()


def _require_data(args: argparse.Namespace) -> Path:
    if args.data is None:
        raise LedgerError(ErrorCode.MALFORMED_ENVELOPE, f"{args.verb} needs --data DIR")
    return Path(args.data)


def _trusted_genesis(args: argparse.Namespace) -> str | None:
    """``--genesis-hash``, else ``PORTO_GENESIS_HASH``: the genesis this deployment trusts, or None."""
    trusted: str | None = args.genesis_hash
    if trusted is None:
        return read_engine_environment().genesis_hash
    if not re.fullmatch(GENESIS_HASH_PATTERN, trusted):
        raise LedgerError(ErrorCode.MALFORMED_ENVELOPE, "--genesis-hash must be 64 lowercase hex digits, as init "
                                                        "and head print it")
    return trusted


def cmd_init(args: argparse.Namespace) -> None:
    if args.demo:
        return _init_demo(args)
    genesis = parse_json(Path(args.genesis).read_bytes()) if args.genesis else default_genesis()
    validate_genesis(genesis)  # before the data directory is made: a refused genesis leaves nothing behind
    with RocksStore(_require_data(args), create=True) as store:
        head = initialise(store, genesis)
    emit({**head.as_json(), "genesis_hash": genesis_hash(genesis)})


def _init_demo(args: argparse.Namespace) -> None:
    """The labelled demo's ledger in an absent or empty directory, as ``make run`` makes it: its genesis, its scenario
    for ``--seed``, with the evidence bytes in the admission directory's evidence store."""
    data = _require_data(args)
    if args.genesis:
        raise LedgerError(ErrorCode.MALFORMED_ENVELOPE, "init --demo makes the demo's own genesis; drop --genesis")
    if data.exists() and any(data.iterdir()):
        raise LedgerError(ErrorCode.ALREADY_EXISTS, f"init --demo needs an absent or empty directory; {data} is not")
    with LedgerOwner.open(data, genesis=demo_genesis()) as owner:
        loaded = load_demo(owner, _admission_evidence(args, data), args.seed)
        head = owner.head()
    emit({**head.as_json(), "genesis_hash": genesis_hash(demo_genesis()), "demo_commands": loaded, "seed": args.seed})


def _admission_evidence(args: argparse.Namespace, data: Path | None) -> EvidenceStore:
    """The evidence store of ``--admission``, by default of ``admission`` beside the data directory, where the
    console's gateway keeps it."""
    if args.admission:
        return EvidenceStore(Path(args.admission) / "evidence")
    assert data is not None, "without --admission, the data directory names the admission directory"
    return EvidenceStore(data.parent / "admission" / "evidence")


def _evidence(args: argparse.Namespace, data: Path | None = None) -> EvidenceStore | None:
    """What verify and replay hold frozen chunks and statement indexes to: the evidence store of ``--admission``,
    else, given the ledger's ``data`` directory, the one beside it when there is one."""
    beside = data.parent / "admission" / "evidence" if data is not None else None
    if args.admission is None and (beside is None or not beside.is_dir()):
        return None
    return _admission_evidence(args, data)


def cmd_submit(args: argparse.Namespace) -> None:
    """One envelope a line in, one outcome a line out, in order, each as soon as it is durable.

    Up to a window of lines is in flight at once, so they can share fsyncs; a
    writer thread prints answers in input order without waiting for more input.
    """
    answers: queue.Queue[Submitted | None] = queue.Queue(maxsize=SUBMIT_WINDOW)
    failure: list[BaseException] = []
    with _input(args.file) as source, LedgerOwner.open(_require_data(args)) as owner:
        writer = threading.Thread(target=_write_answers, args=(answers, failure), daemon=True)
        writer.start()
        for line in source:
            if failure:
                break
            if line.strip():
                answers.put(_submit_line(owner, line))
        answers.put(None)
        writer.join()
    if failure:
        raise failure[0]


def _input(file: str) -> contextlib.AbstractContextManager[BinaryIO]:
    """The lines to submit: standard input for ``-``, left open when done, or the named file."""
    return contextlib.nullcontext(sys.stdin.buffer) if file == "-" else open(file, "rb")


def _write_answers(answers: queue.Queue[Submitted | None], failure: list[BaseException]) -> None:
    while (pending := answers.get()) is not None:
        try:
            emit(_answer(pending))
        except BaseException as error:  # halted ledger: stop reading input, report once
            failure.append(error)
            while answers.get() is not None:
                pass
            return


def _submit_line(owner: LedgerOwner, line: bytes) -> Submitted:
    """Submit one line: its command ID and a future, or the refusal it already got. Never raises:
    whatever a line holds, it gets an answer and the lines after it are still read."""
    document, parsed = None, False
    try:
        document = parse_json(line)
        parsed = True
        return _command_id(document), owner.submit_async(document)
    except LedgerError as error:
        if error.code == ErrorCode.LEDGER_HALTED:
            return _command_id(document), _failed(error)
        if not parsed:  # refused at the text boundary, before the owner saw it
            owner.security_log.record("refused_before_admission", str(error.code), error.detail, source="submit")
        return _command_id(document), {"outcome": "refused", **error.as_dict()}
    except Exception as error:  # a bug must cost one line an answer, never the batch
        owner.security_log.record("refused_before_admission", str(ErrorCode.MALFORMED_ENVELOPE),
                                  type(error).__name__, source="submit")
        return _command_id(document), {"outcome": "refused", "code": str(ErrorCode.MALFORMED_ENVELOPE),
                                       "detail": f"envelope could not be read ({type(error).__name__})"}


def _failed(error: LedgerError) -> Future[CommandOutcome]:
    future: Future[CommandOutcome] = Future()
    future.set_exception(error)
    return future


def _command_id(document: Any) -> str | None:
    value = document.get("command_id") if isinstance(document, dict) else None
    return value if isinstance(value, str) else None


def _answer(pending: Submitted) -> Report:
    command_id, answer = pending
    if isinstance(answer, dict):
        return {"command_id": command_id, **answer}
    try:
        return answer.result().as_json()
    except LedgerError as error:
        if error.code == ErrorCode.LEDGER_HALTED or isinstance(error, StorageFault):
            raise
        return {"command_id": command_id, "outcome": "refused", **error.as_dict()}


def cmd_head(args: argparse.Namespace) -> None:
    with RocksStore(_require_data(args), read_only=True, stopped=True) as store:
        emit({**read_head(store).as_json(), "logical_state_hash": logical_state_hash(store),
              "genesis_hash": genesis_hash(read_genesis(store))})


def cmd_export(args: argparse.Namespace) -> None:
    """Like the console's exports, journalled first: the files appear in OUTDIR only once the ledger recorded
    ``--actor``'s access to them (RecordExportAccess), and the export holds the ledger as it was before that."""
    with LedgerOwner.open(_require_data(args)) as owner:
        if args.actor is None:
            raise LedgerError(ErrorCode.MALFORMED_ENVELOPE, "export needs --actor ID, an auditor: the ledger records it")
        outdir = Path(args.outdir)
        if outdir.exists() and any(outdir.iterdir()):
            raise FileExistsError(f"export destination {outdir} is not empty")
        staging = outdir.with_name(f".{outdir.name}.unrecorded")
        shutil.rmtree(staging, ignore_errors=True)  # an earlier export that was never recorded nor handed out
        metadata = owner.with_checkpoint(lambda store: export_store(store, staging))
        digest = hashlib.sha256((staging / METADATA_FILE).read_bytes()).hexdigest()
        outcome = owner.submit(build_envelope("RecordExportAccess", {
            "export_id": str(uuid.uuid4()), "file_format": "checkpoint", "first_sequence": 1,
            "last_sequence": metadata["sequence"], "content_sha256": digest},
            command_id=str(uuid.uuid4()), actor_id=args.actor, admitted_at_ms=max(time.time_ns() // 1_000_000, owner.admission_floor_ms())))
        if not outcome.accepted:
            shutil.rmtree(staging)
            raise LedgerError(ErrorCode(outcome.code), f"the export was not recorded: {outcome.result['detail']}")
        staging.rename(outdir)
        emit(metadata)



def cmd_allocate_day(args: argparse.Namespace) -> None:
    """``AllocateDay`` as ``--actor`` (finance) for ``--day`` to ``--last-day``, then, in this process's owner, every
    unfinished request and this one run to the end: one JSON line per progress recorded, then the request's record.
    Chunks' bytes go to the evidence store of ``--admission`` (default: ``admission`` beside the data directory)."""
    data = _require_data(args)
    evidence = _admission_evidence(args, data)
    with LedgerOwner.open(data) as owner:
        request_id = args.request_id or str(uuid.uuid4())
        last_day = args.day if args.last_day is None else args.last_day
        outcome = owner.submit(build_envelope("AllocateDay", {
            "request_id": request_id, "first_day": args.day, "last_day": last_day},
            command_id=str(uuid.uuid4()), actor_id=args.actor,
            admitted_at_ms=max(time.time_ns() // 1_000_000, owner.admission_floor_ms())))
        if not outcome.accepted:
            raise LedgerError(ErrorCode(outcome.code), f"the day allocation was not requested: {outcome.result['detail']}")
        earlier = [unfinished for unfinished in day_freeze.unfinished_requests(owner) if unfinished != request_id]
        results = day_freeze.run_requests(owner, evidence, [*earlier, request_id], workers=args.workers,
                                          on_progress=lambda progress: emit({"progress": progress}))
    emit({"ok": True, "request": results[-1]})


def cmd_verify(args: argparse.Namespace) -> None:
    """Every column family read with checksums, the journal chain, every delta and the state digest; with the
    evidence of ``--admission``, or else of the ``admission`` directory beside the ledger when there is one (where
    the gateway and ``allocate-day`` keep it), the frozen chunks and statement indexes too."""
    data = _require_data(args)
    emit(verify_directory(data, trusted_genesis=_trusted_genesis(args), evidence=_evidence(args, data)))


def cmd_verify_export(args: argparse.Namespace) -> None:
    metadata = verify_export(args.outdir, trusted_genesis=_trusted_genesis(args), evidence=_evidence(args))
    emit({"ok": True, "sequence": metadata["sequence"], "last_entry_hash": metadata["last_entry_hash"],
          "logical_state_hash": metadata["logical_state_hash"], "genesis_hash": metadata["genesis_hash"]})


def cmd_replay(args: argparse.Namespace) -> None:
    emit({"ok": True, **replay_export(args.outdir, _require_data(args), checkpoint_dir=args.from_checkpoint,
                                      trusted_genesis=_trusted_genesis(args), evidence=_evidence(args))})


def cmd_backup(args: argparse.Namespace) -> None:
    data = _require_data(args)
    with RocksStore(data) as store:
        manifest = backup(store.checkpoint, data, args.dest)
    emit({"ok": True, **{k: manifest[k] for k in ("sequence", "entry_hash", "logical_state_hash")}})


def cmd_restore(args: argparse.Namespace) -> None:
    emit({"ok": True, **restore(args.src, _require_data(args), trusted_genesis=_trusted_genesis(args))})


def cmd_recover(args: argparse.Namespace) -> None:
    """Restore the newest good backup and its admission stores into empty directories; dispatch stays paused.

    This is the ledger's half of recovery; ``manage.py recover`` runs it, then reconciles against the
    chain and the signed-payment journal with the console up, and prints the whole report."""
    if (args.repository is None) == (args.backup_dir is None):
        raise LedgerError(ErrorCode.MALFORMED_ENVELOPE, "recover needs exactly one of --repository or --backup-dir")
    repository = None
    if args.repository is not None:
        password = _restic_password(args.password_file)
        if not password:
            raise LedgerError(ErrorCode.MALFORMED_ENVELOPE,
                              "recover --repository needs --password-file, RESTIC_PASSWORD or RESTIC_PASSWORD_FILE")
        repository = ResticRepository(args.repository, password, sftp_command=args.sftp_command)
    data = _require_data(args)
    restored = offsite.recover(data, args.admission, repository=repository, backup_dir=args.backup_dir,
                               trusted_genesis=_trusted_genesis(args))
    emit({"ok": True, **offsite.recovery_report(restored, data, last_known_sequence=args.last_sequence,
                                               now_ms=time.time_ns() // 1_000_000)})


def _restic_password(password_file: str | None) -> str | None:
    """``--password-file``, else ``RESTIC_PASSWORD`` or the file ``RESTIC_PASSWORD_FILE`` names (never both)."""
    if password_file:
        return Path(password_file).read_text().strip()
    return read_engine_environment().restic_password.value()


def cmd_rebuild_indexes(args: argparse.Namespace) -> None:
    with RocksStore(_require_data(args)) as store:
        emit(rebuild_indexes(store))


def cmd_promote(args: argparse.Namespace) -> None:
    """Promote a stopped, restored ledger once reconcile has exited 0: the writer generation rises and the
    reconciliation it owed is lifted. Pausing and resuming dispatch are not this verb's: they are journalled
    commands a person submits on the console with their authenticator (docs/adr/0091)."""
    with RocksStore(_require_data(args), check=check_for_owning) as store:
        owed = read_reconciliation_owed(store)
        generation = promote(store, args.reason)
    emit({"ok": True, "writer_generation": generation, "reconciliation_owed_lifted": owed is not None})


def cmd_verify_proof(args: argparse.Namespace) -> None:
    """Check a journal inclusion or consistency proof document; no ledger needed."""
    emit(verify_proof_document(Path(args.file).read_bytes()))


def cmd_verify_statement(args: argparse.Namespace) -> int:
    """Check a recipient's statement file and its checkpoint against the pinned key, and each parts file given
    against the day line it names; no ledger needed."""
    key = None if args.verifier_key is None else VerifierKey.parse(args.verifier_key)
    verdict = check_statement_file(Path(args.file).read_bytes(), key, [Path(name).read_bytes() for name in args.parts])
    emit(verdict)
    return {REFUSED: 1, NOT_VERIFIED: 5}.get(verdict["verdict"], 0)


def cmd_prove_inclusion(args: argparse.Namespace) -> None:
    """Entry SEQUENCE is in the journal tree of N entries (default: all): a document verify-proof checks."""
    with RocksStore(_require_data(args), read_only=True, stopped=True) as store:
        document = journal_tree.prove_inclusion(store, read_head(store), args.sequence, args.at)
    _emit_document(document)


def cmd_prove_consistency(args: argparse.Namespace) -> None:
    """The journal tree of M entries is a prefix of the one of N: a document verify-proof checks."""
    with RocksStore(_require_data(args), read_only=True, stopped=True) as store:
        document = journal_tree.prove_consistency(store, read_head(store), args.first, args.second)
    _emit_document(document)


def _emit_document(document: Document) -> None:
    """A proof document in its canonical bytes, so the printed file is exactly what verify-proof reads."""
    sys.stdout.buffer.write(encode_document(document))
    sys.stdout.flush()


def cmd_demo_envelopes(args: argparse.Namespace) -> None:
    for envelope in demo_envelopes(args.seed, listeners=args.listeners, days=args.days):
        sys.stdout.write(orjson.dumps(envelope, option=orjson.OPT_SORT_KEYS).decode() + "\n")
    sys.stdout.flush()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="porto-ledger", description=__doc__)
    parser.add_argument("--data", help="ledger data directory")
    parser.add_argument("--genesis-hash",
                        help="the genesis hash this deployment trusts (default PORTO_GENESIS_HASH): verify, "
                             "verify-export, replay, restore and recover refuse history from any other genesis")
    verbs = parser.add_subparsers(dest="verb", required=True)

    def verb(name: str, handler: Callable[[argparse.Namespace], int | None],
             help_text: str) -> argparse.ArgumentParser:
        sub = verbs.add_parser(name, help=help_text)
        sub.add_argument("--data", default=argparse.SUPPRESS, help="ledger data directory")
        sub.add_argument("--genesis-hash", default=argparse.SUPPRESS, help="the genesis hash this deployment trusts")
        sub.set_defaults(handler=handler)
        return sub

    init = verb("init", cmd_init, "initialise an empty ledger from genesis, or (--demo) the labelled demo's ledger")
    init.add_argument("--genesis")
    init.add_argument("--demo", action="store_true", help="the demo's genesis with its scenario journalled, as make "
                                                         "run loads it")
    init.add_argument("--seed", type=int, default=DEMO_SEED, help=f"the demo scenario's seed (default {DEMO_SEED})")
    init.add_argument("--admission", help="the admission directory whose evidence store takes the demo's evidence "
                                          "(default: admission beside the data directory)")
    verb("submit", cmd_submit, "submit envelopes, one JSON object a line").add_argument("file")
    verb("head", cmd_head, "print sequence, entry hash and logical state hash")
    export = verb("export", cmd_export, "write a portable checkpoint, recorded as an auditor's export access")
    export.add_argument("outdir")
    export.add_argument("--actor", help="the auditor exporting; the ledger records the access first")
    allocation = verb("allocate-day", cmd_allocate_day, "request a day's allocation (or a range's) as finance and "
                                                        "freeze it here, continuing unfinished requests first")
    allocation.add_argument("--actor", required=True, help="the finance actor requesting it")
    allocation.add_argument("--day", type=int, required=True, help="the first UTC day number")
    allocation.add_argument("--last-day", type=int, help="the last UTC day number (default: --day)")
    allocation.add_argument("--request-id", help="the request's ID (default: a new UUID)")
    allocation.add_argument("--admission", help="the admission directory whose evidence store takes the chunks")
    allocation.add_argument("--workers", type=int, help="processes splitting each day (default: one per core)")
    stopped = verb("verify", cmd_verify, "verify a stopped ledger: every block, the chain, the deltas, the digest")
    portable = verb("verify-export", cmd_verify_export, "verify a portable checkpoint")
    portable.add_argument("outdir")
    replay = verb("replay", cmd_replay, "rebuild a ledger from an export, verifying every hash")
    replay.add_argument("outdir")
    replay.add_argument("--from-checkpoint", help="an earlier verified export of the same ledger to start from")
    for audited in (stopped, portable, replay):
        audited.add_argument("--admission", help="an admission directory: its evidence store's frozen chunks must "
                                                 "hash to theirs, and its statement indexes commit to their day "
                                                 "lines' parts (verify: the one beside the ledger by default)")
    verb("backup", cmd_backup, "verified backup outside the data directory").add_argument("dest")
    verb("restore", cmd_restore, "restore a verified backup; dispatch stays disabled").add_argument("src")
    recover = verb("recover", cmd_recover, "restore the newest good backup and its evidence; dispatch stays paused")
    recover.add_argument("--admission", required=True, help="the admission directory to restore (absent or empty)")
    recover.add_argument("--repository", help="restic repository: a path or sftp:user@host:/path")
    recover.add_argument("--password-file", help="the repository password (else RESTIC_PASSWORD)")
    recover.add_argument("--sftp-command", help="restic's sftp.command, e.g. 'ssh -F CONFIG host -s sftp'")
    recover.add_argument("--backup-dir", help="instead of a repository: a directory of staged backups")
    recover.add_argument("--last-sequence", type=int, help="the last head known before the loss, to count what was lost")
    verb("rebuild-indexes", cmd_rebuild_indexes, "rebuild the indexes from logical state")
    promotion = verb("promote", cmd_promote, "after a restore and a clean reconcile: lift the reconciliation owed "
                                            "and raise the writer generation (dispatch itself is the console's)")
    promotion.add_argument("--reason", required=True)
    verb("verify-proof", cmd_verify_proof, "check a journal proof document, no ledger needed").add_argument("file")
    statement = verb("verify-statement", cmd_verify_statement, "check a statement file, no ledger needed")
    statement.add_argument("file")
    statement.add_argument("--verifier-key", help="Porto's published checkpoint verifier key (name+hash+key); "
                                                  "without it the file is at best not verified")
    statement.add_argument("--parts", nargs="+", default=[], metavar="PARTS_FILE",
                           help="parts files of the statement's day lines, each checked against the day line it names")
    inclusion = verb("prove-inclusion", cmd_prove_inclusion, "print an inclusion proof of one journal entry")
    inclusion.add_argument("sequence", type=int)
    inclusion.add_argument("--at", type=int, help="the tree size to prove against (default: the head)")
    consistency = verb("prove-consistency", cmd_prove_consistency, "print a consistency proof between two sizes")
    consistency.add_argument("first", type=int, metavar="M")
    consistency.add_argument("second", type=int, metavar="N")
    demo = verb("demo-envelopes", cmd_demo_envelopes, "print the deterministic demo scenario")
    demo.add_argument("--seed", type=int, required=True)
    demo.add_argument("--listeners", type=int, default=20)
    demo.add_argument("--days", type=int, default=3)
    return parser


EXIT_CODES = {ErrorCode.VERIFICATION_FAILED: 1, ErrorCode.LEDGER_ALREADY_OWNED: 3, ErrorCode.LEDGER_HALTED: 3,
              **{code: 4 for code in STORAGE_CODES},
              ErrorCode.NO_GOOD_BACKUP: 4, ErrorCode.BACKUP_REPOSITORY_FAILED: 4}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        status = args.handler(args)
    except VerificationError as error:
        emit({"ok": False, "code": str(error.code), "item": error.item, "reason": error.reason})
        return 1
    except EnvironmentRefused as refused:
        return _report_failure(args, LedgerError(ErrorCode.MALFORMED_ENVELOPE, str(refused)))
    except LedgerError as error:
        return _report_failure(args, error)
    except (OSError, FileExistsError) as error:
        emit({"ok": False, "code": "IO_ERROR", "detail": str(error)})
        return 2
    return status or 0


def _report_failure(args: argparse.Namespace, error: LedgerError) -> int:
    emit({"ok": False, **error.as_dict()})
    if args.verb == "verify":
        return 1  # verify answers "is this ledger good": any reason it is not is a failed verification
    return EXIT_CODES.get(error.code, 2)


if __name__ == "__main__":
    sys.exit(main())

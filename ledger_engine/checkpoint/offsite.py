"""Backups that count: the ledger's backup and the admission stores it references, encrypted off the host by restic.

A backup is staged in a directory outside the data directory:

    ledger/          the verified checkpoint and export (``backup.backup``)
    admission/       a copy of the gateway's evidence and envelope stores
    ADMISSION.json   every admission file's hash, and the evidence the journal names

The admission copy is taken after the checkpoint. The gateway stores evidence
and envelopes before it submits the command that names them, so everything
the checkpoint references is already there; the copy may also hold a few
files for commands after it, which are harmless. The staged directory is
verified, uploaded with ``restic backup`` (encrypted with the repository's
password), and counts only once ``restic check`` passes on the repository and
the new snapshot, restored into scratch with ``restic restore --verify``
(every pack of it read back and authenticated), verifies as a staged backup
again. Only then is it tagged ``porto-verified``; a snapshot without that tag
is never restored.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import orjson

from ledger_engine.adapters.files import read_regular_file, replace_durably
from ledger_engine.open_json import Document, JsonObject, Report
from ledger_engine.storage.value_codec import decode_record
from ledger_engine.canonical import canonical_bytes
from ledger_engine.checkpoint.backup import MANIFEST, backup, restorer, verify_backup
from ledger_engine.checkpoint.publish import publish, require_absent_or_empty, staged_beside
from ledger_engine.checkpoint.form import JOURNAL_FILE, VerificationError
from ledger_engine.checkpoint.verify import hash_tree, require_fields
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.domain.commands.money.payments import IN_FLIGHT as PAYMENTS_IN_FLIGHT
from ledger_engine.layout import JOURNAL, STATE
from ledger_engine.storage.rocks import RocksStore

LEDGER = "ledger"
ADMISSION = "admission"
ADMISSION_MANIFEST = "ADMISSION.json"
EVIDENCE = "evidence"
BACKUP_TAG = "porto-backup"
VERIFIED_TAG = "porto-verified"
SEQUENCE_TAG = "sequence-"
CREATED_TAG = "created-ms-"
RESTIC_TIMEOUT_SECS = 600
RECOVERY_TARGET = "recovery needs an absent or empty directory"
FUTURE_SKEW_MS = 60_000  # how far ahead of this host's clock a snapshot may be dated and still count
# The password of a URL's user part (rest:https://user:password@host/): never in a log line or an error.
_URL_PASSWORD = re.compile(r"(?<=://)([^/@:]*):[^/@]*@")


class RepositoryFailed(LedgerError):
    def __init__(self, detail: str) -> None:
        super().__init__(ErrorCode.BACKUP_REPOSITORY_FAILED, detail)


# Staging and verifying a backup directory.

def stage_backup(take_checkpoint: Callable[[Path], None], data_dir: Path, admission_dir: Path,
                 stage: Path) -> Report:
    """A verified staged backup in the empty or absent ``stage``; returns its summary (``verify_staged``).

    ``backup`` has verified the ledger part before writing its manifest; the admission part is verified here.
    """
    manifest = backup(take_checkpoint, data_dir, stage / LEDGER)
    files = _copy_tree(admission_dir, stage / ADMISSION)
    referenced = referenced_evidence(stage / LEDGER / "export")
    present = {name.rsplit("/", 1)[-1] for name in files if name.startswith(f"{EVIDENCE}/")}
    replace_durably(stage / ADMISSION_MANIFEST, canonical_bytes({
        "files": files, "evidence_referenced": len(referenced),
        "evidence_missing": sorted(referenced - present)}) + b"\n")
    return _summary(manifest, _verify_admission(stage))


def verify_staged(stage: str | os.PathLike[str], *, trusted_genesis: str | None = None) -> Report:
    """The ledger backup verifies, every admission file matches its hash, and evidence files match their names."""
    stage = Path(stage)
    return _summary(verify_backup(stage / LEDGER, trusted_genesis=trusted_genesis), _verify_admission(stage))


def _verify_admission(stage: Path) -> Report:
    """Every admission file matches its hash in the admission manifest, and evidence files match their names."""
    admission = _admission_manifest(stage)
    actual = hash_tree(stage / ADMISSION)
    _require_admission_files(actual, admission)
    return {"admission_files": len(actual), "evidence_referenced": admission["evidence_referenced"],
            "evidence_missing": admission["evidence_missing"]}


def _admission_manifest(stage: Path) -> Document:
    try:
        manifest = orjson.loads(read_regular_file(stage / ADMISSION_MANIFEST))
    except (OSError, orjson.JSONDecodeError):
        raise VerificationError(ADMISSION_MANIFEST, "missing or unreadable: not a completed backup") from None
    return require_fields(manifest, ADMISSION_MANIFEST,
                          {"files": dict, "evidence_referenced": int, "evidence_missing": list})


def _require_admission_files(actual: dict[str, Document], admission: Document) -> None:
    for name in sorted(set(actual) | set(admission["files"])):
        if actual.get(name) != admission["files"].get(name):
            raise VerificationError(f"{ADMISSION}/{name}", "admission file missing, unexpected or changed")
    for name, entry in actual.items():
        if name.startswith(f"{EVIDENCE}/") and name.rsplit("/", 1)[-1] != entry["sha256"]:
            raise VerificationError(f"{ADMISSION}/{name}", "evidence does not match its digest")


def _summary(manifest: Document, admission: Report) -> Report:
    return {"sequence": manifest["sequence"], "entry_hash": manifest["entry_hash"],
            "logical_state_hash": manifest["logical_state_hash"], "created_at_ms": manifest["created_at_ms"],
            **admission}


def referenced_evidence(export_dir: Path) -> set[str]:
    """Every evidence digest an envelope in the exported journal names."""
    found: set[str] = set()
    with open(export_dir / JOURNAL_FILE, "rb") as journal:
        for line in journal:
            if line.strip():
                found.update(orjson.loads(line)["envelope"].get("evidence_hashes", ()))
    return found


def _copy_tree(source: Path, destination: Path) -> dict[str, Document]:
    destination.mkdir(parents=True, exist_ok=True)
    if source.exists():
        shutil.copytree(source, destination, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".*"))  # temporaries of writes in progress
    return hash_tree(destination)


# The restic repository.

@dataclass(frozen=True)
class ResticRepository:
    """A restic repository: a local path, or ``sftp:user@host:/path`` reached with ``sftp_command``."""

    location: str
    password: str = field(repr=False)  # tracebacks and test failures print the repr
    sftp_command: str | None = None
    binary: str = "restic"

    @property
    def name(self) -> str:
        """The location as logs and errors show it: a password in its URL masked, as restic masks it."""
        return _URL_PASSWORD.sub(r"\1:***@", self.location)

    def run(self, *arguments: str, lock: bool = True) -> str:
        """restic with this repository; a lock left by a killed restic (on this host) is removed, once.

        ``lock=False`` is for commands that only read: restic takes no lock for them (``--no-lock``), so a
        read neither waits out restic's lock check (about 200 ms a command) nor needs a writable repository.
        The worst a read without a lock meets is a file a concurrent ``prune`` removed: an error, and the
        backup it belonged to does not count.
        """
        try:
            return self._run(*arguments, lock=lock)
        except RepositoryFailed as error:
            if "already locked" not in error.detail:
                raise
            self._run("unlock")  # removes only stale locks: a live restic's lock stays and this fails again
            return self._run(*arguments, lock=lock)

    def _run(self, *arguments: str, lock: bool = True) -> str:
        options = ["-o", f"sftp.command={self.sftp_command}"] if self.sftp_command else []
        if not lock:
            options.append("--no-lock")
        env = {name: value for name, value in os.environ.items() if not name.startswith("RESTIC_")}
        env.update(RESTIC_REPOSITORY=self.location, RESTIC_PASSWORD=self.password)
        try:
            done = subprocess.run([self.binary, "--no-cache", *options, *arguments], env=env,
                                  capture_output=True, text=True, timeout=RESTIC_TIMEOUT_SECS)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise RepositoryFailed(f"restic {arguments[0]}: {error}") from None
        if done.returncode != 0:
            raise RepositoryFailed(f"restic {arguments[0]} exited {done.returncode}: {done.stderr.strip()[-500:]}")
        return done.stdout

    def initialised(self) -> bool:
        try:
            self.run("cat", "config", lock=False)
        except RepositoryFailed as error:
            if "unable to open config file" in error.detail:
                return False
            raise
        return True

    def ensure_initialised(self) -> None:
        if not self.initialised():
            self.run("init")

    def upload(self, stage: Path, tags: list[str]) -> str:
        """``restic backup`` of ``stage``; the new snapshot's ID."""
        tag_options = [option for tag in tags for option in ("--tag", tag)]
        output = self.run("backup", "--json", "--host", "porto-ledger", *tag_options, str(stage))
        for line in output.splitlines():
            message = orjson.loads(line) if line.startswith("{") else {}
            if message.get("message_type") == "summary":
                snapshot_id: str = message["snapshot_id"]
                return snapshot_id
        raise RepositoryFailed("restic backup printed no summary")

    def check(self) -> None:
        self.run("check")

    def snapshots(self, tag: str) -> list[JsonObject]:
        """Snapshots carrying ``tag``, oldest first."""
        return orjson.loads(self.run("snapshots", "--json", "--tag", tag, lock=False) or "[]") or []

    def mark_verified(self, snapshot_id: str) -> None:
        self.run("tag", "--add", VERIFIED_TAG, snapshot_id)

    def restore_snapshot(self, snapshot: JsonObject, scratch: Path) -> Path:
        """Restore ``snapshot`` under ``scratch``, re-reading every restored file; the staged directory's path."""
        self.run("restore", snapshot["id"], "--target", str(scratch), "--verify", lock=False)
        # Resolved after the restore, so neither the listing nor a restored symlink leads out of scratch.
        staged: Path = (scratch / snapshot["paths"][0].lstrip("/")).resolve()
        if not staged.is_relative_to(scratch.resolve()):
            raise VerificationError(snapshot["id"][:8], "the snapshot's path leaves the restore directory")
        return staged


def snapshot_facts(snapshot: JsonObject) -> Report | None:
    """The sequence and creation time a Porto snapshot's tags carry; None when they carry no such pair."""
    tags = snapshot.get("tags") or []
    sequences = [tag.removeprefix(SEQUENCE_TAG) for tag in tags if tag.startswith(SEQUENCE_TAG)]
    created = [tag.removeprefix(CREATED_TAG) for tag in tags if tag.startswith(CREATED_TAG)]
    if BACKUP_TAG not in tags or len(sequences) != 1 or len(created) != 1 or not (
            sequences[0].isdigit() and created[0].isdigit()):
        return None
    # Tagging a snapshot gives it a new ID; its name stays the one restic printed when it was taken.
    return {"snapshot": (snapshot.get("original") or snapshot["id"])[:8], "sequence": int(sequences[0]),
            "created_at_ms": int(created[0])}


def verified_snapshots(repository: ResticRepository, *, now_ms: int | None = None
                       ) -> list[tuple[JsonObject, Report]]:
    """Each ``porto-verified`` snapshot that carries Porto's tags, with its facts, oldest first.

    A snapshot dated more than ``FUTURE_SKEW_MS`` ahead of this host's clock is not believed: as the
    newest it would stop every later backup (its age never grows past the interval) and be restored first.
    """
    latest = (time.time_ns() // 1_000_000 if now_ms is None else now_ms) + FUTURE_SKEW_MS
    found = [(snapshot, snapshot_facts(snapshot)) for snapshot in repository.snapshots(VERIFIED_TAG)]
    return sorted(((snapshot, facts) for snapshot, facts in found
                   if facts is not None and facts["created_at_ms"] <= latest),
                  key=lambda pair: (pair[1]["created_at_ms"], pair[1]["sequence"]))


def upload_and_verify(repository: ResticRepository, stage: Path, summary: Report) -> Report:
    """Upload a verified staged backup; it counts once the repository checks and its restored copy verifies."""
    repository.ensure_initialised()
    tags = [BACKUP_TAG, f"{SEQUENCE_TAG}{summary['sequence']}", f"{CREATED_TAG}{summary['created_at_ms']}"]
    snapshot_id = repository.upload(stage, tags)
    repository.check()
    snapshot = next(s for s in repository.snapshots(BACKUP_TAG) if s["short_id"] == snapshot_id)
    with tempfile.TemporaryDirectory(prefix=".verify-", dir=stage.parent) as scratch:
        restored = verify_staged(repository.restore_snapshot(snapshot, Path(scratch)))
    if (restored["sequence"], restored["logical_state_hash"]) != (summary["sequence"], summary["logical_state_hash"]):
        raise VerificationError(snapshot_id, "the restored snapshot differs from what was staged")
    repository.mark_verified(snapshot_id)
    return {**summary, "snapshot": snapshot_id}


def newest_verified(repository: ResticRepository) -> Report | None:
    if not repository.initialised():
        return None
    snapshots = verified_snapshots(repository)
    return snapshots[-1][1] if snapshots else None


# Recovery on a new host.

def recover(data_dir: str | os.PathLike[str], admission_dir: str | os.PathLike[str], *,
            repository: ResticRepository | None = None, backup_dir: str | os.PathLike[str] | None = None,
            trusted_genesis: str | None = None) -> Report:
    """Restore the newest good backup: the ledger (dispatch disabled) and its admission stores, both all or nothing.

    From the repository's newest ``porto-verified`` snapshot, or from the newest staged backup under
    ``backup_dir`` that verifies (from ``trusted_genesis``, when given). ``data_dir`` must be absent or
    empty; so must ``admission_dir``, unless it holds exactly that backup's admission stores, as a
    recovery stopped before its last step leaves it.
    """
    data_dir, admission_dir = Path(data_dir).resolve(), Path(admission_dir).resolve()
    if data_dir.is_relative_to(admission_dir) or admission_dir.is_relative_to(data_dir):
        raise VerificationError(str(admission_dir), "the admission directory must lie apart from the data directory")
    require_absent_or_empty(data_dir, RECOVERY_TARGET)
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{data_dir.name}.recovering-", dir=data_dir.parent) as scratch:
        stage, facts = _fetch_newest(Path(scratch), repository, backup_dir, trusted_genesis)
        summary = verify_staged(stage, trusted_genesis=trusted_genesis)
        if facts is not None and (summary["sequence"], summary["created_at_ms"]) != (
                facts["sequence"], facts["created_at_ms"]):
            raise VerificationError(facts["snapshot"], "the snapshot holds another backup than its tags name")
        admission_in_place = _admission_in_place(stage, admission_dir)  # known before the long rebuild
        build_ledger = restorer(stage / LEDGER, trusted_genesis=trusted_genesis)
        with staged_beside(data_dir, verb="recovery", doing="restoring") as ledger:
            restored = build_ledger(ledger)
            if not admission_in_place:
                _publish_admission(stage, admission_dir)
            publish(ledger, data_dir)  # last: a ledger in place means the recovery is whole
    present = {path.name for path in (admission_dir / EVIDENCE).rglob("*") if path.is_file()}
    referenced = referenced_evidence_of_ledger(data_dir)
    return {"snapshot": facts and facts["snapshot"], **restored, "created_at_ms": summary["created_at_ms"],
            "evidence_referenced": len(referenced), "evidence_restored": len(referenced & present),
            "evidence_missing": sorted(referenced - present),
            "envelopes_restored": sum(1 for path in (admission_dir / "envelopes").rglob("*") if path.is_file())}


def _admission_in_place(stage: Path, admission_dir: Path) -> bool:
    """Whether ``admission_dir`` already holds this backup's admission stores, file for file, as an earlier run
    of this recovery that stopped before publishing the ledger leaves it; it must otherwise be absent or empty."""
    if not admission_dir.is_dir() or not any(admission_dir.iterdir()):
        require_absent_or_empty(admission_dir, RECOVERY_TARGET)
        return False
    try:
        _require_admission_files(hash_tree(admission_dir), _admission_manifest(stage))
    except VerificationError:
        raise VerificationError(str(admission_dir), "recovery needs an absent or empty directory, or the "
                                                    "admission stores of the backup it recovers") from None
    return True


def _publish_admission(stage: Path, admission_dir: Path) -> None:
    """The backup's admission stores, copied and checked beside ``admission_dir``, then renamed into place."""
    with staged_beside(admission_dir, verb="recovery", doing="restoring") as admission:
        shutil.copytree(stage / ADMISSION, admission, symlinks=True, dirs_exist_ok=True)
        _require_admission_files(hash_tree(admission), _admission_manifest(stage))
        publish(admission, admission_dir)


def _fetch_newest(scratch: Path, repository: ResticRepository | None, backup_dir: str | os.PathLike[str] | None,
                  trusted_genesis: str | None) -> tuple[Path, Report | None]:
    if repository is not None:
        snapshots = verified_snapshots(repository)
        if not snapshots:
            raise LedgerError(ErrorCode.NO_GOOD_BACKUP, f"no verified snapshot in {repository.name}")
        snapshot, facts = snapshots[-1]
        return repository.restore_snapshot(snapshot, scratch), facts
    for candidate in sorted(Path(backup_dir).iterdir(), key=_recorded_head, reverse=True) if backup_dir else ():
        try:
            verify_staged(candidate, trusted_genesis=trusted_genesis)
        except VerificationError:
            continue
        return candidate, None
    raise LedgerError(ErrorCode.NO_GOOD_BACKUP, f"no staged backup under {backup_dir} verifies")


def _recorded_head(stage: Path) -> tuple[int, int]:
    """The (sequence, created_at_ms) a staged backup's manifest records, by which the newest is found (its
    directory's name says nothing); (-1, -1) when it records none, so it is tried last."""
    try:
        manifest = orjson.loads(read_regular_file(stage / LEDGER / MANIFEST))
        recorded = (manifest["sequence"], manifest["created_at_ms"])
    except (OSError, orjson.JSONDecodeError, TypeError, KeyError):
        return (-1, -1)
    return recorded if all(type(value) is int for value in recorded) else (-1, -1)


def referenced_evidence_of_ledger(data_dir: Path) -> set[str]:
    found: set[str] = set()
    with RocksStore(data_dir, read_only=True, stopped=True) as store:
        for _key, raw in store.scan(JOURNAL, b""):
            found.update(orjson.loads(raw)["envelope"].get("evidence_hashes", ()))
    return found


def payments_by_state(data_dir: str | os.PathLike[str]) -> dict[str, int]:
    """How many payments the stopped ledger holds in each state."""
    counts: dict[str, int] = {}
    with RocksStore(data_dir, read_only=True, stopped=True) as store:
        for _key, raw in store.scan(STATE, b"payment/"):
            state = decode_record(raw).data["state"]
            counts[state] = counts.get(state, 0) + 1
    return dict(sorted(counts.items()))


def recovery_report(restored: Report, data_dir: str | os.PathLike[str], *, last_known_sequence: int | None,
                    now_ms: int) -> Report:
    """What a person needs after a recovery: what came back, what was lost, what is still in flight."""
    in_flight = payments_by_state(data_dir)
    return {**restored, "evidence_missing_count": len(restored["evidence_missing"]),
            "last_known_sequence": last_known_sequence,
            "commands_lost": None if last_known_sequence is None else last_known_sequence - restored["sequence"],
            "backup_age_secs": round((now_ms - restored["created_at_ms"]) / 1000, 3),
            "payments_by_state": in_flight,
            "payments_in_flight": sum(in_flight.get(state, 0) for state in PAYMENTS_IN_FLIGHT)}

"""Demo stage 1: staff and workers, artists and listeners, the catalogue, funding."""

from __future__ import annotations

from dataclasses import dataclass, field

from ledger_engine.demo.builder import DEMO_IDENTITY_KEY, DemoBuilder, fixture_address, fixture_digest
from ledger_engine.domain.actors import GUARDED_ROLES
from ledger_engine.domain.identity import keyed_identity
from ledger_engine.domain.schema.streaming import ListenerDay, Period
from ledger_engine.open_json import Unvalidated

GENESIS_ADMIN = "genesis-admin"
ADMIN = "demo-admin"
STAFF = {
    ADMIN: ["admin"],
    "demo-admin-2": ["admin"],
    "demo-finance-1": ["finance"],
    "demo-finance-2": ["finance"],
    "demo-finance-3": ["finance"],
    "demo-ops-1": ["ops"],
    "demo-auditor-1": ["auditor"],
}
WORKERS = {
    "demo-ingest": ["ingest"],
    "demo-coordinator": ["coordinator"],
    "demo-dispatcher": ["dispatcher", "signer"],  # the payment worker
    "demo-observer": ["dispatcher", "observer"],  # the payment worker's second credential: what the chain did
    "demo-committer": ["committer", "observer"],
    "demo-maintenance": ["maintenance"],
}
INGEST = "demo-ingest"
WORKS = 20
ARTISTS = 8
USDC_PER_LISTENER_DAY = 80_000  # 0.08 USDC, in micro-units


@dataclass
class Cast:
    """Who and what the later stages refer to."""

    artists: list[str] = field(default_factory=list)
    listeners: list[str] = field(default_factory=list)
    works: list[Unvalidated] = field(default_factory=list)
    lots: list[str] = field(default_factory=list)
    rights: dict[str, Unvalidated] = field(default_factory=dict)  # work -> {"version", "recipients"}
    periods: list[Period] = field(default_factory=list)  # cleared subscription periods, as recorded
    closed_days: list[ListenerDay] = field(default_factory=list)  # listener-days, as CloseDay recorded them


# The demo's artists and node operators by the public names they are paid under: invented, labelled as the demo's
# like everything else it holds, one of them in a right-to-left script.
DISPLAY_NAMES = {
    "demo-artist-00": "Aurora Vale (demo)", "demo-artist-01": "Tiago Mar (demo)",
    "demo-artist-02": "Inês Luar (demo)", "demo-artist-03": "The Quiet Ferries (demo)",
    "demo-artist-04": "Kofi Mensah (demo)", "demo-artist-05": "Trio Saudade (demo)",
    "demo-artist-06": "ليلى النيل (demo)", "demo-artist-07": "Lena Ostrova (demo)",
    "demo-operator-00": "Alfama Edge Nodes (demo)", "demo-operator-01": "Tejo Streaming Co. (demo)",
    "demo-operator-02": "Porto Ribeira Relay (demo)",
}


def staff_email(name: str) -> str:
    """A demo staff member's work email: the identity their account's digest is made of."""
    return f"{name}@demo.porto.invalid"


def build_foundation(builder: DemoBuilder, *, listeners: int, days: int) -> Cast:
    cast = Cast()
    _staff(builder)
    for name, roles in WORKERS.items():
        _provision(builder, name, "worker", roles, actor=ADMIN)
    for number in range(ARTISTS):
        name = f"demo-artist-{number:02d}"
        _provision(builder, name, "artist", [], actor=ADMIN, payout_address=fixture_address(name))
        cast.artists.append(name)
    for number in range(listeners):
        name = f"demo-listener-{number:05d}"
        _provision(builder, name, "listener", [], actor=ADMIN)
        cast.listeners.append(name)
    _catalogue(builder, cast)
    _funding(builder, cast, listeners=listeners, days=days)
    return cast


def _staff(builder: DemoBuilder) -> None:
    """The genesis admin provisions demo-admin alone (while it is the only admin); from then on two admins
    decide every guarded role: demo-admin requests it, the genesis admin approves with a step-up proof.
    Every demo staff member then enrols through their own link."""
    _provision(builder, ADMIN, "staff", STAFF[ADMIN], actor=GENESIS_ADMIN)
    for name, roles in STAFF.items():
        if name != ADMIN:
            _provision(builder, name, "staff", [role for role in roles if role not in GUARDED_ROLES], actor=ADMIN)
    for name, roles in STAFF.items():
        for role in sorted(set(roles) & GUARDED_ROLES) if name != ADMIN else ():
            change_id = builder.new_id()
            builder.add("RequestStaffChange", {"change_id": change_id, "change": {
                "kind": "grant_role", "account_id": name, "role": role}}, actor=ADMIN)
            builder.add("DecideStaffChange", {"change_id": change_id, "decision": "approve"}, actor=GENESIS_ADMIN,
                        step_up=True)
    for name in STAFF:
        link_id = f"demo-link-{name}"
        builder.add("RecordProfileChange", {"account_id": name, "change": "enrolment_link_issued", "link_id": link_id},
                    actor=GENESIS_ADMIN if name == ADMIN else ADMIN)
        builder.add("RecordProfileChange", {"account_id": name, "change": "enrolment_completed", "link_id": link_id,
                                            "factors": ["authenticator", "password"]}, actor=name)


def _provision(builder: DemoBuilder, account_id: str, kind: str, roles: list[str], *, actor: str,
               payout_address: str | None = None) -> None:
    identity = keyed_identity(DEMO_IDENTITY_KEY, kind, staff_email(account_id)) if kind == "staff" \
        else {"identity_digest": fixture_digest("identity", account_id)}
    payload = {"account_id": account_id, "kind": kind, **identity, "roles": sorted(roles)}
    if payout_address:
        payload["payout_address"] = payout_address
    if account_id in DISPLAY_NAMES:
        payload["display_name"] = DISPLAY_NAMES[account_id]
    builder.add("RegisterAccount", payload, actor=actor)


def work_title(number: int) -> str:
    """A demo work's display title: a visible fixture, derived from its number as its ID is."""
    return f"Demo Song {number}"


def _catalogue(builder: DemoBuilder, cast: Cast) -> None:
    works: list[Unvalidated] = []
    for number in range(WORKS):
        work_id = f"demo-work-{number:03d}"
        duration = 120_000 + builder.rng.randrange(0, 180_000, 1_000)
        chunk_ms = 10_000
        chunks = [{"index": i, "start_ms": start, "end_ms": min(start + chunk_ms, duration),
                   "size_bytes": 160_000, "sha256": fixture_digest(work_id, "chunk", i)}
                  for i, start in enumerate(range(0, duration, chunk_ms))]
        works.append({"work_id": work_id, "title": work_title(number),
                      "metadata_hash": fixture_digest(work_id, "metadata"), "licence_ref": f"demo-licence-{number:03d}",
                      "renditions": [{"rendition_id": f"{work_id}-aac", "codec": "aac-256",
                                      "duration_ms": duration, "manifest_hash": fixture_digest(work_id, "manifest"),
                                      "chunks": chunks}]})
    builder.add("ImportCatalogue", {"import_id": "demo-catalogue-1", "works": works}, actor=INGEST)
    for number, work in enumerate(works):
        recipients = sorted(builder.rng.sample(cast.artists, k=1 + number % 3))
        splits = _even_splits(len(recipients))
        rights = {"version": 1, "recipients": [{"recipient_id": r, "split_bps": s} for r, s in zip(recipients, splits)]}
        builder.add("ActivateWork", {"work_id": work["work_id"], "rights": {
            **rights, "effective_at_ms": builder.clock_ms, "licence_ref": work["licence_ref"]}}, actor=INGEST)
        cast.rights[work["work_id"]] = rights
        cast.works.append({"work_id": work["work_id"], "title": work["title"], "rendition_id": f"{work['work_id']}-aac",
                           "duration_ms": work["renditions"][0]["duration_ms"]})


def _even_splits(count: int) -> list[int]:
    base, rest = divmod(10_000, count)
    return [base + (1 if i < rest else 0) for i in range(count)]


def _funding(builder: DemoBuilder, cast: Cast, *, listeners: int, days: int) -> None:
    for day in range(days):
        lot_id = f"demo-lot-{day:03d}"
        evidence = fixture_digest(lot_id, "deposit")
        builder.add("ImportFunding", {
            "lot_id": lot_id, "asset": "USDC", "amount": str(max(1, listeners) * USDC_PER_LISTENER_DAY),
            "deposit": {"chain": "simulated", "transaction_hash": fixture_digest(lot_id, "tx"),
                        "event_index": 0, "evidence_digest": evidence},
        }, actor=INGEST, evidence=[evidence])
        cast.lots.append(lot_id)

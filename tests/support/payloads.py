"""Valid domain payloads for tests; each builder takes only what a test varies."""

from __future__ import annotations

from typing import Any

from tests.conftest import EnvelopeFactory

digest = EnvelopeFactory.digest


def address(name: str) -> str:
    return "0x" + digest("address", name)


def chunks(duration_ms: int, chunk_ms: int = 10_000) -> list[dict[str, Any]]:
    """Ordered chunks covering ``[0, duration_ms)`` exactly."""
    return [{"index": index, "start_ms": start, "end_ms": min(start + chunk_ms, duration_ms),
             "size_bytes": 160_000, "sha256": digest("chunk", index)}
            for index, start in enumerate(range(0, duration_ms, chunk_ms))]


def rendition(rendition_id: str, duration_ms: int = 30_000, chunk_list: list[dict[str, Any]] | None = None
              ) -> dict[str, Any]:
    return {"rendition_id": rendition_id, "codec": "aac-256", "duration_ms": duration_ms,
            "manifest_hash": digest("manifest", rendition_id),
            "chunks": chunks(duration_ms) if chunk_list is None else chunk_list}


def work(work_id: str, *renditions: dict[str, Any]) -> dict[str, Any]:
    return {"work_id": work_id, "metadata_hash": digest("metadata", work_id), "licence_ref": f"licence-{work_id}",
            "renditions": list(renditions) or [rendition(f"{work_id}-aac")]}


def catalogue(import_id: str, *works: dict[str, Any]) -> dict[str, Any]:
    return {"import_id": import_id, "works": list(works)}


def rights(work_id: str, splits: dict[str, int], *, version: int = 1) -> dict[str, Any]:
    """An ActivateWork payload; ``splits`` maps recipients to basis points, in the order given."""
    return {"work_id": work_id, "rights": {
        "version": version, "effective_at_ms": 0, "licence_ref": f"licence-{work_id}",
        "recipients": [{"recipient_id": recipient, "split_bps": bps} for recipient, bps in splits.items()]}}


def funding(lot_id: str, amount: str, *, transaction: str | None = None, event_index: int = 0) -> dict[str, Any]:
    """An ImportFunding payload; its evidence digest is ``deposit_evidence(payload)``."""
    transaction = transaction or lot_id
    return {"lot_id": lot_id, "asset": "USDC", "amount": amount,
            "deposit": {"chain": "simulated", "transaction_hash": digest("tx", transaction),
                        "event_index": event_index, "evidence_digest": digest("evidence", transaction, event_index)}}


def deposit_evidence(payload: dict[str, Any]) -> str:
    return payload["deposit"]["evidence_digest"]

"""Payload field types of the streaming commands."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from ledger_engine.domain.types import Identifier


def _sorted_distinct(values: list[str]) -> list[str]:
    if list(values) != sorted(set(values)):
        raise ValueError("must be sorted and distinct")
    return values


PublicKey = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
"""A raw Ed25519 public key, 32 bytes as lowercase hex."""

SortedIdentifiers = Annotated[list[Identifier], AfterValidator(_sorted_distinct)]

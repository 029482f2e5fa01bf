"""Field types shared by payload models."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ledger_engine.canonical import MAX_SAFE_INTEGER
from ledger_engine.domain.ruleset import Role as Role  # re-exported for payload models
from ledger_engine.envelope import SHA256_PATTERN
from ledger_engine.keys import IDENTIFIER_PATTERN

Identifier = Annotated[str, Field(pattern=IDENTIFIER_PATTERN)]
Digest = Annotated[str, Field(pattern=SHA256_PATTERN)]
TimestampMs = Annotated[int, Field(ge=0, le=MAX_SAFE_INTEGER)]
Count = Annotated[int, Field(ge=0, le=MAX_SAFE_INTEGER)]
BasisPoints = Annotated[int, Field(ge=0, le=10_000)]
ChainAddress = Annotated[str, Field(pattern=r"^0x[0-9a-f]{64}$")]

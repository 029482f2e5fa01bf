"""A refusal with a stable code: what the ledger's API or the chain says no with."""

from __future__ import annotations


class Refused(Exception):
    """``code`` is for programs, ``detail`` for people; both are in ``args``, so it survives pickling."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(code, detail)
        self.code = code
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"

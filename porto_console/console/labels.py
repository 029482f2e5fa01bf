"""Words for people: the ledger's enum values and day numbers as a finance team reads them.

The ledger's values stay what they are (``prepared_in_error``, day ``20728``);
the screens show ``Prepared in error`` and ``01 Oct 2026`` with the raw value
on hover.
"""

from __future__ import annotations

from datetime import UTC, datetime

DAY_MS = 86_400_000
# Words whose usual spelling is not their lower-case form.
SPELLINGS = {"ok": "OK", "usdc": "USDC", "id": "ID", "ids": "IDs", "totp": "TOTP", "api": "API", "csv": "CSV",
             "json": "JSON", "rpc": "RPC", "url": "URL"}


PLAIN = str.maketrans("", "", "_- ")


def human(value) -> str:
    """``prepared_in_error`` -> ``Prepared in error``; anything that is not a plain enum word is left as it is."""
    text = str(value)
    if not text or not text.translate(PLAIN).isalnum() or text != text.lower():
        return text
    words = [SPELLINGS.get(word, word) for word in text.replace("_", " ").split(" ")]
    first = words[0]
    return " ".join([first if first in SPELLINGS.values() else first.capitalize(), *words[1:]])


def day_date(day) -> datetime:
    return datetime.fromtimestamp(int(day) * DAY_MS // 1000, UTC)

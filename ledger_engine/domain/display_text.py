"""Text a person reads that the ledger stores: a work's title, a recipient's display name.

Stored NFC, so a replay on any Python stores the same bytes; refused when it holds a control character, a line or
paragraph separator, or an unassigned code point (whose normalisation a later Unicode version may change), or
whitespace at either end. Directional marks are allowed, as names in right-to-left scripts need them: screens
isolate such text (``<bdi>``), so it cannot reorder what stands beside it.
"""

from __future__ import annotations

import unicodedata
from typing import Callable

REFUSED_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cn"})


def display_text(noun: str, max_chars: int) -> Callable[[str], str]:
    """A validator of such text, 1 to ``max_chars`` characters; its ValueError names ``noun`` (``"a title"``)
    and says what is wrong (the payload is refused INVALID_PAYLOAD)."""

    def validated(text: str) -> str:
        normalised = unicodedata.normalize("NFC", text)
        if not 1 <= len(normalised) <= max_chars:
            raise ValueError(f"{noun} is 1 to {max_chars} characters, not {len(normalised)}")
        if normalised != normalised.strip():
            raise ValueError(f"{noun} has no whitespace at its start or end")
        refused = next((char for char in normalised if unicodedata.category(char) in REFUSED_CATEGORIES), None)
        if refused is not None:
            raise ValueError(f"{noun} holds no control or unassigned character (U+{ord(refused):04X})")
        return normalised

    return validated

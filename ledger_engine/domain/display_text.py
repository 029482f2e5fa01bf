"""Text a person reads that the ledger stores: a work's title, a recipient's display name.

Stored NFC, so a replay on any Python stores the same bytes. Refused when it holds:
- a control character, a line or paragraph separator, or an unassigned code point (whose normalisation a later
  Unicode version may change);
- whitespace at either end;
- a format character that shows nothing (a zero-width space, a word joiner, a byte order mark, a soft hyphen, a
  tag), by which two names that look the same differ, or a name shows as nothing; and the directional embeddings,
  overrides and isolates, which screens contain (``<bdi>``) but a CSV row or a JSON file does not, so that an
  open override reverses the amounts beside it. Right-to-left text needs only the marks (LRM, RLM, ALM), and
  joined scripts and emoji the joiners (ZWNJ, ZWJ), which stay allowed;
- more than ``MAX_COMBINING_RUN`` combining marks on one letter, which a browser paints over the rows around it.
"""

from __future__ import annotations

import unicodedata
from typing import Callable

REFUSED_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cn"})
ALLOWED_FORMAT = frozenset({"\u200c", "\u200d", "\u200e", "\u200f", "\u061c"})  # ZWNJ, ZWJ, LRM, RLM, ALM
COMBINING = frozenset({"Mn", "Me"})
MAX_COMBINING_RUN = 4


def display_text(noun: str, max_chars: int) -> Callable[[str], str]:
    """A validator of such text, 1 to ``max_chars`` characters; its ValueError names ``noun`` (``"a title"``)
    and says what is wrong (the payload is refused INVALID_PAYLOAD)."""

    def validated(text: str) -> str:
        normalised = unicodedata.normalize("NFC", text)
        if not 1 <= len(normalised) <= max_chars:
            raise ValueError(f"{noun} is 1 to {max_chars} characters, not {len(normalised)}")
        if normalised != normalised.strip():
            raise ValueError(f"{noun} has no whitespace at its start or end")
        refused = next((char for char in normalised if _refused(char)), None)
        if refused is not None:
            raise ValueError(f"{noun} holds no control, invisible, directional or unassigned character "
                             f"(U+{ord(refused):04X})")
        if _longest_combining_run(normalised) > MAX_COMBINING_RUN:
            raise ValueError(f"{noun} has at most {MAX_COMBINING_RUN} combining marks on one letter")
        return normalised

    return validated


def _refused(char: str) -> bool:
    category = unicodedata.category(char)
    return category in REFUSED_CATEGORIES or (category == "Cf" and char not in ALLOWED_FORMAT)


def _longest_combining_run(text: str) -> int:
    longest = run = 0
    for char in text:
        run = run + 1 if unicodedata.category(char) in COMBINING else 0
        longest = max(longest, run)
    return longest

"""How many SMS segments a text takes, and in which encoding (pure: no I/O).

An SMS carries 140 bytes. A text whose every character is in the GSM 7-bit default
alphabet (3GPP TS 23.038 §6.2.1: the basic set, and the extension table whose
characters take an escape and so count two) is sent as GSM-7: 160 septets in one
segment. Any other character makes the whole text UCS-2: 70 UTF-16 code units (an
emoji outside the Basic Multilingual Plane is a surrogate pair: two). A longer text is
split into segments that each give up room to the concatenation header (User Data
Header, 6 bytes): 153 septets or 67 code units each, and a character is never split
between two segments (an escape and its character, a surrogate pair), so a segment
may hold one unit less than its room.

Twilio documents these numbers (https://www.twilio.com/docs/glossary/what-sms-character-limit)
and bills per segment; :mod:`core.limits` refuses at save time a text over the most
segments it recommends.
"""

from __future__ import annotations

from typing import Final, Literal

Encoding = Literal["GSM-7", "UCS-2"]
GSM7: Final = "GSM-7"
UCS2: Final = "UCS-2"

#: TS 23.038's default alphabet, basic set, in table order (0x1B, the escape, left out).
GSM7_BASIC = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅå"
    "Δ_ΦΓΛΩΠΨΣΘΞÆæßÉ"
    " !\"#¤%&'()*+,-./"
    "0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNO"
    "PQRSTUVWXYZÄÖÑÜ§"
    "¿abcdefghijklmno"
    "pqrstuvwxyzäöñüà"
)
#: The extension table's characters (an escape, then the character: two septets).
GSM7_EXTENSION = frozenset("\f^{}\\[~]|€")

#: Units in one segment alone, and in each segment of a longer text.
SINGLE: Final[dict[Encoding, int]] = {"GSM-7": 160, "UCS-2": 70}
MULTIPART: Final[dict[Encoding, int]] = {"GSM-7": 153, "UCS-2": 67}


def not_gsm7(text: str) -> str | None:
    """The first character of ``text`` that GSM-7 cannot carry (None: it can carry all)."""
    for char in text:
        if char not in GSM7_BASIC and char not in GSM7_EXTENSION:
            return char
    return None


def encoding(text: str) -> Encoding:
    """GSM-7 when every character is in its alphabet, else UCS-2."""
    return GSM7 if not_gsm7(text) is None else UCS2


def _sizes(text: str, enc: Encoding) -> list[int]:
    """Each character's units: septets in GSM-7, UTF-16 code units in UCS-2."""
    if enc == GSM7:
        return [2 if char in GSM7_EXTENSION else 1 for char in text]
    return [2 if ord(char) > 0xFFFF else 1 for char in text]


def units(text: str) -> int:
    """The septets (GSM-7) or UTF-16 code units (UCS-2) ``text`` takes."""
    return sum(_sizes(text, encoding(text)))


def segments(text: str) -> tuple[Encoding, int]:
    """``(encoding, count)``: the encoding ``text`` is sent in and how many segments
    it takes (an empty text is one, empty, segment)."""
    enc = encoding(text)
    sizes = _sizes(text, enc)
    if sum(sizes) <= SINGLE[enc]:
        return enc, 1
    room = MULTIPART[enc]
    count, used = 1, 0
    for size in sizes:
        if used + size > room:  # never split a character between two segments
            count, used = count + 1, 0
        used += size
    return enc, count

"""SMS segments (core.sms_text) against the numbers Twilio documents
(https://www.twilio.com/docs/glossary/what-sms-character-limit): 160 GSM-7 septets or
70 UCS-2 code units alone, 153 or 67 a segment beyond; and the save-time refusal of a
text over 10 segments or 1,600 characters (core.limits.check_message)."""

from __future__ import annotations

import pytest

from core import limits, sms_text
from core.channels import parse_destination

SMS = parse_destination("sms:+12025550123")

SEGMENTS = [
    ("", "GSM-7", 1),
    ("a" * 160, "GSM-7", 1),
    ("a" * 161, "GSM-7", 2),
    ("a" * 306, "GSM-7", 2),
    ("a" * 307, "GSM-7", 3),
    # the extension table (an escape and the character) counts two septets
    ("€" * 80, "GSM-7", 1),
    ("€" * 81, "GSM-7", 2),
    ("[]{}" * 40, "GSM-7", 3),  # 320 septets
    # an escape and its character are never split between segments
    ("a" * 152 + "€" + "a" * 153, "GSM-7", 3),
    ("a" * 151 + "€" + "a" * 153, "GSM-7", 2),
    # the whole basic set, accents and Greek capitals included, is GSM-7
    ("@£$¥èéùìòÇØøÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ¤¡ÄÖÑÜ§¿äöñüà", "GSM-7", 1),
    # one character outside it makes the whole text UCS-2
    ("ж" * 70, "UCS-2", 1),
    ("ж" * 71, "UCS-2", 2),
    ("ж" * 134, "UCS-2", 2),
    ("ж" * 135, "UCS-2", 3),
    ("a" * 69 + "ç", "UCS-2", 1),  # ç (lower case) is not in GSM-7; Ç is
    ("a" * 70 + "✓", "UCS-2", 2),
    # an emoji is a surrogate pair: two UTF-16 code units
    ("😀" * 35, "UCS-2", 1),
    ("😀" * 36, "UCS-2", 2),
    ("a" * 69 + "😀", "UCS-2", 2),
    # a surrogate pair is never split either: 33 pairs fill 66 of a segment's 67
    ("😀" * 67, "UCS-2", 3),
]


@pytest.mark.parametrize(("text", "encoding", "count"), SEGMENTS)
def test_segments(text: str, encoding: str, count: int) -> None:
    assert sms_text.segments(text) == (encoding, count)


def test_units_and_the_character_that_needs_ucs2() -> None:
    assert sms_text.units("a€") == 3
    assert sms_text.units("a😀") == 3
    assert sms_text.not_gsm7("Réunion ✓ done 😀") == "✓"
    assert sms_text.not_gsm7("Réunion à 9h {salle B}") is None
    assert len(sms_text.GSM7_BASIC) == 127  # 128 less the escape


def test_ten_segments_are_saved_eleven_refused() -> None:
    limits.check_message(SMS, "a" * 1530)  # 10 × 153
    with pytest.raises(limits.TooLarge) as refused:
        limits.check_message(SMS, "a" * 1531)
    assert str(refused.value) == (
        "This text needs 11 SMS segments (GSM-7); the most is 10: shorten it or split "
        "it into several schedules."
    )
    assert refused.value.limit is limits.SMS_SEGMENTS


def test_the_refusal_says_which_character_made_it_ucs2() -> None:
    limits.check_message(SMS, "✓" + "a" * 669)  # 10 × 67
    with pytest.raises(limits.TooLarge) as refused:
        limits.check_message(SMS, "Done ✓ " + "a" * 797)
    assert str(refused.value) == (
        "This text needs 12 SMS segments (UCS-2, because of '✓'); the most is 10: "
        "shorten it or split it into several schedules."
    )


def test_over_1600_characters_is_refused_by_twilios_limit() -> None:
    with pytest.raises(limits.TooLarge) as refused:
        limits.check_message(SMS, "a" * 1601)
    assert str(refused.value) == (
        "Twilio allows 1,600 characters in an SMS; this message has 1,601."
    )


def test_a_template_is_checked_by_its_longest_rendering() -> None:
    # {schedule.id} renders up to 19 digits: 1,511 + 19 = 1,530 fits, 1,512 + 19 does not
    limits.check_message(SMS, "a" * 1511 + "{schedule.id}", {"template": True})
    with pytest.raises(limits.TooLarge) as refused:
        limits.check_message(SMS, "a" * 1512 + "{schedule.id}", {"template": True})
    assert str(refused.value).startswith("This text can need 11 SMS segments (GSM-7)")
    # a format's own characters count: its arrow makes the text UCS-2
    with pytest.raises(limits.TooLarge) as refused:
        limits.check_message(SMS, "a" * 700 + "{date:%A → %B}", {"template": True})
    assert "(UCS-2, because of '→')" in str(refused.value)


def test_other_kinds_are_not_counted_in_segments() -> None:
    limits.check_message(parse_destination("log:"), "✓" * 3000)

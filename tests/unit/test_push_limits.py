"""Push and ntfy texts are refused at save past what the platform takes as a
notification's text, counted in UTF-8 bytes (FCM's 4,096-byte payload, of which
Herald keeps 3,500 for the text; ntfy's 4,096-byte message)."""

from __future__ import annotations

import pytest

from core import limits
from core.channels import parse_destination

PUSH = parse_destination("push:slack:U0123ABC")
NTFY = parse_destination("ntfy:https://ntfy.example.com/team")


@pytest.mark.parametrize(
    ("destination", "text", "refused"),
    [
        (PUSH, "a" * 3500, False),
        (PUSH, "a" * 3501, True),
        (PUSH, "é" * 1750, False),  # two bytes each: 3,500
        (PUSH, "é" * 1751, True),
        (NTFY, "a" * 4000, False),
        (NTFY, "✅" * 1365, False),  # three bytes each: 4,095
        (NTFY, "✅" * 1366, True),
    ],
)
def test_texts_are_measured_in_bytes(destination: object, text: str, refused: bool) -> None:
    if not refused:
        limits.check_message(destination, text)  # type: ignore[arg-type]
        return
    with pytest.raises(limits.TooLarge, match=r"allows [\d,]+ bytes .*this message has [\d,]+\."):
        limits.check_message(destination, text)  # type: ignore[arg-type]


def test_a_template_is_measured_by_its_longest_rendering() -> None:
    text = "é" * 1745 + " {schedule.id}"  # 3,505 bytes with the id's 19 digits
    with pytest.raises(limits.TooLarge, match="this message can have"):
        limits.check_message(PUSH, text, {"template": True})


def test_other_kinds_are_not_measured_in_bytes() -> None:
    limits.check_message(parse_destination("webhook:https://example.com/h"), "✅" * 1400)

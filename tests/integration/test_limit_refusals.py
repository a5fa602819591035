"""A message its destination would refuse is refused when it is saved (create, edit,
import), in one sentence naming the limit and the size, and nothing is stored."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core import limits
from core.cases import Herald, ImportRejected, import_schedules
from core.errors import InvalidInput
from core.store import ScheduleQuery
from tests.support.store import audit_trail

ALICE = "local:alice"
DISCORD = "discord:123456789012345678"
DISCORD_HOOK = "discord-webhook:https://discord.com/api/webhooks/1/token"
WEBHOOK = "webhook:https://example.com/hook"
WHEN = "2026-03-05 09:00"


async def stored(herald: Herald) -> tuple[list[Any], int]:
    """Every schedule (as values) and the number of audit rows about schedules."""
    rows = await herald.store.list_schedules(ScheduleQuery())
    trails = 0
    for s in rows:
        trails += len(await audit_trail(herald.store, "schedule", str(s.id)))
    return [s.model_dump() for s in rows], trails


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


ELEVEN_EMBEDS = [{"title": "t" * 256, "description": "d" * 746 + "é"}] * 10 + [
    {"title": "t" * 23, "description": "d" * 10}
]

REFUSALS = [
    pytest.param(
        {"to": DISCORD, "text": "x" * 3508},
        "Discord allows 2,000 characters in a message; this message has 3,508.",
        id="discord text",
    ),
    pytest.param(
        {"to": DISCORD_HOOK, "text": "x" * 2001},
        "Discord allows 2,000 characters in a message; this message has 2,001.",
        id="discord webhook text",
    ),
    pytest.param(
        {"to": DISCORD_HOOK, "text": "x", "options": {"embeds": ELEVEN_EMBEDS}},
        "Discord allows 10 embeds in a message; this message has 11.",
        id="eleven embeds",
    ),
    pytest.param(
        {"to": "slack:C0123", "text": "x", "options": {"blocks": [section("b")] * 51}},
        "Slack allows 50 blocks in a message; this message has 51.",
        id="51 blocks",
    ),
    pytest.param(
        {"to": "slack:C0123", "text": "x", "options": {"blocks": [section("s" * 3001)]}},
        "Slack allows 3,000 characters in a section's text; block 1's text has 3,001.",
        id="long section",
    ),
    pytest.param(
        {
            "to": "slack:C0123",
            "text": "x",
            "options": {
                "blocks": [
                    {
                        "type": "actions",
                        "elements": [
                            {
                                "type": "button",
                                "text": {"type": "plain_text", "text": "Go"},
                                "action_id": "go",
                                "value": "v" * 2001,
                            }
                        ],
                    }
                ]
            },
        },
        "Slack allows 2,000 characters in a button's value; block 1's element 1's value has 2,001.",
        id="button value",
    ),
    pytest.param(
        {"to": "slack:C0123", "text": "x", "options": {"blocks": [{"type": "hologram"}]}},
        "Slack has no block type 'hologram' (block 1)",
        id="unknown block type",
    ),
    pytest.param(
        {"to": DISCORD, "text": "y" * 1985 + "{date:%A %B}"},
        "Discord allows 2,000 characters in a message; this message, its variables filled in, "
        "can have 2,004.",
        id="template expansion",
    ),
    pytest.param(
        {"to": WEBHOOK, "text": "z" * 4001},
        "Herald allows 4,000 characters in a message; this message has 4,001.",
        id="herald's own",
    ),
]


@pytest.mark.parametrize(("request_", "sentence"), REFUSALS)
async def test_create_refuses_and_stores_nothing(
    herald: Herald, request_: dict[str, Any], sentence: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        await herald.create_schedule(ALICE, when=WHEN, **request_)
    assert sentence in str(refused.value)
    assert len(str(refused.value).rstrip(".").split(". ")) == 1  # one sentence
    assert await stored(herald) == ([], 0)


async def test_what_fits_is_stored_whole(herald: Herald) -> None:
    # into a Discord channel, room stays for the "scheduled by" line (issue 32)
    discord = 2000 - limits.DISCORD_CREDIT_ROOM
    for to, size in ((DISCORD, discord), (WEBHOOK, 4000), ("email:ops@example.com", 3500)):
        body = "é" * size
        s, _ = await herald.create_schedule(ALICE, to=to, when=WHEN, text=body)
        assert (await herald.store.get_schedule(s.id)).body == body


async def test_an_edit_that_does_not_fit_changes_nothing(herald: Herald) -> None:
    s, _ = await herald.create_schedule(ALICE, to=DISCORD, when=WHEN, text="Standup")
    webhook, _ = await herald.create_schedule(ALICE, to=WEBHOOK, when=WHEN, text="w" * 3500)
    before = await stored(herald)
    with pytest.raises(limits.TooLarge, match="this message has 3,508"):
        await herald.edit_schedule(ALICE, s.id, text="x" * 3508)
    # moving a 3,500-character message to Discord would have it die at send time
    with pytest.raises(limits.TooLarge, match="Discord allows 2,000 characters"):
        await herald.edit_schedule(ALICE, webhook.id, to=DISCORD)
    assert await stored(herald) == before


async def test_an_import_line_that_does_not_fit_imports_nothing(herald: Herald) -> None:
    lines = [
        json.dumps({"to": WEBHOOK, "when": WHEN, "text": "fine"}),
        json.dumps({"to": DISCORD, "when": WHEN, "text": "x" * 3508}),
    ]
    with pytest.raises(ImportRejected) as refused:
        await import_schedules(herald, ALICE, lines)
    assert refused.value.invalid == [
        (2, "Discord allows 2,000 characters in a message; this message has 3,508")
    ]
    assert await stored(herald) == ([], 0)

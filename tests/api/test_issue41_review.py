"""Issue 41's review, the CLI beside the API: ``herald send-now ID --json`` says which
occurrence goes now in its "notes", as the API's answer to POST …/send-now does (and
the remote CLI's --json prints); without them, a script reading the JSON cannot tell
what was sent."""

from __future__ import annotations

import json

from core.cases import Herald
from core.settings import Settings
from tests.e2e.test_cli_channel_view import BOB, SCHEDULE, SlackMembers, cli, slack  # noqa: F401


async def test_send_now_json_says_which_occurrence_goes(
    herald: Herald,
    settings: Settings,
    slack: SlackMembers,  # noqa: F811
) -> None:
    daily = (
        await cli(
            herald, settings, *SCHEDULE, "every day at 9am", "--text", "daily", "-q", actor=BOB
        )
    ).strip()
    said = json.loads(await cli(herald, settings, "send-now", daily, "--json", actor=BOB))
    assert said["id"] == int(daily)
    assert said["notes"] == [
        "sending its Tue 03 Mar 2026 09:00 occurrence now; the next ones stay as planned"
    ]
    paused = json.loads(await cli(herald, settings, "pause", daily, "--json", actor=BOB))
    assert "notes" not in paused  # a pause notes nothing

"""Issue 33: the schedule modal's preview reads a time exactly as saving it does — in the
zone Herald has for the member (theirs, set with ``/schedule timezone``, over their
Slack profile's) — and names that zone; over signed HTTP against the fake Slack."""

from __future__ import annotations

import re

from tests.slack.conftest import SlackEnv
from tests.slack.support import filled, text_of
from tests.slack.test_modal import block, open_modal


async def test_the_preview_says_the_zone_and_the_first_send_the_save_plans(
    env: SlackEnv,
) -> None:
    # U2's Slack profile says New York; the zone they set in Herald wins
    await env.send.command("timezone Asia/Kolkata", user="U2")
    await env.reply()
    opened = await open_modal(env, user="U2")
    view = {**filled(opened, channel="C0123", text="stand-up", when="every weekday"), "id": "V9"}
    answer = await env.send.preview(view, user="U2")
    assert answer.status == 200
    await env.slack.until(lambda: env.slack.updated)
    preview = text_of({"blocks": [block(env.slack.updated[0]["view"], "preview")]})
    assert "every weekday at 09:00 (Asia/Kolkata)" in preview
    assert "Read in Asia/Kolkata (you set it)." in preview
    first = int(re.findall(r"<!date\^(\d+)\^", preview)[0])

    answer = await env.send.submit(view, user="U2")
    assert answer.status == 200 and answer.text == ""
    await env.slack.until(lambda: env.slack.ephemerals)
    [saved] = await env.schedules()
    assert saved.timezone == "Asia/Kolkata"
    assert saved.next_run_at is not None and saved.next_run_at.timestamp() == first

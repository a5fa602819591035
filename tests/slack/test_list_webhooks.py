"""``/schedule list`` on Slack (issue 33): each schedule says its rule or time in words,
and a webhook's owner and the admins see its host, port and path (four hooks looked
alike as ``webhook:http://127.0.0.1/…``), its token still hidden; others as before."""

from __future__ import annotations

from tests.slack.conftest import SlackEnv
from tests.slack.support import text_of, who

DEPLOY = "webhook:http://127.0.0.1:8080/deploy?token=s3cret-t0ken"
ALERTS = "webhook:http://127.0.0.1:9090/alerts"


async def test_the_owner_and_an_admin_see_which_webhook_is_which(env: SlackEnv) -> None:
    await env.herald.create_schedule(who("U1"), to=DEPLOY, when="every weekday at 9am", text="Up")
    await env.herald.create_schedule(who("U1"), to=ALERTS, when="in 2 hours", text="Tea")
    await env.send.command("list")
    own = text_of(await env.reply())
    await env.send.command("list all", user="UADMIN")
    everyone = text_of(await env.reply(2))
    for text in (own, everyone):
        assert "webhook:http://127.0.0.1:8080/deploy?…" in text
        assert "webhook:http://127.0.0.1:9090/alerts" in text
        assert "s3cret-t0ken" not in text
        assert "every weekday at 09:00" in text and "once, " in text

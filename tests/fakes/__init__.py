"""Local fakes of the services Herald delivers to, each speaking the real protocol on
127.0.0.1 (a free port): start/stop (or ``async with``), record what they received, and
script answers. Shared by the channel integration tests and the end-to-end tests."""

from tests.fakes.discord import FakeDiscord
from tests.fakes.http import FakeHTTPServer, Recorded, Scripted, unused_port
from tests.fakes.slack import FakeSlack, slack_error
from tests.fakes.smtp import FakeSMTP, ReceivedMail
from tests.fakes.webhook import ReceivedWebhook, WebhookReceiver, verify

__all__ = [
    "FakeDiscord",
    "FakeHTTPServer",
    "FakeSMTP",
    "FakeSlack",
    "ReceivedMail",
    "ReceivedWebhook",
    "Recorded",
    "Scripted",
    "WebhookReceiver",
    "slack_error",
    "unused_port",
    "verify",
]

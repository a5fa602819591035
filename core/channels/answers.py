"""What Herald says when a provider's API (Slack's, Discord's) answers something that
is not its API: a page that is not JSON (a wrong ``SLACK_API_URL`` or
``DISCORD_API_URL``, a proxy's or captive portal's page), no answer in time, or no
connection. One sentence each, naming the URL without its credentials and query and,
for an answer, its status and content type; never the body or a token.

:class:`ApiHealth` keeps a channel's last such problem for ``/readyz`` and logs it once
(again only when it changes), so a thousand deliveries into a wrong URL make one log
line, not a thousand.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from core.channels.base import DeliveryResult

log = logging.getLogger(__name__)


def shown_url(url: str, *, hide_path: bool = False) -> str:
    """``url`` as it may be shown: scheme, host, port and path; never a user or
    password, a query or a fragment. ``hide_path`` hides the path too (a webhook's path
    carries its token)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(an unreadable URL)"
    if ":" in host:
        host = f"[{host}]"
    path = "/…" if hide_path and parts.path not in ("", "/") else parts.path
    return f"{parts.scheme}://{host}{port}{path}"


def content_kind(content_type: str) -> str:
    """A content type in words (``text/html``; ``no content type``)."""
    kind = content_type.partition(";")[0].strip().lower()
    return kind[:60] if kind else "no content type"


def not_json(
    provider: str, url: str, status: int, content_type: str, setting: str | None = None
) -> str:
    """The sentence for an answer that is not JSON, e.g. "Slack's API at
    http://127.0.0.1:9/api/auth.test answered HTTP 200 with text/html, not JSON: check
    SLACK_API_URL." (``setting``: the setting that says where the API is)."""
    fix = f": check {setting}" if setting else ""
    return (
        f"{provider}'s API at {shown_url(url)} answered HTTP {status} with "
        f"{content_kind(content_type)}, not JSON{fix}."
    )


def no_answer(provider: str, url: str, seconds: float, setting: str | None = None) -> str:
    """The sentence for a request that got no answer within ``seconds``."""
    fix = f": check {setting} and the network" if setting else ""
    return f"{provider}'s API at {shown_url(url)} did not answer within {seconds:g} s{fix}."


def unreachable(provider: str, url: str, why: str, setting: str | None = None) -> str:
    """The sentence for a request that could not be sent (``why``: the failure)."""
    fix = f": check {setting} and the network" if setting else ""
    return f"Could not reach {provider}'s API at {shown_url(url)} ({why}){fix}."


def not_the_api(
    health: ApiHealth | None, sentence: str, *, url: str, status: int, content_type: str
) -> DeliveryResult:
    """The result of an answer that is not the API's (``sentence``: :func:`not_json`):
    recorded in ``health`` (None: not watched); permanent for a 4xx, else retried."""
    if health is not None:
        health.failed(sentence, url=url, status=status, content_type=content_type)
    if 400 <= status < 500:
        return DeliveryResult.permanent(sentence, status)
    return DeliveryResult.retry(sentence, status)


class ApiHealth:
    """The last problem a channel met with its provider's API (None: its last answer
    was the API's). :meth:`failed` logs a problem once, and again only when it changes;
    :meth:`answered` clears it (and says so in the log)."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        #: The sentence of the last problem, while it lasts.
        self.problem: str | None = None
        self._key: tuple[int, str] | None = None

    def failed(self, sentence: str, *, url: str, status: int, content_type: str) -> None:
        """Record an answer that is not the API's: one warning per distinct
        (status, content type) while the problem lasts."""
        key = (status, content_kind(content_type))
        if key != self._key:
            log.warning(
                "%s",
                sentence,
                extra={"provider": self.provider, "url": shown_url(url), "status": status},
            )
        self._key = key
        self.problem = sentence

    def answered(self) -> None:
        """The API answered as itself again."""
        if self.problem is not None:
            log.info("%s's API answers again", self.provider, extra={"provider": self.provider})
        self.problem = None
        self._key = None

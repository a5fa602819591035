"""A fake ntfy server (https://docs.ntfy.sh/publish/) on 127.0.0.1: ``POST /<topic>``
with the message as the body and ``Title``/``X-Title`` and ``Priority``/``X-Priority``
headers (RFC 2047-encoded values decoded, as ntfy's ``maybeDecodeHeader`` does),
answering the published message as JSON (``{"id", "time", "event": "message",
"topic", "message", ...}``). Invalid topics answer 400, as ntfy does; other answers
(429, 5xx) are scripted."""

from __future__ import annotations

import itertools
import re
import time
from dataclasses import dataclass
from email.header import decode_header, make_header

from aiohttp import web

from tests.fakes.http import FakeHTTPServer

_TOPIC = re.compile(r"^[-_A-Za-z0-9]{1,64}$")


@dataclass
class Published:
    topic: str
    message: str
    title: str | None
    priority: str | None
    id: str


def _header(request: web.Request, *names: str) -> str | None:
    for name in names:
        value = request.headers.get(name)
        if value is not None:
            return str(make_header(decode_header(value)))
    return None


class FakeNtfy(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__()
        self.published: list[Published] = []
        self._ids = itertools.count(1)

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/{topic}", self._publish)
        router.add_put("/{topic}", self._publish)

    async def _publish(self, request: web.Request) -> web.Response:
        topic = request.match_info["topic"]
        if not _TOPIC.match(topic):
            return web.json_response(
                {"code": 40009, "http": 400, "error": "invalid topic"}, status=400
            )
        message = (await request.read()).decode("utf-8")
        found = Published(
            topic,
            message,
            _header(request, "X-Title", "Title"),
            _header(request, "X-Priority", "Priority"),
            f"msg{next(self._ids):06d}",
        )
        self.published.append(found)
        answer = {
            "id": found.id,
            "time": int(time.time()),
            "event": "message",
            "topic": topic,
            "message": message,
        }
        if found.title:
            answer["title"] = found.title
        return web.json_response(answer)

"""A local iCalendar server: serves calendars by path with ETag and Last-Modified, and
answers 304 Not Modified to a matching If-None-Match or If-Modified-Since.

``fake.publish("/team.ics", text)`` sets (or changes) a calendar; each change gets a new
ETag and Last-Modified. Failures are scripted with :meth:`FakeHTTPServer.script`.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from aiohttp import web

from tests.fakes.http import FakeHTTPServer


class ICSServer(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__()
        self.calendars: dict[str, tuple[bytes, str, str]] = {}
        self._version = 0

    def publish(self, path: str, text: str) -> str:
        """Serve ``text`` at ``path``; returns its URL."""
        self._version += 1
        body = text.encode()
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        stamp = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=self._version)
        self.calendars[path] = (body, etag, format_datetime(stamp, usegmt=True))
        return self.url + path

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/{name:.*}", self._serve)

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        found = self.calendars.get(request.path)
        if found is None:
            return web.Response(status=404, text="no such calendar")
        body, etag, modified = found
        headers = {"ETag": etag, "Last-Modified": modified}
        if request.headers.get("If-None-Match") == etag or (
            "If-None-Match" not in request.headers
            and request.headers.get("If-Modified-Since") == modified
        ):
            return web.Response(status=304, headers=headers)
        return web.Response(body=body, headers=headers, content_type="text/calendar")

"""The CLI's API client mode (``HERALD_API_URL``) never sends its bearer token to
another address: two local HTTP servers on different ports, the first answering every
request with a redirect to the second, which records the headers it was sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from bot.cli.remote import Remote, RemoteError

TOKEN = "hk_0123456789ab_" + "S" * 43


class _Recorder(BaseHTTPRequestHandler):
    """Answers 200 ``{}`` and keeps the headers of every request."""

    seen: list[dict[str, str]]

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.seen.append(dict(self.headers))  # type: ignore[attr-defined]
        body = json.dumps({"member": "local:x"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class _Redirector(BaseHTTPRequestHandler):
    """Answers every request 307 to the server's ``target`` plus the path."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.seen.append(dict(self.headers))  # type: ignore[attr-defined]
        self.send_response(307)
        self.send_header("Location", self.server.target + self.path)  # type: ignore[attr-defined]
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def _serve(handler: type[BaseHTTPRequestHandler], **attrs: Any) -> Iterator[Any]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.seen = []  # type: ignore[attr-defined]
    for name, value in attrs.items():
        setattr(server, name, value)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def recorder() -> Iterator[Any]:
    yield from _serve(_Recorder)


def _url(server: Any, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{server.server_address[1]}"


def test_a_redirect_to_another_port_does_not_carry_the_token(recorder: Any) -> None:
    for first in _serve(_Redirector, target=_url(recorder)):
        with pytest.raises(RemoteError) as refused:
            Remote(_url(first), TOKEN).call("GET", "/me")
        # the first server had the token (it is HERALD_API_URL); the second never did
        assert first.seen[0]["Authorization"] == f"Bearer {TOKEN}"
        assert all("Authorization" not in h for h in recorder.seen)
        assert TOKEN not in str(refused.value)
        assert str(refused.value).startswith(
            f"Herald at {_url(first)} redirected the request to {_url(recorder)}, another address"
        )


def test_a_redirect_to_another_host_name_does_not_carry_the_token(recorder: Any) -> None:
    # the same port under another name (localhost for 127.0.0.1) is another origin too
    for first in _serve(_Redirector, target=_url(recorder, "localhost")):
        with pytest.raises(RemoteError, match="another address"):
            Remote(_url(first), TOKEN).call("GET", "/me")
    assert all("Authorization" not in h for h in recorder.seen)


def test_a_redirect_within_the_same_address_is_followed_with_the_token(recorder: Any) -> None:
    class Moved(_Redirector):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path.startswith("/old"):
                self.server.target = ""  # type: ignore[attr-defined]
                self.send_response(307)
                self.send_header("Location", "/v1/me")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            _Recorder.do_GET(self)  # type: ignore[arg-type]

    for server in _serve(Moved):
        remote = Remote(_url(server) + "/old", TOKEN)
        status, _, body = remote.call("GET", "/me")
        assert (status, body) == (200, {"member": "local:x"})
        assert server.seen[-1]["Authorization"] == f"Bearer {TOKEN}"

"""``herald console --serve``: textual-serve serves the console page behind a login, and a
logged-in browser's websocket from the served origin gets the same app (its overview)
rendered by ``python -m tui``, acting as the actor its login names. Without the secret,
or from a foreign origin, nothing is served; no command line holds a secret."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes.http import unused_port

pytest.importorskip("textual_serve")
aiohttp = pytest.importorskip("aiohttp")

ROOT = Path(__file__).parents[2]
SERVE = """
import sys
from core.settings import load_settings
from tui.app import run_console_served
settings = load_settings(USER="served")
run_console_served(settings, port=int(sys.argv[1]), host="127.0.0.1")
"""
#: In the database URL (a file name): must never show on a command line.
MARKER = "dbpass-7f3a9c"
OLIVE_SECRET = "olive-secret-0123456789abcdef"


@dataclass
class Served:
    proc: asyncio.subprocess.Process
    port: int
    secret: str
    db_url: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def login(self, session: aiohttp.ClientSession, secret: str) -> aiohttp.ClientResponse:
        async with session.post(
            f"{self.base}/login", data={"secret": secret}, allow_redirects=False
        ) as answer:
            await answer.read()
            return answer

    async def cookie(self, session: aiohttp.ClientSession, secret: str | None = None) -> str:
        answer = await self.login(session, secret or self.secret)
        assert answer.status == 303, answer.status
        morsel = answer.cookies["herald_console"]
        assert morsel["httponly"] and morsel["samesite"] == "Strict"
        return f"herald_console={morsel.value}"


async def start(tmp_path: Path, logins: str | None = None) -> AsyncIterator[Served]:
    port = unused_port()
    url = f"sqlite:///{tmp_path}/{MARKER}.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
    env |= {"HERALD_DATABASE_URL": url, "HERALD_ADMINS": "local:olive"}
    if logins is not None:
        path = tmp_path / "logins"
        path.write_text(logins)
        path.chmod(0o600)
        env["HERALD_CONSOLE_LOGINS_FILE"] = str(path)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SERVE,
        str(port),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=ROOT,
        env=env,
    )
    try:
        assert proc.stdout is not None
        printed = b""
        async with asyncio.timeout(30):
            while b"Login secret" not in printed and b"Logins from" not in printed:
                line = await proc.stdout.readline()
                assert line, f"the server exited; it printed {printed!r}"
                printed += line
        assert b"Only this machine can reach it" in printed  # 127.0.0.1, and it says so
        found = re.search(rb"Login secret \(shown once; acts as local:served\): (\S+)", printed)
        served = Served(proc, port, found.group(1).decode() if found else "", url)
        async with aiohttp.ClientSession() as session:
            for _ in range(100):
                try:
                    async with session.get(f"{served.base}/login") as response:
                        if response.status == 200:
                            break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.1)
        yield served
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            async with asyncio.timeout(10):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async for value in start(tmp_path):
        yield value


async def screen_text(ws: aiohttp.ClientWebSocketResponse, until: bytes) -> bytes:
    received = b""
    await ws.send_str(json.dumps(["resize", {"width": 100, "height": 30}]))
    async with asyncio.timeout(60):
        async for message in ws:
            data = message.data
            received += data if isinstance(data, bytes) else str(data).encode()
            if until in received:
                break
    return received


def proc_file(pid: int, name: str) -> bytes:
    return Path(f"/proc/{pid}/{name}").read_bytes()


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rpartition(")")[2].split()[1])
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


async def test_without_the_secret_nothing_is_served(served: Served) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{served.base}/", allow_redirects=False) as page:
            assert page.status == 303 and page.headers["Location"] == "/login"
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(f"{served.base}/ws", origin=served.base)
        assert refused.value.status == 401
        answer = await served.login(session, "not-the-secret")
        assert answer.status == 403 and "herald_console" not in answer.cookies
        with pytest.raises(aiohttp.WSServerHandshakeError) as still:
            headers = {"Cookie": "herald_console=guessed"}
            await session.ws_connect(f"{served.base}/ws", origin=served.base, headers=headers)
        assert still.value.status == 401
    assert descendants(served.proc.pid) == []  # no console process was started


async def test_a_foreign_origin_is_refused_even_with_the_cookie(served: Served) -> None:
    async with aiohttp.ClientSession() as session:
        cookie = await served.cookie(session)
        for origin in ("https://evil.example", f"http://127.0.0.1:{served.port + 1}", None):
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(
                    f"{served.base}/ws", origin=origin, headers={"Cookie": cookie}
                )
            assert refused.value.status == 403, origin
        # a page elsewhere that rebinds its own name to 127.0.0.1 names its own host
        async with session.get(
            f"{served.base}/", headers={"Cookie": cookie, "Host": "evil.example:8000"}
        ) as page:
            assert page.status == 421
    assert descendants(served.proc.pid) == []


async def test_the_logged_in_console_is_served_and_no_command_line_holds_a_secret(
    served: Served,
) -> None:
    async with aiohttp.ClientSession() as session:
        cookie = await served.cookie(session)
        async with session.get(f"{served.base}/", headers={"Cookie": cookie}) as page:
            assert "textual.js" in await page.text()
        ws_url = f"{served.base}/ws?width=100&height=30"
        async with session.ws_connect(ws_url, origin=served.base, headers={"Cookie": cookie}) as ws:
            # the header names who acts: the one who started it, the secret's actor
            received = await screen_text(ws, b"local:served")
            assert b"Overview" in received
            tabs = descendants(served.proc.pid)
            assert tabs, "no console process"
            for pid in [served.proc.pid, *tabs]:
                line = proc_file(pid, "cmdline").replace(b"\0", b" ")
                assert MARKER.encode() not in line and served.secret.encode() not in line, line
            # the URL travels in the environment (readable by the same user only)
            assert MARKER.encode() in proc_file(tabs[-1], "environ")


async def test_with_a_logins_file_each_browser_acts_as_its_login(tmp_path: Path) -> None:
    bob = "local:bob bob-secret-9f3k2m8q4x7w"
    logins = f"# who may use the console\nlocal:olive {OLIVE_SECRET}\n{bob}\n"
    async for served in start(tmp_path, logins):
        async with aiohttp.ClientSession() as session:
            cookie = await served.cookie(session, OLIVE_SECRET)
            ws_url = f"{served.base}/ws?width=100&height=30"
            headers = {"Cookie": cookie}
            async with session.ws_connect(ws_url, origin=served.base, headers=headers) as ws:
                received = await screen_text(ws, b"admin")
            assert b"local:olive" in received and b"admin" in received
            assert b"local:served" not in received


def test_the_command_textual_serve_runs_for_a_tab_holds_no_secret() -> None:
    """What textual-serve hands ``sh -c`` (a command line anyone on the machine can read
    while it runs) is the same for every tab and holds nothing of the settings."""
    from core.settings import load_settings
    from tui.serve import ConsoleServer, make_door

    settings = load_settings(
        HERALD_DATABASE_URL=f"postgresql://herald:{MARKER}@db.internal/herald",
        HERALD_ADMINS="local:olive",
        USER="served",
        _env_file=None,
    )
    door, secret = make_door(settings)
    server = ConsoleServer(settings, door, host="127.0.0.1", port=8000)
    assert secret and MARKER not in server.command and secret not in server.command
    assert server.command.endswith(" -m tui")
    tab = server.tab_environment("local:olive")
    assert tab["HERALD_DATABASE_URL"].endswith(f"{MARKER}@db.internal/herald")
    assert tab["HERALD_CONSOLE_ACTOR"] == "local:olive"

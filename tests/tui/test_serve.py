"""``run_console_served``: textual-serve serves the console page, and a browser's
websocket gets the same app (here: its overview) rendered by ``python -m tui``."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest

from tests.fakes.http import unused_port

pytest.importorskip("textual_serve")
aiohttp = pytest.importorskip("aiohttp")

SERVE = """
import sys
from core.settings import load_settings
from tui.app import run_console_served
settings = load_settings(HERALD_DATABASE_URL=sys.argv[1], USER="served", _env_file=None)
run_console_served(settings, port=int(sys.argv[2]), host="127.0.0.1")
"""


async def test_the_console_is_served_in_a_browser(tmp_path: Path) -> None:
    port = unused_port()
    url = f"sqlite:///{tmp_path}/served.db"
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SERVE,
        url,
        str(port),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=Path(__file__).parents[2],
    )
    try:
        async with aiohttp.ClientSession() as session:
            page = ""
            for _ in range(100):
                try:
                    async with session.get(f"http://127.0.0.1:{port}/") as response:
                        page = await response.text()
                        break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.1)
            assert "textual.js" in page
            received = b""
            ws_url = f"http://127.0.0.1:{port}/ws?width=100&height=30"
            async with session.ws_connect(ws_url) as ws:
                await ws.send_str(json.dumps(["resize", {"width": 100, "height": 30}]))
                async with asyncio.timeout(60):
                    async for message in ws:
                        data = message.data
                        received += data if isinstance(data, bytes) else str(data).encode()
                        if b"Overview" in received:
                            break
            assert b"Overview" in received
    finally:
        server.send_signal(signal.SIGINT)
        try:
            async with asyncio.timeout(10):
                await server.wait()
        except TimeoutError:
            server.kill()
            await server.wait()

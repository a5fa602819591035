"""``/readyz`` answers for writes too: a database that still answers reads but refuses
every write (a full disk, a read-only PostgreSQL) is not ready. The writes fail for real:
a SQLite file on a small file system filled to the last byte, a PostgreSQL session whose
transactions are read-only. And what ``/readyz`` says of a failure names no address."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy.engine import make_url

from bot.http import UNAVAILABLE, WRITE_PROBE_SECONDS, Readiness, make_http_app
from core import db
from core.clock import SystemClock
from core.dispatcher import Dispatcher
from core.store import Store
from tests.fakes.http import unused_port
from tests.support.store import aiosqlite_threads_done


class Ticks:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def readyz(url: str, ticks: Ticks) -> AsyncIterator[tuple[TestClient[Any, Any], Store]]:
    store = await Store.open(url, migrate=False)
    readiness = Readiness(store, Dispatcher(store, {}, clock=SystemClock()), clock=ticks)
    try:
        async with TestClient(TestServer(make_http_app(readiness))) as client:
            yield client, store
    finally:
        await store.close()


async def ask(client: TestClient[Any, Any]) -> tuple[int, dict[str, Any]]:
    answer = await client.get("/readyz")
    body = await answer.json()
    return answer.status, {name: (c["ok"], c["detail"]) for name, c in body["checks"].items()}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB file system of its own (tmpfs), to be filled (root only)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small file system to fill: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to its last byte; the filler file, to remove to free it."""
    filler = disk / "filler"
    # unbuffered: a write the disk took only part of leaves nothing for close() to
    # flush (buffered, the rest raised ENOSPC again on close, whenever the free space
    # was not a multiple of the chunk: it turned on the database's size)
    with filler.open("wb", buffering=0) as f:
        chunk = b"\0" * 65536
        try:
            while f.write(chunk):
                pass
        except OSError:
            pass
        try:
            while f.write(b"\0"):  # the last bytes a chunk did not fit in
                pass
        except OSError:
            pass
    stat = os.statvfs(disk)
    assert stat.f_bavail == 0, "the disk is not full"
    return filler


async def test_a_full_disk_is_not_ready_though_reads_still_work(small_disk: Path) -> None:
    url = f"sqlite:///{small_disk}/herald.db"
    await asyncio.to_thread(db.upgrade, url)
    ticks = Ticks()
    async with readyz(url, ticks) as (client, _):
        status, checks = await ask(client)
        assert status == 200, checks
        assert checks["writes"] == (True, "a write committed")

        filler = fill(small_disk)
        ticks.now += WRITE_PROBE_SECONDS
        status, checks = await ask(client)
        assert status == 503
        assert checks["database"] == (True, "reachable")  # a read still answers
        assert checks["migrations"][0] is True
        assert checks["writes"] == (False, "the database refused a write")

        filler.unlink()  # room again: ready again at the next probe
        ticks.now += WRITE_PROBE_SECONDS
        status, checks = await ask(client)
        assert status == 200, checks


async def test_a_read_only_postgresql_is_not_ready(pg_url: str) -> None:
    await asyncio.to_thread(db.upgrade, pg_url)
    options = make_url(pg_url).query["options"]
    read_only = make_url(pg_url).update_query_dict(
        {"options": f"{options} -cdefault_transaction_read_only=on"}
    )
    ticks = Ticks()
    async with readyz(read_only.render_as_string(hide_password=False), ticks) as (client, _):
        status, checks = await ask(client)
        assert status == 503
        assert checks["database"] == (True, "reachable")
        assert checks["writes"] == (False, "the database refused a write")
    async with readyz(pg_url, ticks) as (client, _):
        status, checks = await ask(client)
        assert (status, checks["writes"]) == (200, (True, "a write committed"))


async def test_the_write_probe_is_asked_at_most_every_few_seconds(sqlite_url: str) -> None:
    await asyncio.to_thread(db.upgrade, sqlite_url)
    ticks = Ticks()
    async with readyz(sqlite_url, ticks) as (client, store):
        writes = 0
        probe = store.write_probe

        async def counted() -> None:
            nonlocal writes
            writes += 1
            await probe()

        store.write_probe = counted  # type: ignore[method-assign]
        for _ in range(5):
            assert (await ask(client))[0] == 200
        assert writes == 1
        ticks.now += WRITE_PROBE_SECONDS
        await ask(client)
        assert writes == 2


@pytest.mark.parametrize("backend", ["postgres", "sqlite"])
async def test_readyz_says_unavailable_not_where(
    backend: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    port = unused_port()
    url = {
        "postgres": f"postgresql://herald_ops:pw-Sekrit-42@127.0.0.1:{port}/heralddb",
        "sqlite": f"sqlite:///{tmp_path}/no-such-dir/herald-secret-place.db",
    }[backend]
    caplog.set_level("WARNING")
    async with readyz(url, Ticks()) as (client, _):
        answer = await client.get("/readyz")
        text = await answer.text()
    await aiosqlite_threads_done()
    assert answer.status == 503
    checks = json.loads(text)["checks"]
    assert checks["database"] == {"ok": False, "detail": UNAVAILABLE}
    assert checks["migrations"] == {"ok": False, "detail": UNAVAILABLE}
    assert checks["writes"] == {"ok": False, "detail": "the database refused a write"}
    for part in ("127.0.0.1", str(port), "herald_ops", "heralddb", "pw-Sekrit-42", "no-such-dir"):
        assert part not in text
    # the operators' log keeps the cause, and no password
    causes = [r.error for r in caplog.records if r.getMessage().startswith("not ready")]  # type: ignore[attr-defined]
    assert causes and all("pw-Sekrit-42" not in c for c in causes)
    assert any(("127.0.0.1" if backend == "postgres" else "no-such-dir") in c for c in causes)

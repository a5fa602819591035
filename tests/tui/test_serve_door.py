"""The served console's door, in this process on a controlled clock: repeated bad logins
make their address wait longer and longer (not another address), and a logins file that
others can read, that holds something other than logins or a secret that is easy to
guess, is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from core.errors import ConfigError
from core.settings import load_settings
from tests.fakes.http import unused_port
from tui.serve import ConsoleServer, Door, Login, make_door, read_logins, weak_secret

SECRET = "the-right-secret-0123456789"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def door_at(sqlite_url: str) -> AsyncIterator[tuple[str, Clock]]:
    clock = Clock()
    settings = load_settings(HERALD_DATABASE_URL=sqlite_url, _env_file=None)
    door = Door([Login("local:olive", SECRET)], clock=clock)
    port = unused_port()
    server = ConsoleServer(settings, door, host="127.0.0.1", port=port)
    runner = web.AppRunner(await server._make_app())
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}", clock
    finally:
        await runner.cleanup()


async def login(base: str, secret: str, source: str = "127.0.0.1") -> int:
    connector = aiohttp.TCPConnector(local_addr=(source, 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.post(
            f"{base}/login", data={"secret": secret}, allow_redirects=False
        ) as answer:
            await answer.read()
            return answer.status


async def test_repeated_bad_logins_wait_longer_each_time(door_at: tuple[str, Clock]) -> None:
    base, clock = door_at
    assert await login(base, "guess-1") == 403
    assert await login(base, SECRET) == 429  # even the right one must wait its second
    clock.now += 1
    assert await login(base, "guess-2") == 403
    clock.now += 1
    assert await login(base, "guess-3") == 429  # the second wait is two seconds
    assert await login(base, SECRET, source="127.0.0.2") == 303  # another address
    clock.now += 1
    assert await login(base, SECRET) == 303


async def test_a_login_posted_from_another_page_is_refused(door_at: tuple[str, Clock]) -> None:
    base, _ = door_at
    async with aiohttp.ClientSession() as session:
        async with session.post(
            f"{base}/login",
            data={"secret": "guess"},
            headers={"Origin": "https://evil.example"},
            allow_redirects=False,
        ) as answer:
            assert answer.status == 403
    assert await login(base, SECRET) == 303  # and it cost the operator no wait


def test_a_logins_file_others_can_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "logins"
    path.write_text(f"local:olive {SECRET}\n")
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        read_logins(path)
    path.chmod(0o600)
    assert read_logins(path) == [Login("local:olive", SECRET)]


@pytest.mark.parametrize("line", ["olive " + SECRET, "local:olive short", "local:olive"])
def test_a_line_that_is_not_a_login_is_refused_by_number(tmp_path: Path, line: str) -> None:
    path = tmp_path / "logins"
    path.write_text(f"# people\nlocal:bob bob-secret-9f3k2m8q4x7w\n{line}\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError, match="Line 3 of") as refused:
        read_logins(path)
    assert SECRET not in str(refused.value)


WEAK = [
    "passwordpassword",
    "b" * 20,
    "iloveyouiloveyou",
    "qwertyuiopasdfgh",
    "P@ssw0rd12345678",
    "summer2024summer2024",
    "olive-olive-olive-olive",  # the login's own name, repeated
]


@pytest.mark.parametrize("weak", WEAK)
def test_a_weak_secret_is_refused_by_its_line(tmp_path: Path, weak: str) -> None:
    assert len(weak) >= 16  # long enough: its length alone would have let it in
    path = tmp_path / "logins"
    path.write_text(f"local:bob bob-secret-9f3k2m8q4x7w\nlocal:olive {weak}\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError) as refused:
        read_logins(path)
    sentence = str(refused.value)
    assert sentence.startswith(f"The secret on line 2 of {path} is too easy to guess")
    assert sentence.endswith(".") and sentence.count(". ") == 0  # one sentence
    assert weak not in sentence


@pytest.mark.parametrize(
    "strong", ["correct-horse-battery-staple", SECRET, "Tr0ub4dor&3-blue-kettle"]
)
def test_a_strong_secret_is_taken(tmp_path: Path, strong: str) -> None:
    path = tmp_path / "logins"
    path.write_text(f"local:olive {strong}\n")
    path.chmod(0o600)
    assert read_logins(path) == [Login("local:olive", strong)]


def test_the_secrets_herald_makes_are_strong(sqlite_url: str) -> None:
    settings = load_settings(HERALD_DATABASE_URL=sqlite_url, USER="olive", _env_file=None)
    for _ in range(20):
        _, secret = make_door(settings)
        assert secret is not None and not weak_secret(secret, settings.local_actor)


async def test_another_loopback_name_is_sent_to_the_public_one(door_at: tuple[str, Clock]) -> None:
    base, _ = door_at
    port = base.rpartition(":")[2]
    async with aiohttp.ClientSession() as session:
        async with session.get(f"http://localhost:{port}/login", allow_redirects=False) as page:
            assert page.status == 303 and page.headers["Location"] == f"{base}/login"

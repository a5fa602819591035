"""`herald run` runs on uvloop where it is installed (HERALD_EVENT_LOOP), on asyncio's own
loop when asked, and says so; demanding uvloop where it is missing is a clear error."""

from __future__ import annotations

import random
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from bot import service
from core.calendars import CalendarError, CalendarReader
from core.clock import SystemClock
from core.errors import ConfigError
from core.settings import load_settings
from tests.calendars.conftest import data
from tests.calendars.test_hostile import NEVER, TIMEOUT, calendar


async def _which() -> str:
    return service.loop_name()


@pytest.mark.parametrize(
    ("choice", "loop"), [("auto", "uvloop"), ("uvloop", "uvloop"), ("asyncio", "asyncio")]
)
def test_the_service_runs_on_the_loop_the_settings_choose(choice: str, loop: str) -> None:
    settings = load_settings(HERALD_EVENT_LOOP=choice, _env_file=None)
    assert service.run(_which(), settings) == loop


def test_auto_falls_back_to_asyncio_where_uvloop_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop: ImportError
    settings = load_settings(HERALD_EVENT_LOOP="auto", _env_file=None)
    assert service.run(_which(), settings) == "asyncio"


def test_demanding_uvloop_where_it_is_missing_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)
    settings = load_settings(HERALD_EVENT_LOOP="uvloop", _env_file=None)
    main = _which()
    with pytest.raises(ConfigError, match="uvloop is not installed.*HERALD_EVENT_LOOP=auto"):
        service.run(main, settings)
    assert main.cr_frame is None  # closed, never left half-started


def test_an_unknown_loop_is_refused_when_the_settings_load() -> None:
    with pytest.raises(ConfigError, match="HERALD_EVENT_LOOP.*auto.*uvloop.*asyncio"):
        load_settings(HERALD_EVENT_LOOP="trio", _env_file=None)


def test_on_uvloop_the_system_clock_never_wakes_a_sender_early() -> None:
    """uvloop's timers fire up to a millisecond early (asyncio.sleep on it returned early
    in a quarter of short sleeps, measured): the dispatcher's clock waits the rest, so no
    message leaves before its due time or its rate-limit slot."""

    async def shortest_margin() -> float:
        clock, rng = SystemClock(), random.Random(7)
        margins = []
        for _ in range(150):
            wanted = rng.uniform(0.0002, 0.003)
            started = time.monotonic()
            await clock.sleep(wanted)
            margins.append(time.monotonic() - started - wanted)
        return min(margins)

    settings = load_settings(HERALD_EVENT_LOOP="uvloop", _env_file=None)
    assert service.run(shortest_margin(), settings) >= 0


def test_on_uvloop_calendars_are_read_in_their_worker_process() -> None:
    """The service's calendar reads run in a child process (asyncio's subprocesses,
    which uvloop implements itself): a calendar is read, and a hostile one is stopped
    at its deadline, on the service's loop as on asyncio's."""
    since = datetime(2026, 3, 1, tzinfo=UTC)

    async def read() -> tuple[int, str]:
        reader = CalendarReader(timeout=10)
        found = await reader.instances(
            ("team", data("team.ics")), since, since + timedelta(days=60), "America/New_York"
        )
        with pytest.raises(CalendarError) as refused:
            await CalendarReader(timeout=1).check("x.ics", calendar(NEVER), since)
        return len(found), str(refused.value)

    settings = load_settings(HERALD_EVENT_LOOP="uvloop", _env_file=None)
    count, refusal = service.run(read(), settings)
    assert count == 11
    assert "x.ics" in refusal and TIMEOUT in refusal

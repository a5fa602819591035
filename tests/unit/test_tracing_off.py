"""Traces off (the default): OpenTelemetry is never imported, and core.tracing's calls
do nothing; on without the ``otel`` extra, a clear error."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core import tracing
from core.errors import ConfigError
from core.settings import load_settings

#: A fresh interpreter does what ``herald run`` does with traces off: logging set up,
#: a schedule created, a drain sending it (the ``log:`` channel), and the service with
#: its HTTP API built; then says which OpenTelemetry modules it imported.
SERVICE = """
import asyncio, json, sys
from datetime import UTC, datetime, timedelta

from bot import service
from bot.logs import configure_logging
from core import db
from core.cases import Herald
from core.clock import ManualClock
from core.settings import load_settings
from core.store import Store

url = sys.argv[1]
settings = load_settings(
    _env_file=None, HERALD_DATABASE_URL=url, HERALD_ADAPTERS="none", HERALD_LOG_LEVEL="DEBUG"
)
configure_logging(settings, stream=open(sys.argv[2], "w"))
db.upgrade(url)
start = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)

async def main() -> dict[str, int]:
    store = await Store.open(url)
    try:
        herald = Herald(store, settings, ManualClock(start))
        await herald.create_schedule("local:alice", to="log:", when="in 1 minute", text="hi")
    finally:
        await store.close()
    later = ManualClock(start + timedelta(minutes=2))
    summary = await service.drain(settings, retry_window=0, out=open(sys.argv[2], "a"), clock=later)
    stop = asyncio.Event()
    await service.serve(settings, stop=stop, ready=lambda *_: stop.set(), serve_http=False)
    return summary.as_dict()

delivered = asyncio.run(main())["delivered"]
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
print(json.dumps({"delivered": delivered, "opentelemetry": loaded}))
"""


def test_herald_with_traces_off_never_imports_opentelemetry(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'herald.db'}"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SERVICE), url, str(tmp_path / "log")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.splitlines()[-1])
    assert said == {"delivered": 1, "opentelemetry": []}


def test_off_every_call_does_nothing() -> None:
    assert not tracing.on
    assert not tracing.setup(load_settings(_env_file=None))
    with tracing.span("herald.claim", {"herald.claimed": 1}, root=True) as span:
        span.set_attribute("herald.claimed", 2)
        assert tracing.current_ids() is None
    assert span is tracing.NOTHING
    assert tracing.served("GET /v1/schedules", {}, {}) is tracing.NOTHING
    headers = {"webhook-id": "k"}
    tracing.inject(headers)
    tracing.note({"herald.schedule.id": 1})
    assert headers == {"webhook-id": "k"}


async def test_a_traced_coroutine_runs_as_it_is_when_off() -> None:
    @tracing.traced("herald.schedule.create")
    async def create(a: int, *, b: int) -> int:
        """Adds."""
        return a + b

    assert await create(1, b=2) == 3
    assert create.__doc__ == "Adds."


def test_on_without_the_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if not installed
    with pytest.raises(ConfigError, match=r"pip install 'herald\[otel\]'"):
        tracing.setup(load_settings(HERALD_OTEL="true", _env_file=None))
    assert not tracing.on

"""`herald run`: the dispatcher (and, when configured, the chat adapters) in one loop."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TextIO, TypeVar

from bot.adapters import Adapter, build_adapters
from bot.http import Readiness, make_http_app, start_http
from bot.http_guard import HttpLimits
from core import tracing
from core.cases import Herald
from core.channels import build_channels
from core.clock import Clock, SystemClock
from core.dispatcher import Dispatcher, DispatcherConfig, DrainSummary
from core.errors import ConfigError
from core.scrub import Scrubber
from core.settings import Settings
from core.store import Settled, Store

log = logging.getLogger(__name__)

#: How often iCalendar feeds and skip calendars are fetched again (ETag-conditional).
CALENDAR_REFRESH_SECONDS = 15 * 60
#: How often held messages' requests past their due time lapse (expire, or wait on).
APPROVALS_LAPSE_SECONDS = 30

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T], settings: Settings) -> T:
    """Run ``main`` (the service, a drain, a benchmark of either) to the end on the
    event loop ``HERALD_EVENT_LOOP`` chooses: uvloop where it is installed (``auto``),
    asyncio's own loop otherwise or when asked. uvloop runs the loop and its sockets in
    C: in the 2,000-webhook burst Herald delivers a fifth more a second on it than on
    asyncio's loop (interleaved rounds); nothing in Herald depends on which loop runs
    it. ConfigError when uvloop is demanded and missing."""
    try:
        factory = loop_factory(settings.event_loop)
    except ConfigError:
        main.close()  # never started: no "never awaited" warning beside the error
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


def loop_factory(choice: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The new-loop function for a ``HERALD_EVENT_LOOP`` value (None: asyncio's)."""
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise ConfigError(
                "HERALD_EVENT_LOOP=uvloop, but uvloop is not installed here: install it "
                "(pip install uvloop; it has no Windows build) or set HERALD_EVENT_LOOP=auto."
            ) from None
        return None
    return uvloop.new_event_loop


def loop_name() -> str:
    """``uvloop`` or ``asyncio``: the running event loop, as the start-up log says it."""
    return type(asyncio.get_running_loop()).__module__.partition(".")[0]


@asynccontextmanager
async def traces(settings: Settings) -> AsyncIterator[None]:
    """Traces on for the block when ``HERALD_OTEL`` says so (:func:`core.tracing.setup`),
    their last spans exported and traces off after it (in a thread: the exporter may
    wait on its collector)."""
    started = tracing.setup(settings)
    try:
        yield
    finally:
        if started:
            await asyncio.to_thread(tracing.shutdown)


async def drain(
    settings: Settings,
    *,
    retry_window: float,
    out: TextIO | None = None,
    clock: Clock | None = None,
) -> DrainSummary:
    """Deliver everything due, wait for retries within ``retry_window`` s, then stop."""
    async with traces(settings):
        return await _drain(settings, retry_window, out, clock or SystemClock())


async def _drain(
    settings: Settings, retry_window: float, out: TextIO | None, clock: Clock
) -> DrainSummary:
    store = await Store.open(settings.database_url)
    channels = build_channels(settings, log_stream=out)
    try:
        dispatcher = Dispatcher(
            store,
            channels,
            clock=clock,
            config=DispatcherConfig.from_settings(settings),
            scrubber=Scrubber.from_settings(settings),
        )
        return await dispatcher.drain(retry_window=retry_window)
    finally:
        for channel in channels.values():
            await channel.close()
        await store.close()


async def housekeeping(settings: Settings) -> dict[str, int]:
    """Prune old history and cap dead letters once (the service does it every hour)."""
    store = await Store.open(settings.database_url)
    try:
        dispatcher = Dispatcher(
            store, {}, clock=SystemClock(), config=DispatcherConfig.from_settings(settings)
        )
        return await dispatcher.housekeeping()
    finally:
        await store.close()


async def serve(
    settings: Settings,
    *,
    out: TextIO | None = None,
    observer: Callable[[Settled], None] | None = None,
    stop: asyncio.Event | None = None,
    ready: Callable[[Herald, Dispatcher], None] | None = None,
    serve_http: bool = True,
) -> None:
    """Run the dispatcher and the configured chat adapters until SIGINT/SIGTERM (or
    ``stop``), then shut down gracefully; with traces when ``HERALD_OTEL`` says so."""
    async with traces(settings):
        await _serve(settings, out, observer, stop or asyncio.Event(), ready, serve_http)


async def _serve(
    settings: Settings,
    out: TextIO | None,
    observer: Callable[[Settled], None] | None,
    stop: asyncio.Event,
    ready: Callable[[Herald, Dispatcher], None] | None,
    serve_http: bool,
) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread
            pass
    log.info("service starting", extra={"event": "service.start", "event_loop": loop_name()})
    store = await Store.open(settings.database_url)
    clock = SystemClock()
    channels = build_channels(settings, log_stream=out)
    adapters: list[Adapter] = []

    def fan_out(item: Settled) -> None:
        if observer is not None:
            observer(item)
        for adapter in adapters:
            try:
                adapter.on_finished(item)
            except Exception:  # an adapter bug must not stop deliveries
                log.exception(
                    "adapter failed on a delivery outcome", extra={"adapter": adapter.name}
                )

    dispatcher = Dispatcher(
        store,
        channels,
        clock=clock,
        config=DispatcherConfig.from_settings(settings),
        observer=fan_out,
        scrubber=Scrubber.from_settings(settings),
    )
    herald = Herald(
        store,
        settings,
        clock,
        on_due=dispatcher.wake,
        channels=channels,
        metrics=dispatcher.metrics,  # calendar refreshes are counted there
    )
    listener = asyncio.create_task(store.listen_due(dispatcher.wake), name="herald-listen")
    readiness = Readiness(store, dispatcher)
    http_app = make_http_app(readiness, herald)
    runner = None
    try:
        adapters.extend(build_adapters(settings, herald))
        for adapter in adapters:
            adapter.attach_http(http_app)  # e.g. Slack's HTTP mode: routes on the same server
            readiness.adapters[adapter.name] = adapter
        await herald.publish_calendar_metrics()  # before the first scrape, not the first refresh
        if serve_http:
            runner = await start_http(
                http_app, settings.http_host, settings.http_port, HttpLimits.from_settings(settings)
            )
        for adapter in adapters:
            await adapter.start()
            log.info("adapter started", extra={"adapter": adapter.name})
        if ready is not None:
            ready(herald, dispatcher)
        await dispatcher.serve(
            stop,
            periodic={
                "calendars": (herald.refresh_calendars, CALENDAR_REFRESH_SECONDS),
                # held messages' requests not decided by their due time (core.approvals)
                "approvals": (herald.lapse_approvals, APPROVALS_LAPSE_SECONDS),
            },
        )
    finally:
        if runner is not None:
            await runner.cleanup()
        for adapter in reversed(adapters):
            try:
                await adapter.stop()
            except Exception:
                log.exception("adapter failed to stop", extra={"adapter": adapter.name})
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        await store.close()

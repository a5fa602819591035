"""Traces (HERALD_OTEL on) through OpenTelemetry's in-memory exporter: a schedule made
through the HTTP API and its webhook sent by the dispatcher, each a span with ids,
kinds and outcomes only; the receiver and the API's caller get a ``traceparent`` that
joins them to the trace, and a line logged inside a span carries its ids."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import aiohttp
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, format_span_id, format_trace_id

import core.dispatcher.message as message
from bot.logs import TraceIds, configure_logging
from bot.service import serve, traces
from core import tracing
from core.cases import Herald
from core.channels.webhook import WebhookChannel
from core.clock import ManualClock, SystemClock
from core.dispatcher import Dispatcher, DrainSummary
from core.settings import load_settings
from core.store import Store
from tests.fakes import WebhookReceiver, unused_port
from tests.fakes.otlp import OtlpCollector
from tests.support.waiting import until

ALICE, ROOT = "local:alice", "local:root-admin"
TEXT = "the launch code is tangerine-42"
#: A caller's trace, as a W3C traceparent: version, trace id, parent id, flags.
CALLER_TRACE, CALLER_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Traces on, each span exported as it ends to memory; off again afterwards."""
    exporter = InMemorySpanExporter()
    assert tracing.setup(load_settings(HERALD_OTEL="true", _env_file=None), exporter=exporter)
    try:
        yield exporter
    finally:
        tracing.shutdown()
        assert not tracing.on


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def values_of(exporter: InMemorySpanExporter) -> list[str]:
    """Every attribute value of every span, as text."""
    return [str(v) for s in exporter.get_finished_spans() for v in (s.attributes or {}).values()]


def ids_of(said: logging.LogRecord | ReadableSpan) -> tuple[str, str]:
    """The trace and span ids a log record carries (bot.logs.TraceIds), or a span's."""
    if isinstance(said, logging.LogRecord):
        return said.__dict__["trace_id"], said.__dict__["span_id"]
    assert said.context is not None
    return format_trace_id(said.context.trace_id), format_span_id(said.context.span_id)


def joins(header: str, span: ReadableSpan) -> bool:
    """Whether a ``traceparent`` header names ``span`` as the parent (its trace id and
    span id; the flags say whether it was sampled and how its trace id was made)."""
    version, trace_id, parent_id, _flags = header.split("-")
    context = span.context
    assert context is not None
    return (version, trace_id, parent_id) == (
        "00",
        format_trace_id(context.trace_id),
        format_span_id(context.span_id),
    )


async def drained(herald: Herald, clock: ManualClock, channel: WebhookChannel) -> DrainSummary:
    """What a dispatcher sending webhooks through ``channel`` does with what is due."""
    try:
        return await Dispatcher(herald.store, {"webhook": channel}, clock=clock).drain()
    finally:
        await channel.close()


async def test_a_webhook_send_is_a_span_its_receiver_can_join(
    herald: Herald,
    clock: ManualClock,
    spans: InMemorySpanExporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="core.http_client")
    caplog.set_level(logging.DEBUG, logger="core.dispatcher")
    caplog.handler.addFilter(TraceIds())
    async with WebhookReceiver() as receiver:
        target = f"webhook:{receiver.hook_url}"
        schedule, _ = await herald.create_schedule(ALICE, to=target, when="in 5 minutes", text=TEXT)
        clock.advance(timedelta(minutes=5))
        summary = await drained(herald, clock, WebhookChannel(allow_private=True))
    assert summary.outcomes["delivered"] == 1

    [create] = named(spans, "herald.schedule.create")
    assert create.attributes == {"herald.schedule.id": schedule.id, "herald.surface": "unknown"}
    claims = named(spans, "herald.claim")
    assert [c.attributes["herald.claimed"] for c in claims if c.attributes][0] == 1
    [send] = named(spans, "herald.send")
    attributes = dict(send.attributes or {})
    assert attributes.pop("herald.lateness_s") >= 0
    assert attributes.pop("herald.job.id") > 0
    assert attributes == {
        "herald.schedule.id": schedule.id,
        "herald.channel.kind": "webhook",
        "herald.attempt": 1,
        "herald.outcome": "ok",
    }
    assert send.kind is SpanKind.CLIENT and send.parent is None  # a trace of its own
    [record] = named(spans, "herald.record")
    assert record.attributes == {"herald.jobs": 1}
    assert not [v for v in values_of(spans) if "tangerine" in v or "127.0.0.1" in v]

    [got] = receiver.received
    assert got.payload["text"] == TEXT
    assert joins(got.request.headers["traceparent"], send)
    # the request's line, said inside the send, and the outcome's, said when recorded
    [request] = [r for r in caplog.records if r.getMessage().startswith("HTTP Request: POST")]
    [outcome] = [r for r in caplog.records if r.getMessage() == "job delivered"]
    assert ids_of(request) == ids_of(outcome) == ids_of(send)
    assert not message.sent_in  # each send's span is let go once its outcome is said


async def test_a_channel_that_raises_marks_its_send(
    herald: Herald,
    clock: ManualClock,
    spans: InMemorySpanExporter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="core.dispatcher")
    caplog.handler.addFilter(TraceIds())

    class Broken(WebhookChannel):
        async def send(self, delivery: Any) -> Any:
            raise RuntimeError(f"broken while sending {delivery.body}")

    await herald.create_schedule(
        ALICE, to="webhook:https://example.com/h", when="in 1 minute", text=TEXT
    )
    clock.advance(60)
    summary = await drained(herald, clock, Broken())
    assert summary.outcomes["retrying"] == 1
    [send] = named(spans, "herald.send")
    assert send.attributes is not None and send.attributes["herald.outcome"] == "retry"
    [raised] = [r for r in caplog.records if r.getMessage() == "channel raised"]
    [retrying] = [r for r in caplog.records if r.getMessage() == "job retrying"]
    assert ids_of(raised) == ids_of(retrying) == ids_of(send)
    assert not [v for v in values_of(spans) if "tangerine" in v]


async def test_the_api_joins_its_callers_trace_and_answers_with_its_own(
    sqlite_url: str, spans: InMemorySpanExporter
) -> None:
    port = unused_port()
    settings = load_settings(
        _env_file=None,
        HERALD_DATABASE_URL=sqlite_url,
        HERALD_ADMINS=ROOT,
        HERALD_DEFAULT_TZ="UTC",
        HERALD_ADAPTERS="none",
        HERALD_HTTP_PORT=str(port),
        HERALD_OTEL="true",
    )
    store = await Store.open(sqlite_url)
    try:
        token = await Herald(store, settings, SystemClock()).create_token(ROOT, ALICE)
    finally:
        await store.close()
    stop = asyncio.Event()
    started: list[Herald] = []
    running = asyncio.create_task(serve(settings, stop=stop, ready=lambda h, _: started.append(h)))
    try:
        await until(lambda: started or running.done())
        headers = {
            "Authorization": f"Bearer {token.secret}",
            "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01",
        }
        body = {"to": "log:", "when": "tomorrow at 9:00", "text": TEXT}
        async with (
            aiohttp.ClientSession() as client,
            client.post(f"http://127.0.0.1:{port}/v1/schedules", json=body, headers=headers) as r,
        ):
            status, answer, answered = r.status, json.loads(await r.text()), r.headers
    finally:
        stop.set()
        await asyncio.wait_for(running, 30)
    assert tracing.on  # serve kept the traces it found on (the fixture turns them off)
    assert status == 201, answer

    [server] = named(spans, "POST /v1/schedules")
    assert server.kind is SpanKind.SERVER
    assert server.parent is not None and server.parent.is_remote
    assert format_trace_id(server.context.trace_id) == CALLER_TRACE
    assert format_span_id(server.parent.span_id) == CALLER_SPAN
    assert server.attributes is not None and server.attributes["http.response.status_code"] == 201
    assert joins(answered["traceparent"], server)
    [create] = named(spans, "herald.schedule.create")
    assert create.parent is not None and create.parent.span_id == server.context.span_id
    assert create.attributes == {"herald.schedule.id": answer["id"], "herald.surface": "api"}
    assert not [v for v in values_of(spans) if "tangerine" in v]


async def test_herald_run_exports_over_otlp_as_the_otel_variables_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No exporter given: spans go in batches over OTLP/HTTP to the endpoint the
    standard variables name, from a service named herald; all sent when it stops."""
    async with OtlpCollector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
        monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
        settings = load_settings(HERALD_OTEL="true", _env_file=None)
        async with traces(settings):
            assert tracing.on
            with tracing.span("herald.claim", root=True) as span:
                span.set_attribute("herald.claimed", 0)
        assert not tracing.on
    assert collector.span_names() == ["herald.claim"]
    assert collector.service_names() == {"herald"}


async def test_otel_service_name_names_the_service(monkeypatch: pytest.MonkeyPatch) -> None:
    async with OtlpCollector() as collector:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "herald-eu")
        async with traces(load_settings(HERALD_OTEL="true", _env_file=None)):
            with tracing.span("herald.record", {"herald.jobs": 0}):
                pass
    assert collector.service_names() == {"herald-eu"}


def test_json_logs_carry_the_ids_of_the_span_they_are_said_in(
    spans: InMemorySpanExporter,
) -> None:
    out = io.StringIO()
    settings = load_settings(HERALD_OTEL="true", HERALD_LOG_FORMAT="json", _env_file=None)
    configure_logging(settings, default_level="INFO", stream=out)
    log = logging.getLogger("herald.test")
    with tracing.span("herald.send", root=True):
        log.warning("inside")
    log.warning("outside")
    inside, outside = (json.loads(line) for line in out.getvalue().splitlines())
    [span] = named(spans, "herald.send")
    assert span.context is not None
    assert inside["trace_id"] == format_trace_id(span.context.trace_id)
    assert inside["span_id"] == format_span_id(span.context.span_id)
    assert "trace_id" not in outside

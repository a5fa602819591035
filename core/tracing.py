"""Traces through OpenTelemetry, when ``HERALD_OTEL`` is on: Herald's one face of them.

Off (the default), nothing here imports OpenTelemetry and every call costs a check of
the module's boolean :data:`on`: :func:`span` answers one shared context manager that
does nothing, :func:`inject` returns at once. Code on a hot path reads ``tracing.on``
first and builds a span's attributes only when it holds.

On, :func:`setup` (``herald run`` and ``herald drain`` call it once) builds a tracer
provider of Herald's own, never OpenTelemetry's global one, which exports in batches
over OTLP/HTTP configured by the standard ``OTEL_*`` variables (the endpoint, headers,
sampler, ``OTEL_SERVICE_NAME``: ``herald`` when unset). The spans: a request that
creates a schedule (``herald.schedule.create``), each claim (``herald.claim``), each
send (``herald.send``, the parent of its HTTP request; a webhook delivery carries its
W3C ``traceparent``) and each recording (``herald.record``). A span's attributes are
ids, kinds, counts and outcomes: never a message's text, an address or a secret.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar

from core.errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Tracer

    from core.settings import Settings

#: Whether traces are on (set by :func:`setup`, cleared by :func:`shutdown`).
on = False

#: The tracer provider :func:`setup` built, and its tracer (None while off).
_provider: TracerProvider | None = None
_tracer: Tracer | None = None

#: The name of Herald's tracer, and its service's when ``OTEL_SERVICE_NAME`` is unset.
NAME = "herald"

MISSING = (
    "HERALD_OTEL is on, but OpenTelemetry is not installed here: install Herald's otel "
    "extra (pip install 'herald[otel]') or set HERALD_OTEL=false."
)

Attributes = Mapping[str, str | int | float | bool]
P = ParamSpec("P")
R = TypeVar("R")
Call = Callable[P, Coroutine[Any, Any, R]]


class Span(Protocol):
    """What Herald does with a span: set an attribute once its value is known."""

    def set_attribute(self, key: str, value: Any) -> None: ...


class _Nothing:
    """The span and context manager of traces that are off: does nothing, shared."""

    def __enter__(self) -> _Nothing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set_attribute(self, key: str, value: Any) -> None:
        return None


NOTHING = _Nothing()


def setup(settings: Settings, *, exporter: SpanExporter | None = None) -> bool:
    """Turn traces on when ``settings.otel`` holds; True when this call did (its caller
    then calls :func:`shutdown`). Spans go to ``exporter`` as each ends (tests give an
    in-memory one), or by default in batches to the OTLP/HTTP exporter the ``OTEL_*``
    variables configure. Once per process: a call while traces are on keeps the
    provider there is (False). Raises ConfigError when the ``otel`` extra is not
    installed."""
    global on, _provider, _tracer
    if not settings.otel or on:
        return False
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        raise ConfigError(MISSING) from None
    provider = TracerProvider(resource=_resource())
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    else:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    _provider, _tracer = provider, provider.get_tracer(NAME)
    on = True
    return True


def _resource() -> Any:
    """The service's resource as the ``OTEL_*`` variables say, named ``herald`` when
    they name no service."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: NAME}))
    return resource


def shutdown() -> None:
    """Export the spans still waiting and turn traces off (nothing when off)."""
    global on, _provider, _tracer
    provider, _provider, _tracer, on = _provider, None, None, False
    if provider is not None:
        provider.shutdown()


def span(
    name: str, attributes: Attributes | None = None, *, root: bool = False, client: bool = False
) -> Any:
    """A context manager: a span named ``name`` with ``attributes``, current inside
    the block, whose ``as`` target takes more attributes (:class:`Span`). ``root``
    starts a trace of its own (the dispatcher's work, which no request waits for);
    ``client`` marks a call out (a send: the parent of its outgoing request). Off:
    :data:`NOTHING`."""
    if _tracer is None:
        return NOTHING
    from opentelemetry.context import Context
    from opentelemetry.trace import SpanKind

    kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
    return _current(name, Context() if root else None, kind, attributes)


@contextmanager
def _current(name: str, parent: Any, kind: Any, attributes: Attributes | None) -> Iterator[Span]:
    """A span current inside the block. An exception leaving it marks the span failed
    with the exception's class only: its words (a driver's, a provider's) may hold an
    address or a secret, so OpenTelemetry's own recording of them stays off."""
    from opentelemetry.trace import Status, StatusCode

    assert _tracer is not None
    with _tracer.start_as_current_span(
        name, parent, kind, attributes, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except BaseException as exc:
            current.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise


def served(name: str, headers: Mapping[str, str], attributes: Attributes) -> Any:
    """A context manager: the server span of an HTTP request, a child of the request's
    W3C ``traceparent`` when it has one; :data:`NOTHING` when off."""
    if _tracer is None:
        return NOTHING
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    return _current(name, propagate.extract(headers), SpanKind.SERVER, attributes)


def traced(name: str) -> Callable[[Call[P, R]], Call[P, R]]:
    """A decorator: each call of the coroutine function runs in a span ``name`` while
    traces are on (:func:`note` adds what it learns); off, a check of :data:`on`."""

    def decorate(function: Call[P, R]) -> Call[P, R]:
        @functools.wraps(function)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            if not on:
                return await function(*args, **kwargs)
            with span(name):
                return await function(*args, **kwargs)

        return run

    return decorate


def note(attributes: Attributes) -> None:
    """Add ``attributes`` to the current span (nothing when off)."""
    if not on:
        return
    from opentelemetry import trace

    trace.get_current_span().set_attributes(attributes)


def current_context() -> Any:
    """The current span's context, to say its ids again later (:func:`resumed`); None
    when traces are off."""
    if not on:
        return None
    from opentelemetry import trace

    return trace.get_current_span().get_span_context()


def resumed(context: Any) -> Any:
    """A context manager: the span of ``context`` (:func:`current_context`) current
    again, ended or not, so what is logged inside says its ids; :data:`NOTHING` when
    off or given None."""
    if context is None or not on:
        return NOTHING
    from opentelemetry import trace

    return trace.use_span(trace.NonRecordingSpan(context))


def inject(headers: MutableMapping[str, str]) -> None:
    """Add the current span's ``traceparent`` (and the propagators' other headers,
    ``OTEL_PROPAGATORS``) to an outgoing request's or an answer's ``headers``."""
    if not on:
        return
    from opentelemetry import propagate

    propagate.inject(headers)


def current_ids() -> tuple[str, str] | None:
    """The current span's trace id and span id in hex (as ``traceparent`` writes
    them), or None when traces are off or no span is current."""
    if not on:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return trace.format_trace_id(context.trace_id), trace.format_span_id(context.span_id)

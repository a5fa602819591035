"""An OpenTelemetry collector's OTLP/HTTP trace endpoint: ``POST /v1/traces`` with a
protobuf ``ExportTraceServiceRequest``, answered with an empty
``ExportTraceServiceResponse``, as the OTLP specification has it. Each request is kept
decoded in :attr:`OtlpCollector.exports`."""

from __future__ import annotations

from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.fakes.http import FakeHTTPServer

PROTOBUF = "application/x-protobuf"


class OtlpCollector(FakeHTTPServer):
    """Receives traces; :attr:`url` is what ``OTEL_EXPORTER_OTLP_ENDPOINT`` names."""

    def __init__(self) -> None:
        super().__init__()
        self.exports: list[ExportTraceServiceRequest] = []

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/traces", self._traces)

    async def _traces(self, request: web.Request) -> web.Response:
        if request.content_type != PROTOBUF:
            return web.Response(status=415)
        self.exports.append(ExportTraceServiceRequest.FromString(await request.read()))
        answer = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=answer, content_type=PROTOBUF)

    def service_names(self) -> set[str]:
        """The ``service.name`` of every resource exported."""
        return {
            attribute.value.string_value
            for export in self.exports
            for spans in export.resource_spans
            for attribute in spans.resource.attributes
            if attribute.key == "service.name"
        }

    def span_names(self) -> list[str]:
        return [
            span.name
            for export in self.exports
            for spans in export.resource_spans
            for scoped in spans.scope_spans
            for span in scoped.spans
        ]

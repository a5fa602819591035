"""Logging set-up: one event per line, human-readable or JSON (``HERALD_LOG_FORMAT``).

Code logs with ``extra={...}`` fields (job_id, schedule_id, destination kind, attempt,
outcome, duration_ms, worker); the formatters print them. Message text is never logged
at INFO, and a scrubber replaces any configured secret or credential-shaped string that
might slip into a line, a field or a traceback. With traces on, a line logged inside a
span carries its ``trace_id`` and ``span_id``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, TextIO

from pythonjsonlogger.json import JsonFormatter

from core import tracing
from core.scrub import Scrubber
from core.settings import Settings

#: Attributes every LogRecord has; anything else came in through ``extra=``.
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD and v is not None}


class HumanFormatter(logging.Formatter):
    """``2026-03-30T07:00:00.123Z INFO  herald.dispatcher  job delivered  job_id=1 …``"""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        fields = " ".join(f"{k}={v}" for k, v in _extras(record).items() if k != "event")
        line = f"{stamp.replace('+00:00', 'Z')} {record.levelname:<7} {record.name}  "
        line += record.getMessage() + (f"  {fields}" if fields else "")
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line += "\n" + record.exc_text
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


class JsonLineFormatter(JsonFormatter):
    """One JSON object per line: timestamp, level, logger, event and the extra fields."""

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        super().add_fields(log_data, record, message_dict)
        log_data["timestamp"] = (
            datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
        log_data["level"] = record.levelname
        log_data["logger"] = record.name
        log_data.setdefault("event", log_data.pop("message", record.getMessage()))
        for key in [k for k, v in log_data.items() if v is None]:
            del log_data[key]


class SecretScrubber(logging.Filter):
    """Scrubs a record before any handler formats it: its message, its string fields,
    its traceback and its stack (:class:`core.scrub.Scrubber`: configured secrets as
    ``***``, credential-shaped strings and URL paths hidden).

    A traceback is formatted here once, scrubbed, and kept as ``exc_text`` (``exc_info``
    is dropped, so no formatter can print the raw one again).
    """

    def __init__(self, scrubber: Scrubber | Iterable[str]) -> None:
        super().__init__()
        self.scrub = scrubber if isinstance(scrubber, Scrubber) else Scrubber(scrubber)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        scrubbed = self.scrub(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        for key, value in _extras(record).items():
            if isinstance(value, str):
                setattr(record, key, self.scrub(value))
        if record.exc_info:
            if not record.exc_text:
                record.exc_text = _TRACEBACKS.formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = self.scrub(record.stack_info)
        return True


class TraceIds(logging.Filter):
    """Adds ``trace_id`` and ``span_id`` to a record logged inside a span (traces on,
    :mod:`core.tracing`), so a line can be found in its trace and back. Installed only
    when ``HERALD_OTEL`` is on."""

    def filter(self, record: logging.LogRecord) -> bool:
        ids = tracing.current_ids()
        if ids is not None:
            record.trace_id, record.span_id = ids
        return True


#: Formats tracebacks for :class:`SecretScrubber` (the stdlib's own layout).
_TRACEBACKS = logging.Formatter()


#: Libraries' loggers held above INFO: httpx logs each request's full URL (a webhook
#: URL may carry a token), APScheduler a line per job run (sweeps every few seconds),
#: Apprise lines may quote the URL.
QUIETED_LOGGERS = {
    "httpx": logging.WARNING,
    "apscheduler": logging.WARNING,
    "alembic": logging.WARNING,
    "apprise": logging.ERROR,
}


def configure_logging(
    settings: Settings, *, default_level: str = "WARNING", stream: TextIO | None = None
) -> logging.Handler:
    """Send Herald's logs to ``stream`` (stderr) in the configured format."""
    handler = logging.StreamHandler(stream or sys.stderr)
    if settings.log_format == "json":
        handler.setFormatter(JsonLineFormatter())
    else:
        handler.setFormatter(HumanFormatter())
    handler.addFilter(SecretScrubber(Scrubber.from_settings(settings)))
    if settings.otel:
        handler.addFilter(TraceIds())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel((settings.log_level or default_level).upper())
    for name, level in QUIETED_LOGGERS.items():
        logging.getLogger(name).setLevel(level)
    return handler

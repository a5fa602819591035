"""The use-case layer's name of old: :class:`Herald` and the schedule checks, kept so
``from core.usecases import Herald`` goes on working. The use cases live in
:mod:`core.cases`."""

from core.cases import Herald
from core.cases.schedules import (
    MAX_KEY,
    MAX_TEXT,
    OPTIONS,
    ScheduleDetail,
    audit_summary,
    check_key,
    check_options,
    check_text,
)

__all__ = [
    "MAX_KEY",
    "MAX_TEXT",
    "OPTIONS",
    "Herald",
    "ScheduleDetail",
    "audit_summary",
    "check_key",
    "check_options",
    "check_text",
]

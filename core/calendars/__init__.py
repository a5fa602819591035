"""Calendars: skip a schedule's occurrences on a calendar's events, fetch calendars,
read them in worker processes, and export a member's schedules as one.

This ``__init__`` is the face: every module outside the package imports ``from
core.calendars import …`` (or ``from core import calendars``) and uses the names in
``__all__``, never a sub-module (an import-linter contract says so). Inside:

- ``skip.py``: the ``except … from <url>`` phrase, and a schedule's occurrences sent or
  skipped given its :class:`Blackouts` (pure);
- ``download.py``: fetching a calendar URL through the network guard, within
  :class:`FetchLimits` (httpx);
- ``read.py``: iCalendar text parsed and expanded, read as :class:`Blackouts` (pure,
  CPU-bound, for worker processes only: ``parse``, ``instances`` and ``blackouts`` run
  in-process only in tests and benchmarks);
- ``worker.py``: :class:`CalendarReader`, which runs ``read.py`` in a child process
  (``python -m core.calendars.worker``) under a deadline and a memory cap;
- ``write.py``: a member's schedules as an iCalendar file (:func:`export`).

The face is lazy: a name is imported from its sub-module when it is first asked for,
then kept here. ``python -m core.calendars.worker`` runs this file first, and a worker
must start in a tenth of a second: it may not pay for httpx, the network guard or the
schedule models it never uses.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what mypy and import-linter see; at run time __getattr__ imports
    from core.calendars.download import Fetched, FetchLimits, fetch
    from core.calendars.read import (
        HORIZON,
        MAX_INSTANCES,
        Blackouts,
        CalendarError,
        EventInstance,
        blackouts,
        instances,
        parse,
    )
    from core.calendars.skip import (
        is_url,
        next_allowed,
        schedule_upcoming,
        skip_preview,
        skipped_between,
        split_skip_phrase,
    )
    from core.calendars.worker import CalendarReader
    from core.calendars.write import export

#: Where each name of the face lives (a sub-module of this package).
_HOMES = {
    "Fetched": "download",
    "FetchLimits": "download",
    "fetch": "download",
    "HORIZON": "read",
    "MAX_INSTANCES": "read",
    "Blackouts": "read",
    "CalendarError": "read",
    "EventInstance": "read",
    "blackouts": "read",
    "instances": "read",
    "parse": "read",
    "is_url": "skip",
    "next_allowed": "skip",
    "schedule_upcoming": "skip",
    "skip_preview": "skip",
    "skipped_between": "skip",
    "split_skip_phrase": "skip",
    "CalendarReader": "worker",
    "export": "write",
}

__all__ = [
    "HORIZON",
    "MAX_INSTANCES",
    "Blackouts",
    "CalendarError",
    "CalendarReader",
    "EventInstance",
    "FetchLimits",
    "Fetched",
    "blackouts",
    "export",
    "fetch",
    "instances",
    "is_url",
    "next_allowed",
    "parse",
    "schedule_upcoming",
    "skip_preview",
    "skipped_between",
    "split_skip_phrase",
]


def __getattr__(name: str) -> Any:
    """A name of the face, imported from its sub-module on first use and kept as a
    module attribute (later uses are plain attribute lookups)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

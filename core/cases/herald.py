""":class:`Herald`, every use case over one store: the concerns of :mod:`core.cases`,
composed.

A class calls only what it or a class it derives from implements, and no method is
implemented twice, so the order of :class:`Herald`'s bases cannot change which
implementation runs (``tests/unit/test_architecture.py`` checks both).
"""

from __future__ import annotations

from core.cases.console import ConsoleCases
from core.cases.devices import DeviceCases
from core.cases.event_hooks import EventHookCases
from core.cases.members import MemberCases
from core.cases.notices import NoticeCases
from core.cases.preferences import PreferenceCases
from core.cases.reminders import ReminderCases
from core.cases.tokens import TokenCases


class Herald(
    ReminderCases,
    MemberCases,
    ConsoleCases,
    TokenCases,
    DeviceCases,
    PreferenceCases,
    EventHookCases,
    NoticeCases,
):
    """The use cases over one store, one clock and the settings: build it with
    ``Herald(store, settings, clock, on_due=…, channels=…, calendar_reader=…,
    metrics=…)`` (see :class:`~core.cases.base.CaseBase`)."""

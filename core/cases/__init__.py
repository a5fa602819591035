"""The use cases: every action a person can take, from any surface, is one method of
:class:`Herald`, which every surface calls; permissions, tenancy, quotas and the audit
log live here, once.

One class per concern, on :class:`~core.cases.base.CaseBase` (the store, clock,
settings, channels and the helpers the concerns share, all given to its constructor):

- :mod:`core.cases.members`: a member's zone, name, admin standing and role;
- :mod:`core.cases.calendars`: skip calendars, event feeds, refreshes, exports;
- :mod:`core.cases.schedules`: schedules, on the calendars they skip;
- :mod:`core.cases.reminders`: a reminder's Snooze and Done buttons, on schedules;
- :mod:`core.cases.dead_letters`: dead letters, retries and their answers;
- :mod:`core.cases.console`: the operator console, on schedules and dead letters;
- :mod:`core.cases.tokens`: the HTTP API's tokens (made, listed, revoked, read);
- :mod:`core.cases.importer`: bulk import (a function over :class:`Herald`).

A class calls only what it or a class it derives from implements, and no method is
implemented twice, so the order of :class:`Herald`'s bases cannot change which
implementation runs (``tests/unit/test_architecture.py`` checks both).
"""

from core.cases.console import ConsoleCases
from core.cases.members import MemberCases
from core.cases.reminders import ReminderCases
from core.cases.schedules import ScheduleDetail, check_text
from core.cases.tokens import TokenCases

__all__ = ["Herald", "ScheduleDetail", "check_text"]


class Herald(ReminderCases, MemberCases, ConsoleCases, TokenCases):
    """The use cases over one store, one clock and the settings: build it with
    ``Herald(store, settings, clock, on_due=…, channels=…, calendar_reader=…,
    metrics=…)`` (see :class:`~core.cases.base.CaseBase`)."""

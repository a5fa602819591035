"""Calendar fixtures: a local .ics server and the sample calendars (shared with the
Slack and Discord tests through tests/support/calendars.py; the store and use cases
come from tests/conftest.py: calendars are part of them)."""

from __future__ import annotations

from tests.support.calendars import DATA, data, ics

__all__ = ["DATA", "data", "ics"]

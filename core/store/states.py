"""Schedules by state as people read it (:func:`core.models.describe_state`), as SQL."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from core.models import Outcome, ScheduleState
from core.store.base import SCHEDULE

_OUTCOMES = {o.value for o in Outcome}
_HELD = (ScheduleState.PAUSED.value, ScheduleState.CANCELLED.value)


def _one(state: str) -> sa.ColumnElement[bool]:
    one_off = SCHEDULE.c.rrule.is_(None)
    if state == "pending":
        return sa.and_(
            one_off,
            SCHEDULE.c.state == ScheduleState.ACTIVE.value,
            SCHEDULE.c.last_outcome.is_(None),
        )
    if state in _OUTCOMES:
        # a paused or cancelled one-off reads as paused or cancelled
        return sa.and_(
            SCHEDULE.c.last_outcome == state,
            sa.or_(sa.not_(one_off), SCHEDULE.c.state.not_in(_HELD)),
        )
    if state == "ended":
        state = ScheduleState.COMPLETED.value
    condition: sa.ColumnElement[bool] = SCHEDULE.c.state == state
    return condition


def state_condition(states: Iterable[str]) -> sa.ColumnElement[bool]:
    """Schedules in any of ``states`` (see :data:`core.models.STATE_FILTERS`)."""
    return sa.or_(sa.false(), *(_one(s) for s in states))

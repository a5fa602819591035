"""Conditions the paged lists share (the console's lists, the dead-letter desk): a
prefix match, an error text's group key, and the keyset "after this row"."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

#: How much of an error text a list shows, and the key dead letters are grouped by.
REASON_CHARS = 80


def has_prefix(column: Any, prefix: str) -> Any:
    return sa.func.substr(column, 1, len(prefix)) == prefix


def reason_key(column: Any) -> Any:
    """An error text's first :data:`REASON_CHARS` characters ("" for none)."""
    return sa.func.substr(sa.func.coalesce(column, ""), 1, REASON_CHARS)


def keyset_after(columns: tuple[Any, Any], key: tuple[Any, int] | None, *, desc: bool) -> Any:
    """The keyset condition "after this row" for an ordering on (value, id)."""
    if key is None:
        return sa.true()
    value, row_id = key
    column, ids = columns
    if desc:
        return sa.and_(column <= value, sa.or_(column < value, ids < row_id))
    return sa.and_(column >= value, sa.or_(column > value, ids > row_id))

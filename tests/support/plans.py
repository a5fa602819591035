"""Statement plans on PostgreSQL, with the rows each node really produced: the
hot-path tests assert their claims do work in proportion to the batch, not the table."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import sqlalchemy as sa

from core import db
from core.store import Store


@asynccontextmanager
async def explained_store(pg_url: str) -> AsyncIterator[tuple[Store, list[dict[str, Any]]]]:
    """A store whose every statement's plan (with actual rows) lands in the list."""
    db.upgrade(pg_url)
    store = await Store.open(pg_url)
    plans: list[dict[str, Any]] = []

    def on_notice(diag: Any) -> None:
        text = diag.message_primary or ""
        if "{" in text:
            plans.append(json.loads(text[text.index("{") :]))

    @sa.event.listens_for(store._engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.driver_connection.add_notice_handler(on_notice)
        cursor = dbapi_connection.cursor()
        for statement in (
            "LOAD 'auto_explain'",
            "SET auto_explain.log_min_duration = 0",
            "SET auto_explain.log_analyze = on",
            "SET auto_explain.log_format = json",
            "SET auto_explain.log_level = notice",
        ):
            cursor.execute(statement)
        cursor.close()

    try:
        yield store, plans
    finally:
        await store.close()


def work(node: dict[str, Any]) -> float:
    """Rows every node of a plan produced, over all its loops."""
    own = node.get("Actual Rows", 0) * node.get("Actual Loops", 1)
    return own + sum(work(child) for child in node.get("Plans", []))

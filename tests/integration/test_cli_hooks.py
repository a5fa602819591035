"""``herald hooks`` and ``herald events`` (issue 38), run through the CLI's own commands
in process on SQLite and PostgreSQL, as the terminal's admin: a hook added shows its
secret once, is listed with its URL redacted, removed and enabled; the pull feed prints
JSON lines and a cursor to read on from."""

from __future__ import annotations

import io
import json

import pytest
import sqlalchemy as sa

from bot.cli.commands import Cli
from bot.cli.hooks import TYPES
from bot.cli.main import COMMANDS, handler
from bot.cli.parser import build_parser
from core.actors import Principal, Surface
from core.cases import Herald
from core.errors import NotFound
from core.events import EVENT_TYPES
from core.settings import Settings

ADMIN = "local:root-admin"  # HERALD_ADMINS of the conftest's settings


async def cli(herald: Herald, settings: Settings, *argv: str) -> str:
    """What ``herald <argv>`` prints, run as the terminal's admin."""
    args = build_parser().parse_args(list(argv))
    out = io.StringIO()
    command = Cli(args, settings, out)
    command.actor = Principal(ADMIN, surface=Surface.CLI)
    await handler(COMMANDS[args.command]).action.with_herald(command, herald)  # type: ignore[attr-defined]
    return out.getvalue()


def test_the_grammar_knows_every_event_type() -> None:
    assert TYPES == EVENT_TYPES


async def test_add_list_enable_remove(herald: Herald, settings: Settings) -> None:
    said = await cli(
        herald,
        settings,
        "hooks",
        "add",
        "https://hooks.example.com/in/t0ken",
        "--type",
        "job.dead",
        "--type",
        "job.delivered",
        "--key-prefix",
        "order-",
    )
    first, second = said.splitlines()
    assert first == "Event hook 1 hears job.dead, job.delivered."
    assert second.startswith("Its signing secret (shown this once): whsec_")
    listed = await cli(herald, settings, "hooks", "list")
    assert "https://hooks.example.com/…" in listed and "t0ken" not in listed
    assert "whsec_" not in listed and " ok" in listed
    shown = json.loads(await cli(herald, settings, "hooks", "list", "--json"))
    assert [(h["id"], h["key_prefix"], h["tenant_wide"]) for h in shown] == [(1, "order-", True)]
    enabled = await cli(herald, settings, "hooks", "enable", "1")
    # the events not recorded while it was disabled are not promised
    assert "enabled" in enabled and "missed" not in enabled and "stopped at" in enabled
    assert "removed" in await cli(herald, settings, "hooks", "remove", "1")
    assert "No event hook yet" in await cli(herald, settings, "hooks", "list")
    with pytest.raises(NotFound):
        await cli(herald, settings, "hooks", "remove", "1")


async def test_events_prints_json_lines_and_a_cursor(herald: Herald, settings: Settings) -> None:
    async with herald.store._engine.begin() as conn:
        for n in range(3):
            await conn.execute(
                sa.text(
                    "INSERT INTO event (tx, tenant, type, at, schedule_id, job_id, owner, key, "
                    "data) VALUES (1, 'local', 'job.dead', :at, 2, 5, 'local:alice', :key, :data)"
                ),
                {"at": herald.clock.now(), "key": f"k{n}", "data": json.dumps({"n": n})},
            )
    lines = [
        json.loads(x) for x in (await cli(herald, settings, "events", "--limit", "2")).splitlines()
    ]
    assert [e["data"]["n"] for e in lines[:-1]] == [0, 1]
    assert lines[0]["id"].startswith("evt_") and lines[0]["type"] == "job.dead"
    cursor = lines[-1]["next_cursor"]
    rest = [
        json.loads(x)
        for x in (await cli(herald, settings, "events", "--after", cursor)).splitlines()
    ]
    assert [e["data"]["n"] for e in rest[:-1]] == [2]

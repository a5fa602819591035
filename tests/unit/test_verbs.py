"""The table of verbs (core/verbs.py) and the surfaces that read it agree."""

from __future__ import annotations

import argparse
import inspect
from typing import Any

import pytest

from core import verbs
from core.errors import InvalidInput
from core.usecases import Herald
from core.verbs import VERBS, Verb


def _words(surface: str, chosen: tuple[Verb, ...]) -> set[str]:
    return {word for v in verbs.offered(surface, chosen) for word in v.words}


@pytest.mark.parametrize("v", VERBS, ids=lambda v: v.name)
def test_every_verb_names_a_use_case_it_can_call(v: Verb) -> None:
    method = getattr(Herald, v.method, None)
    assert method is not None and inspect.iscoroutinefunction(method), v.method
    params = inspect.signature(method).parameters
    assert list(params)[:2] == ["self", "actor_id"]
    if v.takes == "schedule_id+version":
        assert "expected_version" in params
    if v.takes in ("schedule_id", "schedule_id+version"):
        assert list(params)[2] == "schedule_id"
    if v.takes == "job_ids":
        assert list(params)[2] == "job_ids"
    for option in v.options:
        assert option in params, (v.name, option)
    assert v.who in ("owner", "operator", "admin")
    assert v.surfaces and v.surfaces <= verbs.SURFACES
    assert v.help and v.past


def test_every_word_names_one_verb() -> None:
    words = [word for v in VERBS for word in v.words]
    assert len(words) == len(set(words))
    assert all(w == w.lower() and w.strip() == w for w in words)


def test_verb_reads_names_and_aliases_and_refuses_others_with_a_hint() -> None:
    assert verbs.verb("delete") is verbs.verb("cancel") is verbs.verb(" Remove ")
    assert verbs.verb("skip").method == "skip_next"
    with pytest.raises(InvalidInput, match='Did you mean "pause"'):
        verbs.verb("paus")
    with pytest.raises(InvalidInput, match="not something Herald does"):
        verbs.verb("xyzzy")


async def test_perform_calls_the_verbs_use_case() -> None:
    calls: list[tuple[str, Any, tuple[Any, ...], dict[str, Any]]] = []

    class Fake:
        def __getattr__(self, name: str) -> Any:
            async def call(actor: Any, *args: Any, **kwargs: Any) -> str:
                calls.append((name, actor, args, kwargs))
                return name

            return call

    assert await verbs.perform(Fake(), "delete", "me", 12, expected_version=3) == (
        "cancel_schedule"
    )
    assert calls == [("cancel_schedule", "me", (12,), {"expected_version": 3})]


def test_the_cli_offers_what_the_table_says() -> None:
    from bot.cli_parser import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    commands = set(sub.choices)
    schedule_verbs = tuple(v for v in VERBS if v.takes != "job_ids")
    table = _words(verbs.CLI, schedule_verbs)
    assert table <= commands
    others = {w for v in schedule_verbs if not v.offered_on(verbs.CLI) for w in v.words}
    assert not (others & commands)
    dead = sub.choices["dead"]
    dsub = next(a for a in dead._actions if isinstance(a, argparse._SubParsersAction))
    assert _words(verbs.CLI, verbs.DEAD_VERBS) <= set(dsub.choices)
    for v in verbs.offered(verbs.CLI, verbs.STATE_VERBS):
        for word in v.words:
            assert parser.parse_args([word, "1"]).command == v.name


def test_slack_offers_what_the_table_says() -> None:
    from bot.slack import grammar

    schedule_verbs = tuple(v for v in VERBS if v.takes in ("schedule_id", "schedule_id+version"))
    table = _words(verbs.SLACK, schedule_verbs)
    assert set(grammar.VERBS) | set(grammar.ALIASES) == table
    for word in table:
        assert grammar.parse(f"{word} 7") == grammar.Act(verbs.verb(word).name, 7)
    assert "list" in grammar.KEYWORDS and verbs.verb("list").offered_on(verbs.SLACK)


def test_discord_offers_what_the_table_says() -> None:
    from bot.discord_bot.commands import ScheduleGroup

    commands = {c.name for c in ScheduleGroup().commands}
    schedule_verbs = tuple(v for v in VERBS if v.takes != "job_ids")
    assert _words(verbs.DISCORD, schedule_verbs) <= commands
    others = {w for v in schedule_verbs if not v.offered_on(verbs.DISCORD) for w in v.words}
    assert not (others & commands)


def test_the_console_offers_what_the_table_says() -> None:
    from tui.screens import schedules

    actions = {b.action for b in schedules.SchedulesScreen.BINDINGS}  # type: ignore[union-attr]
    offered = set(schedules.BULK) | {
        a.removeprefix("bulk('").removesuffix("')") for a in actions if a.startswith("bulk(")
    }
    offered |= {a for a in actions if a in ("edit", "skip")}
    table = {
        v.name for v in verbs.offered(verbs.CONSOLE) if v.takes != "job_ids" and v.name != "list"
    }
    assert offered == table
    for name in schedules.BULK:
        assert verbs.verb(name).offered_on(verbs.CONSOLE)

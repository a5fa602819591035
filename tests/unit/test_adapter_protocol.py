"""Every chat adapter has what ``herald run`` and ``/readyz`` ask of it: the members of
:class:`bot.adapters.Adapter`, each of the same kind (property, method, coroutine) and
with the same parameters. mypy is strict over ``core`` only, so this test is what keeps
the adapters and the protocol together (issue 34)."""

from __future__ import annotations

import inspect
from typing import Any, cast

import pytest

from bot.adapters import Adapter, build_adapters
from bot.discord_bot import DiscordAdapter
from bot.slack import SlackAdapter
from core.cases import Herald
from core.settings import load_settings

ADAPTERS = [SlackAdapter, DiscordAdapter]

#: The protocol's own members (not those every class has).
MEMBERS = sorted(
    name
    for name in {*vars(Adapter), *Adapter.__annotations__}
    if not name.startswith("_") and name not in vars(object)
)


def kind(member: Any) -> str:
    if isinstance(member, property):
        return "property"
    if inspect.iscoroutinefunction(member):
        return "coroutine"
    if inspect.isfunction(member):
        return "method"
    return "attribute"


def parameters(member: Any) -> list[str]:
    function = member.fget if isinstance(member, property) else member
    return list(inspect.signature(function).parameters)


def test_the_protocol_declares_what_the_service_calls() -> None:
    assert MEMBERS == [
        "attach_http",
        "connected",
        "name",
        "on_finished",
        "problem",
        "start",
        "stop",
    ]


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.__name__)
def test_each_adapter_has_every_member_of_the_protocol(adapter: type) -> None:
    for name in MEMBERS:
        assert hasattr(adapter, name), f"{adapter.__name__} has no {name}"
        declared = vars(Adapter).get(name)
        found = inspect.getattr_static(adapter, name)
        if declared is None:  # an attribute: the adapter's name
            assert isinstance(found, str), f"{adapter.__name__}.{name}"
            continue
        assert kind(found) == kind(declared), f"{adapter.__name__}.{name}"
        assert parameters(found) == parameters(declared), f"{adapter.__name__}.{name}"


def test_the_adapters_built_for_herald_run_are_adapters() -> None:
    settings = load_settings(
        _env_file=None,
        HERALD_DATABASE_URL="sqlite:///unused.db",
        SLACK_BOT_TOKEN="xoxb-unused",
        SLACK_SIGNING_SECRET="unused",
        DISCORD_BOT_TOKEN="unused",
        HERALD_ADAPTERS="slack,discord",
    )
    adapters = build_adapters(settings, cast(Herald, object()))  # kept, not called
    assert [type(a) for a in adapters] == ADAPTERS
    for adapter in adapters:
        assert isinstance(adapter, Adapter)

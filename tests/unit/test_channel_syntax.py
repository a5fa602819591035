"""Each channel declares its destinations' syntax; the registry reads only that."""

import pytest

from core.channels import CHANNEL_TYPES, URI_SYNTAXES, build_channels, parse_destination
from core.channels.base import Channel
from core.settings import Settings


@pytest.mark.parametrize("channel", CHANNEL_TYPES, ids=lambda c: c.kind)
def test_a_channel_declares_the_syntax_of_its_kind(channel: type[Channel]) -> None:
    syntax = channel.uri
    assert syntax.kind == channel.kind
    parsed = parse_destination(syntax.example)
    assert parsed.kind == channel.kind
    assert parsed.syntax is syntax  # a destination carries its kind's syntax
    assert set(syntax.settings) <= set(Settings.model_fields), syntax.settings


def test_every_channel_built_has_its_syntax_read_by_the_parser() -> None:
    built = build_channels(Settings(_env_file=None))  # type: ignore[call-arg]
    assert set(built) == set(URI_SYNTAXES)

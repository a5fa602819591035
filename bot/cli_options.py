"""What ``herald schedule``'s options mean, and how a table prints, without importing
the store: the local commands and the ones that talk to a running service
(bot/cli_remote.py) share them."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any, TextIO

from core.errors import InvalidInput


def open_text(path: str) -> TextIO:
    try:
        return open(path, encoding="utf-8")  # noqa: SIM115 - closed by the caller's with
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc.strerror}.") from exc


def json_arg(name: str, value: str) -> Any:
    """``--name``'s JSON, given inline or as ``@FILE``."""
    text = value
    if value.startswith("@"):
        with open_text(value[1:]) as f:
            text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"--{name} is not valid JSON ({exc.msg} at column {exc.colno})."
        ) from exc


def schedule_options(a: argparse.Namespace) -> dict[str, Any]:
    """The channel options ``herald schedule`` was given (sender name, icon, subject,
    Slack blocks, Discord embeds)."""
    options: dict[str, Any] = {}
    if a.username:
        options["username"] = a.username
    if a.icon_url:
        options["icon_url"] = a.icon_url
        options["avatar_url"] = a.icon_url
    if a.subject:
        options["subject"] = a.subject
    if a.blocks:
        options["blocks"] = json_arg("blocks", a.blocks)
    if a.embeds:
        options["embeds"] = json_arg("embeds", a.embeds)
    return options


def table_lines(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A table as lines: columns as wide as their widest cell; the last (free text) is
    not padded."""
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header) - 1)]
    lines = []
    for row in (header, *rows):
        cells = [f"{cell:<{w}}" for cell, w in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return lines

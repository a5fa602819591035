"""What ``herald schedule``'s options mean, and how a table prints, without importing
the store: the local commands and the ones that talk to a running service
(bot/cli/remote.py) share them."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from core.errors import InvalidInput


def open_text(path: str) -> TextIO:
    try:
        return open(path, encoding="utf-8")  # noqa: SIM115 - closed by the caller's with
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc.strerror}.") from exc


def say_not_created(schedule_id: int | None, key: str | None) -> None:
    """On stderr: ``herald schedule --key`` found its schedule already made (the local
    command and the remote one say the same)."""
    print(  # noqa: T201 - CLI output
        f"Schedule {schedule_id} already exists with key {key!r}; nothing new created.",
        file=sys.stderr,
    )


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


def recipients_arg(chains: Sequence[Sequence[str]] | None) -> list[str | dict[str, Any]]:
    """The recipients ``--to`` and ``--then`` named (bot/cli/parser.py keeps them as
    chains, in order), as core and the API take them: a destination, or a chain
    ``{"first_of": [...]}``."""
    return [chain[0] if len(chain) == 1 else {"first_of": list(chain)} for chain in chains or ()]


def priority_marked(state: str, priority: str) -> str:
    """A list's STATE, with a priority other than normal after it: ``active !urgent``,
    ``pending bulk`` (normal, by far the most, adds nothing to read)."""
    if priority == "urgent":
        return f"{state} !urgent"
    return state if priority in ("normal", "") else f"{state} {priority}"


def step_timeout_arg(text: str | None) -> float | None:
    """``--step-timeout``'s seconds: ``10m``, ``1h``, ``90s`` (a bare number is minutes)."""
    if text is None:
        return None
    from core.timeexpr import parse_duration

    return parse_duration(text, bare="m").total_seconds()


#: The widest line a table prints with a ``width`` (a terminal of 100 columns).
TABLE_WIDTH = 100


def table_lines(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    width: int | None = None,
    least: Sequence[int] | None = None,
) -> list[str]:
    """A table as lines: columns as wide as their widest cell; the last (free text) is
    not padded. With ``width``, lines longer than that are narrowed: the last column
    first, down to its least width (``least``, one per column; default 8), then the
    column most over its least, a character at a time; a cell cut ends with "…"."""
    count = len(header)
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(count)]
    floor = [min(f, w) for f, w in zip(least or [8] * count, widths, strict=True)]
    excess = 0 if width is None else sum(widths) + 2 * (count - 1) - width
    if excess > 0:  # the free text gives way first
        step = min(excess, widths[-1] - floor[-1])
        widths[-1] -= step
        excess -= step
    while excess > 0:
        over = [w - f for w, f in zip(widths, floor, strict=True)]
        most = max(range(count), key=lambda i: (over[i], i))  # ties: the later column
        if over[most] <= 0:
            break  # every column at its least: the line stays longer
        second = max((o for i, o in enumerate(over) if i != most), default=0)
        step = max(1, min(excess, over[most] - max(second, 0)))
        widths[most] -= step
        excess -= step
    lines = []
    for row in (header, *rows):
        cells = [_cut(cell, w) for cell, w in zip(row, widths, strict=True)]
        padded = [f"{cell:<{w}}" for cell, w in zip(cells[:-1], widths, strict=False)]
        lines.append("  ".join([*padded, cells[-1]]).rstrip())
    return lines


def one_line(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the last of them "…" when cut."""
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def data_arg(pairs: Sequence[str] | None, option: str = "--data") -> dict[str, str]:
    """``--data service=api --data version=1.4`` as a template's data (values as text:
    core reads a number or a date of the variable's kind)."""
    data: dict[str, str] = {}
    for pair in pairs or ():
        name, sign, value = pair.partition("=")
        name = name.strip()
        if not sign or not name:
            raise InvalidInput(
                f"{option} takes NAME=VALUE (e.g. {option} service=api), not {pair[:60]!r}."
            )
        if name in data:
            raise InvalidInput(f"{option} gives {name!r} twice: give each value once.")
        data[name] = value
    return data


def data_for_arg(given: Sequence[Sequence[str]] | None) -> dict[str, dict[str, str]]:
    """``--data-for DEST NAME=VALUE`` (repeatable) as a template's data per recipient,
    keyed by the recipient's first destination."""
    by: dict[str, list[str]] = {}
    for destination, pair in given or ():
        by.setdefault(destination, []).append(pair)
    return {d: data_arg(pairs, f"--data-for {d}") for d, pairs in by.items()}


def template_data(
    a: argparse.Namespace,
) -> tuple[dict[str, str] | None, dict[str, dict[str, str]] | None]:
    """``herald schedule``/``edit``'s --data and --data-for (None: not given)."""
    data = data_arg(a.data) if a.data else None
    by = data_for_arg(a.data_for) if a.data_for else None
    return data, by

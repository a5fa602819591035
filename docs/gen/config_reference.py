"""docs/reference/configuration.md: every setting of :class:`core.settings.Settings`,
read from the model (variable, type, default) and its source (the ``#:`` comment above
each field, or the field's ``description``).

The page has a section per class that declares settings (the core's, then each
platform's in core/channel_settings/), split where the class's source has a plain
``# heading`` comment between its fields. Secrets never show a default; a default
made by a function is described in words (:data:`FACTORY_WORDS`), never computed here,
so the page is the same on every machine. A setting with no description stops the
generator (:func:`render` raises :class:`Undescribed` naming them all): the page
never shows a setting it does not explain.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import time
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import AliasChoices, BaseModel, SecretStr
from pydantic.fields import FieldInfo

from core.settings import Settings, default_database_url
from docs.gen import escape_cell

PATH = "docs/reference/configuration.md"

#: How each default made by a function reads on the page. A factory missing here stops
#: the generator: its value may be this machine's (a path, a user name).
FACTORY_WORDS: dict[Callable[[], Any], str] = {
    default_database_url: (
        "one SQLite file per user, `herald.db` in the platform's user data folder "
        "(`~/.local/share/herald` on Linux, `~/Library/Application Support/herald` "
        "on macOS, `%LOCALAPPDATA%\\herald` on Windows); `herald info` shows it"
    ),
    dict: "empty",
}

#: What a section is called, by the class that declares its settings.
SECTION_TITLES = {
    "Settings": "Core",
    "SlackSettings": "Slack",
    "DiscordSettings": "Discord",
    "EmailSettings": "Email (SMTP)",
    "WebhookSettings": "Webhooks",
    "ProviderSettings": "Email, SMS and push providers",
}

_TYPE_WORDS: dict[Any, str] = {
    str: "text",
    int: "integer",
    float: "number",
    bool: "boolean (`true`/`false`)",
    time: "time of day (`09:00`, `9am`)",
    SecretStr: "secret text",
}


class Undescribed(ValueError):
    """Settings have neither a ``#:`` comment nor a ``description``."""

    def __init__(self, variables: list[str]) -> None:
        self.variables = variables
        super().__init__(
            f"No description for {', '.join(variables)}: write a #: comment above each "
            "field (core/settings.py, core/channel_settings/)."
        )


@dataclass
class Setting:
    """One row of the page."""

    variable: str
    type: str
    default: str
    description: str


@dataclass
class Group:
    """The settings under one heading of a section (``title`` empty: no heading)."""

    title: str
    settings: list[Setting] = field(default_factory=list)


@dataclass
class Section:
    title: str
    doc: str
    groups: list[Group]


def sections() -> list[Section]:
    """The page's sections: Settings itself first, then its bases in field order (pydantic
    orders a model's bases from the last to the first)."""
    core, *platforms = [c for c in Settings.__mro__ if _declares_fields(c)]
    return [_section(cls) for cls in (core, *reversed(platforms))]


def _declares_fields(cls: type) -> bool:
    return (
        isinstance(cls, type)
        and issubclass(cls, BaseModel)
        and cls is not BaseModel
        and any(n in cls.__annotations__ for n in Settings.model_fields)
    )


def _section(cls: type[BaseModel]) -> Section:
    groups = [Group("")]
    for name, comment, heading in _fields_in_source(cls):
        if heading:
            groups.append(Group(heading))
        info = Settings.model_fields[name]
        groups[-1].settings.append(_setting(name, info, comment))
    return Section(SECTION_TITLES[cls.__name__], _intro(cls), [g for g in groups if g.settings])


def _intro(cls: type) -> str:
    """A platform's section opens with its module's first paragraph (what it covers);
    the core's with nothing (the page's opening says it)."""
    if cls is Settings:
        return ""
    module = inspect.getmodule(cls)
    first = inspect.cleandoc((module.__doc__ if module else None) or "").split("\n\n")[0]
    return _plain(" ".join(first.split()))


def _fields_in_source(cls: type) -> Iterator[tuple[str, str, str]]:
    """Each field the class declares, in source order: its name, its ``#:`` comment,
    and the plain ``# heading`` comment that starts a group before it (or '')."""
    lines = textwrap.dedent(inspect.getsource(cls)).splitlines()
    body = ast.parse("\n".join(lines)).body[0]
    assert isinstance(body, ast.ClassDef)
    previous_end = body.lineno  # the class line (1-based)
    for node in body.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            if name in Settings.model_fields:
                gap = [line.strip() for line in lines[previous_end : node.lineno - 1]]
                yield name, _doc_comment(gap), _heading(gap)
        previous_end = node.end_lineno or node.lineno


def _doc_comment(gap: list[str]) -> str:
    """The ``#:`` lines right above a field, joined."""
    said: list[str] = []
    for line in reversed(gap):
        if not line.startswith("#:"):
            break
        said.insert(0, line.removeprefix("#:").strip())
    return " ".join(said)


def _heading(gap: list[str]) -> str:
    """A plain comment standing after a blank line between two fields: a heading."""
    for before, line in zip(["", *gap], gap, strict=False):
        if line.startswith("# ") and not before:
            text = line.removeprefix("# ").strip()
            return text[:1].upper() + text[1:]
    return ""


def _setting(name: str, info: FieldInfo, comment: str) -> Setting:
    variable = info.alias or name
    description = _plain(info.description or comment)
    older = _older_names(info, variable)
    if older:
        description += f" (also read from {', '.join(f'`{n}`' for n in older)})"
    return Setting(
        variable=variable,
        type=_type(info),
        default=_default(info),
        description=description,
    )


def _older_names(info: FieldInfo, variable: str) -> list[str]:
    choices = info.validation_alias
    if not isinstance(choices, AliasChoices):
        return []
    return [c for c in choices.choices if isinstance(c, str) and c != variable]


def _is_secret(info: FieldInfo) -> bool:
    return SecretStr in _members(info.annotation)


def _members(annotation: Any) -> list[Any]:
    """The types of a union (None left out), through ``Annotated``."""
    if get_origin(annotation) is Annotated:
        return _members(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        return [a for a in get_args(annotation) if a is not type(None)]
    return [annotation]


def _type(info: FieldInfo) -> str:
    words = " or ".join(_type_words(t) for t in _members(info.annotation))
    limits = _limits(info)
    return f"{words}, {limits}" if limits else words


def _type_words(annotation: Any) -> str:
    origin = get_origin(annotation)
    if origin is Literal:
        return "one of " + ", ".join(f"`{v}`" for v in get_args(annotation))
    if origin is frozenset:
        return "comma-separated list"
    if origin is dict:
        _, value = get_args(annotation)
        return f"comma-separated `KEY=VALUE` pairs, each value a {_type_words(value)}"
    if annotation in _TYPE_WORDS:
        return _TYPE_WORDS[annotation]
    raise ValueError(f"no words for the type {annotation!r}: add them to _TYPE_WORDS")


def _limits(info: FieldInfo) -> str:
    said = []
    for bound in info.metadata:
        for attr, sign in (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤")):
            if isinstance(bound, getattr(annotated_types, attr.capitalize())):
                said.append(f"{sign} {_number(getattr(bound, attr))}")
    return " and ".join(said)


def _default(info: FieldInfo) -> str:
    if _is_secret(info):
        return "(secret)"
    if info.default_factory is not None:
        if info.default_factory not in FACTORY_WORDS:
            raise ValueError(f"no words for the default of {info.alias}: add to FACTORY_WORDS")
        return FACTORY_WORDS[info.default_factory]
    return _value(info.default)


def _value(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int | float):
        return f"`{_number(value)}`"
    if isinstance(value, time):
        return f"`{value:%H:%M}`"
    if isinstance(value, frozenset):
        return f"`{','.join(sorted(value))}`" if value else "empty"
    if value == "":
        return "empty"
    return f"`{value}`"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _plain(text: str) -> str:
    """reStructuredText roles and literals as Markdown: ``x`` and :func:`x` as `x`."""
    out = text.replace("``", "`")
    for role in (":func:", ":class:", ":meth:", ":data:", ":mod:"):
        out = out.replace(role, "")
    return out.replace("`~", "`")


def render() -> str:
    """The page's Markdown. Raises :class:`Undescribed` when a setting has no
    description."""
    found = sections()
    check_described(found)
    total = sum(len(g.settings) for s in found for g in s.groups)
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by `python -m docs.gen config` from core/settings.py and",
        "     core/channel_settings/: edit the comments there, not this page. -->",
        "",
        f"Herald reads {total} settings from environment variables (any case) and from a",
        "`.env` file in the folder it starts in (the environment wins). Values are plain",
        "text, never JSON. Secrets are never printed and are scrubbed from the logs.",
        "",
    ]
    for section in found:
        lines += [f"## {section.title}", ""]
        lines += [section.doc, ""] if section.doc else []
        for group in section.groups:
            if group.title:
                lines += [f"### {group.title}", ""]
            lines += _table(group.settings)
    return "\n".join(lines).rstrip() + "\n"


def _table(settings: list[Setting]) -> list[str]:
    rows = ["| Variable | Type | Default | Description |", "| --- | --- | --- | --- |"]
    for s in settings:
        cells = [f"`{s.variable}`", s.type, s.default, s.description]
        rows.append("| " + " | ".join(escape_cell(c) for c in cells) + " |")
    return [*rows, ""]


def check_described(found: list[Section]) -> None:
    """Raise :class:`Undescribed` naming every setting of ``found`` with no description."""
    missing = _undescribed(found)
    if missing:
        raise Undescribed(missing)


def undocumented() -> list[str]:
    """The variables with no description (no ``#:`` comment, no ``description``)."""
    return _undescribed(sections())


def _undescribed(found: list[Section]) -> list[str]:
    return [
        s.variable
        for section in found
        for group in section.groups
        for s in group.settings
        if not s.description
    ]

"""Named templates on Discord (issue 39): ``/schedule create template: data:``, the
``template`` option's autocomplete, and ``/schedule templates``.

Members use their server's templates; operators and admins write them (CLI, API or
console). ``data`` reads ``name=value`` pairs separated by spaces or commas; a value
holding a space or a comma goes in quotes (``note="big release"``, or ``'…'`` for one
holding ``"``); Discord's curly quotes count as quotes::

    /schedule create when:every monday at 9am template:deploy data:service=api version=1.4

Plain functions over ``Herald``; no discord.py here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from bot.discord_bot import render
from core import limits
from core.actors import ActorRef
from core.cases import Herald
from core.errors import InvalidInput, NotFound
from core.models import Schedule, Template

EXAMPLE = 'service=api version=1.4 note="big release"'
#: Option descriptions (Discord: at most 100 characters each, core.limits).
TEMPLATE_HELP = "A template of this server to send instead of a message (type to search)"
DATA_HELP = 'Its values: name=value, spaces between, e.g. service=api version=1.4 note="a b"'
NO_CONTENT = (
    "Give a message, or a template (start typing in `template:` to pick one): "
    "Herald needs something to send."
)
BOTH = (
    "Give a message or a template, not both: the template is the message "
    "(its values go in `data:`)."
)
DATA_ALONE = (
    "`data:` fills in a template: pick one in `template:` too, or write the values "
    "into the message."
)
#: Autocomplete: at most 25 choices, each name and value at most 100 characters
#: (https://discord.com/developers/docs/interactions/application-commands#autocomplete).
MOST_CHOICES = limits.DISCORD_CHOICES.size
MOST_CHOICE = limits.DISCORD_CHOICE_NAME.size

_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'"})
_PAIR = re.compile(
    r"""(?P<name>[^\s,="']+)=(?:"(?P<double>[^"]*)"|'(?P<single>[^']*)'|(?P<bare>[^\s,"']*))"""
    r"""(?=[\s,]|$)"""
)
_GAP = re.compile(r"[\s,]*")


def parse_data(text: str) -> dict[str, str]:
    """``service=api version=1.4 note="big release"`` as ``{"service": "api", …}``;
    values stay text (core reads a number or a date as the template declares it).
    InvalidInput, in one sentence, for a word that is no ``name=value`` pair, a quote
    left open or a name given twice."""
    source = text.translate(_QUOTES)
    found: dict[str, str] = {}
    at = _GAP.match(source, 0).end()  # type: ignore[union-attr]
    while at < len(source):
        pair = _PAIR.match(source, at)
        if pair is None:
            word = re.match(r"[^\s,]*", source[at:]).group(0)  # type: ignore[union-attr]
            shown = render.clip(word, 40)
            what = f"a quote is not closed in {shown!r}" if "=" in word else f"{shown!r} is not one"
            raise InvalidInput(
                "Herald reads `data:` as name=value pairs with spaces between, e.g. "
                f"{EXAMPLE}; {what}."
            )
        name = pair.group("name")
        if name in found:
            raise InvalidInput(f"`data:` gives {name!r} twice: give each value once.")
        value = next(v for v in pair.group("double", "single", "bare") if v is not None)
        found[name] = value
        at = _GAP.match(source, pair.end()).end()  # type: ignore[union-attr]
    return found


def content(
    message: str | None, template: str | None, data: str | None
) -> tuple[str, str | None, dict[str, str] | None]:
    """What ``/schedule create`` sends, from its ``message``, ``template`` and ``data``
    options: ``(text, template name, data)``; one of message and template, data only
    with a template (InvalidInput, in one sentence, otherwise)."""
    if template is not None and not template.strip():
        template = None
    if message is not None and template is not None:
        raise InvalidInput(BOTH)
    if template is None:
        if data is not None and data.strip():
            raise InvalidInput(DATA_ALONE)
        if message is None:
            raise InvalidInput(NO_CONTENT)
        return message, None, None
    return "", template.strip().lower(), parse_data(data or "")


#: ``/schedule edit template:none``: the schedule gets its own text again.
NONE = "none"


def edited(template: str | None, data: str | None) -> tuple[str | None, dict[str, str] | None]:
    """``/schedule edit``'s ``template`` (lower case; ``none`` detaches) and ``data``
    (None when not given: the values it has stay)."""
    name = template.strip().lower() if template is not None and template.strip() else None
    values = parse_data(data) if data is not None and data.strip() else None
    return name, values


async def check_known(herald: Herald, actor: ActorRef, name: str) -> None:
    """NotFound, in Discord's words, for a template this server does not have (another
    server's is answered the same way)."""
    if name not in await herald.template_names(actor, name):
        raise NotFound(
            f"There is no template named {render.clip(name, 64)!r} in this server: start "
            "typing in `template:` to pick one (`/schedule templates` lists them)."
        )


async def choices(herald: Herald, actor: ActorRef, typed: str) -> list[tuple[str, str]]:
    """``template`` autocomplete: this server's template names starting with what was
    typed, at most 25 (a name is at most 64 characters, so each fits a choice)."""
    names = await herald.template_names(actor, typed)
    return [(name, name) for name in names if len(name) <= MOST_CHOICE][:MOST_CHOICES]


# --- /schedule templates ---------------------------------------------------------------


def _variables(variables: Mapping[str, str]) -> str:
    if not variables:
        return "no values"
    return ", ".join(
        name if kind == "text" else f"{name} ({kind})" for name, kind in variables.items()
    )


def _used(count: int) -> str:
    return f"used by {count} schedule{'s' if count != 1 else ''}"


def _row(template: Template, count: int) -> str:
    about = f" · {render.clip(template.description, 80)}" if template.description else ""
    values = render.clip(_variables(template.variables), 120)
    return f"**{template.name}** v{template.version} · {values} · {_used(count)}{about}"


def listing(found: list[tuple[Template, int]]) -> str:
    """``/schedule templates``: each template's name, version, values and how many
    live schedules use it, within one message."""
    if not found:
        return (
            "This server has no templates yet. Herald's operators and admins write them "
            "(`herald template add`, the API or the console); members use them in "
            "`/schedule create template:`."
        )
    head = f"**Templates** ({len(found)}):"
    foot = "Use one: `/schedule create when: template:NAME data:name=value …`."
    rows = [_row(t, n) for t, n in found]
    return render.fit("\n".join([head, *rows, foot]))


def detail(template: Template, used_by: list[Schedule], preview: str) -> str:
    """``/schedule templates template:``: one template, its values, the live schedules
    using it (of those the member sees) and a preview with sample values (a value not
    given shows as ``{{ name }}``)."""
    lines = [f"**Template {template.name}** v{template.version}"]
    if template.description:
        lines.append(render.clip(template.description, 300))
    lines.append(f"**Values:** {_variables(template.variables)}")
    mine = ", ".join(f"#{s.id}" for s in used_by[:10])
    more = f" and {len(used_by) - 10} more" if len(used_by) > 10 else ""
    lines.append(f"**Used by:** {mine}{more}" if mine else "**Used by:** no schedule you see")
    example = " ".join(f"{name}=…" for name in template.variables)
    use = f"template:{template.name}" + (f" data:{example}" if example else "")
    lines.append(f"**Preview** (sample: schedule #123, to Ann, now):\n{render.quote(preview)}")
    lines.append(f"Use it: `/schedule create when: {render.clip(use, 300)}`")
    return render.fit("\n".join(lines))


async def templates_reply(
    herald: Herald, actor: ActorRef, name: str | None, data: str | None
) -> str:
    """``/schedule templates [template:] [data:]``: the list, or one template previewed
    with ``data``."""
    if name is None or not name.strip():
        return listing(await herald.list_templates(actor))
    chosen = name.strip().lower()
    await check_known(herald, actor, chosen)
    values: dict[str, Any] = parse_data(data or "")
    shown = await herald.show_template(actor, chosen)
    parts = await herald.preview_template(actor, chosen, values)
    return detail(shown.template, shown.used_by, parts.body)

"""The template part of a ``/schedule`` text (issue 39): ``template:NAME`` after WHEN,
then the template's data as ``name=value`` words. Pure: no Slack, no database.

    /schedule #team every monday at 9am template:standup
    /schedule #team every monday at 9am template:deploy service=api version=1.4
    /schedule #team tomorrow at 9 template:notes title="Release 1.4" owner=<@U0123>

``template:`` is read only in WHEN's place, before any ": " (after ": " it is the
message's own text). A value with spaces is quoted (straight or curly quotes); values
stay in Slack's escaped form, as a message does. A message and a template together
(``… template:deploy: Hello``, ``"Hello" … template:deploy``, ``…: Hello
template:deploy``) are refused in one sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.slack.words import Refusal, escape

EXAMPLE = "/schedule #general every monday at 9am template:deploy service=api version=1.4"
BOTH = (
    "Give a message or a template, not both: `/schedule #general every monday at 9am: "
    f"Stand-up` sends a message, `{EXAMPLE}` a template."
)

#: ``template:`` starting a word.
_MARK = re.compile(r"(?:(?<=\s)|^)template:", re.I)
#: The template's name as typed (core refuses names it does not have).
_NAME = re.compile(r"[^\s:=\"“”]*")
#: One ``name=value`` word: the value quoted (straight or curly quotes) or up to a space.
_DATUM = re.compile(r"([^\s=\"“”:]+)=(?:\"([^\"]*)\"|“([^”]*)”|(\S*))")
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")
_SEPARATOR = re.compile(r":(?:\s|$)")
_QUOTES = ('"', "“", "”")
#: A message that ends naming a template: ``…: Hello template:deploy service=api``.


@dataclass(frozen=True)
class Templated:
    """What a ``template:`` part says: the text before it (WHEN), the template's name
    and its data, in the order given."""

    before: str
    name: str
    data: tuple[tuple[str, str], ...] = ()


def find(rest: str) -> Templated | None:
    """The template part of ``rest`` (the text after the channels), or None when WHEN
    names no template. Refusal for a part that cannot be read, or that comes with a
    message."""
    spaced = _SEPARATOR.search(rest)
    end = len(rest) if spaced is None else spaced.start()
    mark = _MARK.search(rest, 0, end)
    if mark is None:
        return None
    before = rest[: mark.start()]
    after = rest[mark.end() :]
    if before[:1] in _QUOTES:  # the /remind form: its message is quoted
        if max(before.rfind(q) for q in _QUOTES) > 0:
            raise Refusal(BOTH)
        return None  # "template:" inside the quoted message is the message's
    name_match = _NAME.match(after)
    assert name_match is not None  # it matches the empty string
    name = name_match.group(0).lower()
    tail = after[name_match.end() :]
    if not name:
        raise Refusal(f"Say which template after `template:`, e.g. `{EXAMPLE}`.")
    if tail.startswith(":") or _SEPARATOR.search(_QUOTED.sub('""', tail)) is not None:
        raise Refusal(BOTH)
    return Templated(before, name, _data(tail, name))


def _data(tail: str, name: str) -> tuple[tuple[str, str], ...]:
    """The ``name=value`` words after the template's name."""
    found: dict[str, str] = {}
    at = 0
    while True:
        while at < len(tail) and tail[at].isspace():
            at += 1
        if at >= len(tail):
            return tuple(found.items())
        match = _DATUM.match(tail, at)
        word = tail[at:].split(maxsplit=1)[0]
        if match is None or (match.end() < len(tail) and not tail[match.end()].isspace()):
            raise Refusal(
                f"Could not read `{escape(word[:60])}` after `template:{escape(name)}`: give "
                'data as name=value (quote a value with spaces: title="Release notes"), '
                f"e.g. `{EXAMPLE}`."
            )
        key = match.group(1).lower()
        quoted = match.group(2) if match.group(2) is not None else match.group(3)
        value = quoted if quoted is not None else match.group(4)
        if quoted is None and value[:1] in ('"', "“"):
            raise Refusal(f"The value of `{escape(key[:40])}` has no closing quote.")
        if quoted is None and not value:
            raise Refusal(
                f"Say the value of `{escape(key[:40])}` after the = (`{escape(key[:40])}=…`)."
            )
        if key in found:
            raise Refusal(f"`{escape(key[:40])}` is given twice: give each value once.")
        found[key] = value
        at = match.end()


def check_when(when: str) -> None:
    """Refuse a WHEN ending in ``template`` (``… template: deploy``): the name goes
    right after the colon."""
    if when.lower().split()[-1:] == ["template"]:
        raise Refusal(f"Write the template's name right after `template:`, e.g. `{EXAMPLE}`.")


def mentions(text: str) -> bool:
    """Whether ``text`` has a ``template:`` word anywhere."""
    return _MARK.search(text) is not None

"""Named templates (issue 39): Liquid, sandboxed and bounded, checked when saved.

A template's parts (its body, an email subject, Slack blocks, Discord embeds) are
`Liquid <https://shopify.github.io/liquid/>`_ rendered by python-liquid: ``Deploy {{
service }} v{{ version }} on {{ date | date: "%A" }}``. python-liquid was chosen over
Jinja2's ``SandboxedEnvironment`` by measurement (``python -m bench.template_engines``,
bench/RESULTS.md): Liquid has no way to reach a Python object at all (no attribute
access, no method call, no operator on strings), and bounds loops, output, nesting and
assigned names itself, where Jinja2's sandbox rendered ``{{ 'x' * 100000000 }}`` (100
MB) and runs nested ``range`` loops unbounded. Jinja2 renders a three-variable text
faster (7 µs against 14), which :class:`Compiled` makes moot: a template that only
fills in variables (no tag, no filter) is rendered by joining its parts (about 1 µs),
and Liquid renders the rest.

Variables are declared with a kind (:data:`KINDS`); a template may use only declared
ones and the built-in fields (:data:`BUILTINS`). A schedule gives every declared
variable a value of its kind (:func:`check_data`): refused when saved otherwise, in one
sentence. ``include`` and ``render`` are not tags here (a template reaches no other).

The older ``{date}`` syntax of a schedule's own text stays with :mod:`core.templates`.
"""

from __future__ import annotations

import functools
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

from core.errors import InvalidInput

#: The kinds a variable may be declared as, and what a value of each is.
KINDS: dict[str, str] = {
    "text": "text",
    "number": "a number (e.g. 3 or 1.5)",
    "date": "a date as YYYY-MM-DD",
}
#: The fields Herald fills in itself, and what each is.
BUILTINS: dict[str, str] = {
    "date": "the occurrence's date in its zone (e.g. {{ date | date: '%A %d %B' }})",
    "time": "the occurrence's local time, HH:MM",
    "schedule.id": "the schedule's number",
    "recipient.name": "the recipient's name as Herald knows it, else its address",
}
#: The roots of the built-in fields: no variable may be declared with one of them.
RESERVED = frozenset(name.partition(".")[0] for name in BUILTINS)

#: A template's name: what ``template:standup`` and ``--template standup`` say.
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
#: A variable's name.
VARIABLE = re.compile(r"[a-z_][a-z0-9_]{0,39}")
MAX_VARIABLES = 30
#: The most characters of one text value, and of a part's source.
MAX_VALUE = 1000
MAX_SOURCE = 4000
#: The most bytes (UTF-8) one render may write (Liquid stops there): room for the
#: largest message Herald sends (4,000) and Slack's blocks, nothing like a flood.
MAX_OUTPUT = 50_000


class RenderError(InvalidInput):
    """A template that cannot be read, or rendered with the values it was given."""


#: The most items a filter may take or give (a range, a list, a split text).
MAX_ITEMS = 50_000


def _big(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) > MAX_OUTPUT
    return isinstance(value, range | list | tuple) and len(value) > MAX_ITEMS


def _bounded(filter_: Any) -> Any:
    """``filter_`` refusing an input or a result over Herald's bounds: Liquid bounds
    loops and output, not the work inside one filter (``{{ (1..30000000) | join }}``
    builds 229 MB before anything is written)."""

    from liquid.exceptions import ResourceLimitError

    def bounded(*args: Any, **kwargs: Any) -> Any:
        if any(_big(a) for a in (*args, *kwargs.values())):
            raise ResourceLimitError("a filter's input is over Herald's bound", token=None)
        out = filter_(*args, **kwargs)
        if _big(out):
            raise ResourceLimitError("a filter's result is over Herald's bound", token=None)
        return out

    for attr in ("with_context", "with_environment"):
        if hasattr(filter_, attr):
            setattr(bounded, attr, getattr(filter_, attr))
    return functools.update_wrapper(bounded, filter_, updated=())


@functools.cache
def _env() -> Any:
    """Liquid with its resource limits set, undefined names refused, and no tag that
    loads another template; built on first use (python-liquid takes ~160 ms to import:
    every command that loads the use cases would pay it)."""
    from liquid import Environment, StrictUndefined

    class Sandbox(Environment):
        loop_iteration_limit = 1000
        output_stream_limit = MAX_OUTPUT
        context_depth_limit = 10
        local_namespace_limit = 20_000
        block_nesting_limit = 10

        def setup_tags_and_filters(self, *, extra: bool = False) -> None:
            super().setup_tags_and_filters(extra=extra)
            for tag in ("include", "render"):
                self.tags.pop(tag, None)
            for name, filter_ in list(self.filters.items()):
                self.filters[name] = _bounded(filter_)

    return Sandbox(undefined=StrictUndefined, autoescape=False)


def _liquid_error() -> type[Exception]:
    from liquid.exceptions import LiquidError

    return LiquidError


def _said(exc: Exception) -> str:
    """Liquid's error as one line (it adds the source and a caret below)."""
    return str(exc).splitlines()[0].rstrip(".")


@dataclass(frozen=True, eq=False)
class Compiled:
    """One part's source, parsed once (:func:`compiled`): the names it reads and how
    it is rendered. ``plain`` holds the parts of a template that only fills in
    variables, as literal text and paths, joined without Liquid."""

    source: str
    template: Any
    #: Every variable path it reads from outside (``service``, ``schedule.id``).
    paths: frozenset[str]
    plain: tuple[str | tuple[str, ...], ...] | None
    #: The names those paths start with (``schedule`` of ``schedule.id``).
    roots: frozenset[str]

    def render(self, values: Mapping[str, Any]) -> str:
        """This part with ``values``; RenderError when a value is missing or Liquid
        stops (a limit reached)."""
        plain = self.plain
        if plain is None:
            try:
                return str(self.template.render(**values))
            except (_liquid_error(), ArithmeticError, ValueError, TypeError, RecursionError) as exc:
                raise RenderError(f"The template could not be filled in: {_said(exc)}.") from None
        out: list[Any] = [plain[0]]  # text, then (path, text) pairs: a value, then text
        for i in range(1, len(plain), 2):
            path = plain[i]
            try:
                value: Any = values[path[0]]
                for segment in path[1:]:
                    value = value[segment]
            except (KeyError, TypeError, IndexError):
                raise RenderError(f"{'.'.join(path)} has no value.") from None
            kind = type(value)
            if kind is not str:
                value = str(value) if kind is int else _as_text(value)
            out.append(value)
            out.append(plain[i + 1])
        text = "".join(out)
        # as Liquid writes it: its output stream reads "\r\n" and "\r" as "\n"
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


#: What Liquid reads after a dot as a property of any value (a text's size), not a key.
_PROPERTIES = frozenset({"size", "first", "last"})


def root(path: str) -> str:
    """The name a variable path starts with: ``items`` of ``items[0].name``."""
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def _as_text(value: Any) -> str:
    from liquid.stringify import to_liquid_string

    return str(to_liquid_string(value, False))


def _plain(template: Any) -> tuple[str | tuple[str, ...], ...] | None:
    """A template that only fills in variables as text and paths, alternating and
    starting and ending with text (``"Hi ", ("name",), "!"``); None for any other."""
    from liquid.builtin.expressions import FilteredExpression, Path
    from liquid.builtin.output import OutputNode

    pieces: list[str | tuple[str, ...]] = [""]
    for node in template.nodes:
        if type(node).__name__ == "ContentNode":
            pieces[-1] = str(pieces[-1]) + node.text
            continue
        if not isinstance(node, OutputNode):
            return None
        expression = node.expression
        if not isinstance(expression, FilteredExpression) or expression.filters:
            return None
        left = expression.left
        if not isinstance(left, Path) or not all(isinstance(s, str) for s in left.path):
            return None
        if any(segment in _PROPERTIES for segment in left.path[1:]):
            return None
        pieces.append(tuple(str(s) for s in left.path))
        pieces.append("")
    return tuple(pieces)


@lru_cache(maxsize=2048)
def compiled(source: str) -> Compiled:
    """``source`` parsed (cached per source: a template version's parts are rendered
    for every job). RenderError, in one sentence, for a template Liquid cannot read."""
    if len(source) > MAX_SOURCE:
        raise RenderError(f"A template part is over {MAX_SOURCE:,} characters.")
    try:
        template = _env().from_string(source)
        paths = frozenset(str(p) for p in template.global_variable_paths())
    except _liquid_error() as exc:
        raise RenderError(f"The template cannot be read: {_said(exc)}.") from None
    roots = frozenset(root(path) for path in paths)
    return Compiled(source, template, paths, _plain(template), roots)


# --- a template's parts -------------------------------------------------------------


@dataclass(frozen=True)
class Parts:
    """What a template version sends: its body and, where the destination takes them,
    an email subject, Slack blocks and Discord embeds (their text fields are Liquid)."""

    body: str
    subject: str | None = None
    blocks: list[dict[str, Any]] | None = None
    embeds: list[dict[str, Any]] | None = None

    def sources(self) -> Iterator[str]:
        """Every Liquid source among its parts: the body, the subject, and each text
        in its blocks and embeds."""
        yield self.body
        if self.subject is not None:
            yield self.subject
        for tree in (self.blocks, self.embeds):
            if tree is not None:
                yield from _strings(tree)

    def paths(self) -> frozenset[str]:
        return frozenset(p for source in self.sources() for p in compiled(source).paths)

    def roots(self) -> frozenset[str]:
        """The names its parts read (remembered for a body and subject alone)."""
        if self.blocks is None and self.embeds is None:
            return _roots(self.body, self.subject)
        return frozenset(root(p) for p in self.paths())

    def render(self, values: Mapping[str, Any]) -> Parts:
        """Every part filled in from ``values`` (RenderError as :meth:`Compiled.render`)."""
        return Parts(
            compiled(self.body).render(values),
            None if self.subject is None else compiled(self.subject).render(values),
            None if self.blocks is None else _filled(self.blocks, values),
            None if self.embeds is None else _filled(self.embeds, values),
        )


@lru_cache(maxsize=1024)
def _roots(body: str, subject: str | None) -> frozenset[str]:
    roots = compiled(body).roots
    return roots if subject is None else roots | compiled(subject).roots


def _strings(tree: Any) -> Iterator[str]:
    if isinstance(tree, str):
        yield tree
    elif isinstance(tree, Mapping):
        for value in tree.values():
            yield from _strings(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from _strings(value)


def _filled(tree: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(tree, str):
        return compiled(tree).render(values) if "{" in tree else tree
    if isinstance(tree, Mapping):
        return {key: _filled(value, values) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_filled(value, values) for value in tree]
    return tree


# --- declarations and data ------------------------------------------------------------


def check_name(name: str) -> str:
    """A template's name, refused unless 1-64 lower-case letters, digits, ``-``, ``_``."""
    if not isinstance(name, str) or NAME.fullmatch(name) is None:
        raise InvalidInput(
            "A template's name is 1 to 64 lower-case letters, digits, - and _ "
            f"(e.g. standup), not {str(name)[:70]!r}."
        )
    if name == "none":
        raise InvalidInput("'none' means no template (a schedule's own text): choose another.")
    return name


def check_variables(declared: Mapping[str, str]) -> dict[str, str]:
    """Declared variables (name → kind), refused when a name or kind is not one
    Herald takes, or a name is a built-in field's."""
    if len(declared) > MAX_VARIABLES:
        raise InvalidInput(f"A template declares at most {MAX_VARIABLES} variables.")
    checked: dict[str, str] = {}
    for name, kind in declared.items():
        if not isinstance(name, str) or VARIABLE.fullmatch(name) is None:
            raise InvalidInput(
                f"Variable {str(name)[:50]!r}: a name is a lower-case letter or _, then up "
                "to 39 letters, digits or _ (e.g. service)."
            )
        if name in RESERVED:
            raise InvalidInput(
                f"{name!r} is a field Herald fills in itself ({_builtins()}): choose another name."
            )
        if kind not in KINDS:
            raise InvalidInput(
                f"Variable {name!r} has kind {str(kind)[:30]!r}: use {', '.join(KINDS)}."
            )
        checked[name] = kind
    return checked


def _builtins() -> str:
    return ", ".join(BUILTINS)


def check_parts(parts: Parts, variables: Mapping[str, str]) -> frozenset[str]:
    """Refuse parts Liquid cannot read, or that use a variable neither declared nor
    built in (naming it); return the paths they use."""
    if not parts.body.strip():
        raise InvalidInput("The template's text is empty: say what to send.")
    used = parts.paths()
    for path in sorted(used):
        root = path.partition(".")[0]
        if root in variables:
            continue
        if path in BUILTINS:
            continue
        if root in RESERVED:
            raise InvalidInput(f"{{{{ {path} }}}} is not a field Herald knows: use {_builtins()}.")
        declared = ", ".join(variables) or "none"
        raise InvalidInput(
            f"The template uses {{{{ {path} }}}}, which is not declared (declared: "
            f"{declared}): declare it (--var {root}) or take it out."
        )
    return used


def _value(name: str, kind: str, value: Any, where: str) -> Any:
    if kind == "number":
        if isinstance(value, bool):
            raise InvalidInput(f"{name!r}{where} must be a number, not {value!r}.")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value == value and abs(value) != float("inf"):
            return value
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                pass
            else:
                if number == number and abs(number) != float("inf"):
                    return int(number) if number.is_integer() and "." not in value else number
        raise InvalidInput(f"{name!r}{where} must be a number, not {str(value)[:40]!r}.")
    if not isinstance(value, str):
        raise InvalidInput(f"{name!r}{where} must be {KINDS[kind]}, not {value!r}.")
    if kind == "date":
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            raise InvalidInput(
                f"{name!r}{where} must be a date as YYYY-MM-DD, not {value[:40]!r}."
            ) from None
    if len(value) > MAX_VALUE:
        raise InvalidInput(f"{name!r}{where} is over {MAX_VALUE:,} characters.")
    return value


def check_data(
    variables: Mapping[str, str],
    data: Mapping[str, Any],
    *,
    template: str,
    where: str = "",
    needs: Sequence[str] | None = None,
) -> dict[str, Any]:
    """``data`` for a template declaring ``variables``: every value of its kind (a
    number given as text is read as one), no unknown name, and a value for each of
    ``needs`` (default: every declared variable). ``where`` says whose data it is
    (`` for email:ann@example.com``)."""
    checked: dict[str, Any] = {}
    for name, value in data.items():
        kind = variables.get(name)
        if kind is None:
            declared = ", ".join(variables) or "none"
            raise InvalidInput(
                f"Template {template!r} has no variable {str(name)[:40]!r}{where} "
                f"(its variables: {declared})."
            )
        checked[name] = _value(name, kind, value, where)
    for name in variables if needs is None else needs:
        if name not in checked:
            raise InvalidInput(f"Template {template!r} needs a value for {name!r}{where}.")
    return checked


# --- what one job renders ---------------------------------------------------------------


@dataclass(frozen=True)
class Occurrence:
    """The built-in fields of one job."""

    schedule_id: int
    at: datetime
    zone: str
    recipient_name: str = ""


def builtins(uses: frozenset[str], occurrence: Occurrence) -> dict[str, Any]:
    """The built-in fields among ``uses`` (a part's roots), for ``occurrence``."""
    values: dict[str, Any] = {}
    if "date" in uses or "time" in uses:
        local = occurrence.at.astimezone(ZoneInfo(occurrence.zone))
        values["date"] = local.date()
        values["time"] = local.strftime("%H:%M")
    if "schedule" in uses:
        values["schedule"] = {"id": occurrence.schedule_id}
    if "recipient" in uses:
        values["recipient"] = {"name": occurrence.recipient_name}
    return values


@dataclass(frozen=True)
class Use:
    """What a schedule keeps of its template (``options["liquid"]``): its data, each
    recipient's own (by recipient id, as text), and each recipient's name."""

    data: dict[str, Any] = field(default_factory=dict)
    by_recipient: dict[str, dict[str, Any]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"data": self.data}
        if self.by_recipient:
            out["by_recipient"] = self.by_recipient
        if self.names:
            out["names"] = self.names
        return out

    @classmethod
    def of(cls, stored: Mapping[str, Any] | None) -> Use:
        stored = stored or {}
        return cls(
            dict(stored.get("data") or {}),
            {k: dict(v) for k, v in (stored.get("by_recipient") or {}).items()},
            dict(stored.get("names") or {}),
        )

    def values(self, recipient: int) -> dict[str, Any]:
        """The data one recipient's job renders with (its own over the shared)."""
        own = self.by_recipient.get(str(recipient))
        return {**self.data, **own} if own else self.data


def render_job(parts: Parts, use: Use, occurrence: Occurrence, recipient: int) -> Parts:
    """``parts`` filled in for one job (the checks when saved)."""
    values = {**builtins(parts.roots(), occurrence), **use.values(recipient)}
    return parts.render(values)


#: The roots of the built-in fields (:data:`BUILTINS`).
_BUILTIN_ROOTS = frozenset({"date", "time", "schedule", "recipient"})


def _job_values(
    roots: frozenset[str],
    used: Mapping[str, Any],
    recipient: int,
    occurrence: Callable[[str], Occurrence],
) -> Mapping[str, Any]:
    data = used.get("data") or {}
    by = used.get("by_recipient")
    own = by.get(str(recipient)) if by else None
    values = {**data, **own} if own else data
    wanted = roots & _BUILTIN_ROOTS
    if wanted:
        names = used.get("names") or {}
        values = {**values, **builtins(wanted, occurrence(names.get(str(recipient), "")))}
    return values


def fill(
    parts: Parts,
    used: Mapping[str, Any],
    recipient: int,
    occurrence: Callable[[str], Occurrence],
) -> Parts:
    """``parts`` filled in for one job, from a schedule's stored ``options["liquid"]``
    as it is (nothing copied): the job's recipient's data over the shared, and the
    built-in fields only when the parts read one (``occurrence(name)`` gives them, the
    recipient's name as the schedule keeps it)."""
    return parts.render(_job_values(parts.roots(), used, recipient, occurrence))


def fill_text(
    body: str,
    used: Mapping[str, Any],
    recipient: int,
    occurrence: Callable[[str], Occurrence],
) -> str:
    """:func:`fill` of a template that is only a body: the dispatcher's common path,
    per job a lookup or two beside the rendering itself."""
    part = compiled(body)
    return part.render(_job_values(part.roots, used, recipient, occurrence))


# --- the longest a template can render, for the checks when saved -----------------------

#: The largest schedule id (SQL BIGINT's largest value): what a saved check writes.
LONGEST_ID = 2**63 - 1
#: Every day of a leap year, each at a different hour: each weekday of each month,
#: each day of the year and every hour, for a template's date and time fields.
_SAMPLES = tuple(
    datetime(2028, 1, 1, tzinfo=ZoneInfo("UTC")) + timedelta(days=n, hours=n % 24, minutes=59)
    for n in range(366)
)


#: The most CPU seconds one rendering of a saved template may take (its loops and
#: filters over its data): the dispatcher, every list and every preview fill it in, on
#: their event loops. A plain template takes some microseconds, one with a date filter
#: tens of them; past this the save is refused, said so.
RENDER_SECONDS = 0.005
#: The most seconds the checks of one save may render for (a template with loops,
#: 366 sample days and hundreds of recipients): past it the save is refused, said so.
CHECK_SECONDS = 5.0


def _in_time(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise RenderError(
            f"Checking this template took over {CHECK_SECONDS:g} s (its loops, days and "
            "recipients): make it simpler, or send it to fewer recipients per schedule."
        )


def longest_occurrence(
    source: str, values: Mapping[str, Any], deadline: float | None = None
) -> datetime:
    """The sample occurrence (:data:`_SAMPLES`, in UTC) at which ``source`` renders
    longest with ``values``: its date and time fields at their longest. The first
    sample when it uses neither. RenderError past ``deadline`` (time.monotonic)."""
    part = compiled(source)
    if not part.roots & {"date", "time"}:
        return _SAMPLES[0]
    best, best_at = -1, _SAMPLES[0]
    for at in _SAMPLES:
        _in_time(deadline)
        filled = {**values, **builtins(part.roots, Occurrence(LONGEST_ID, at, "UTC"))}
        size = len(part.render(filled))
        if size > best:
            best, best_at = size, at
    return best_at


@dataclass(frozen=True)
class Worst:
    """The sample occurrences at which a template's body and subject render longest
    (:func:`worst`): found once per schedule, with one recipient's values."""

    body_at: datetime
    subject_at: datetime
    #: Where its blocks and embeds (as JSON) are longest.
    parts_at: datetime | None = None


def worst(parts: Parts, values: Mapping[str, Any], deadline: float | None = None) -> Worst:
    body_at = longest_occurrence(parts.body, values, deadline)
    subject_at = body_at
    if parts.subject is not None:
        subject_at = longest_occurrence(parts.subject, values, deadline)
    parts_at = None
    trees = Parts("", None, parts.blocks, parts.embeds)
    if (parts.blocks or parts.embeds) and trees.roots() & {"date", "time"}:
        best = -1
        for at in _SAMPLES:
            _in_time(deadline)
            filled = {**values, **builtins(trees.roots(), Occurrence(LONGEST_ID, at, "UTC"))}
            out = trees.render(filled)
            size = len(json.dumps([out.blocks, out.embeds], ensure_ascii=False))
            if size > best:
                best, parts_at = size, at
    return Worst(body_at, subject_at, parts_at)


def longest(
    parts: Parts,
    use: Use,
    recipient: int,
    name: str,
    at: Worst | None = None,
    deadline: float | None = None,
) -> Parts:
    """``parts`` rendered as long as they get for ``recipient`` with ``use``'s data:
    the largest schedule id, its name, and the date and time at which the body (and
    the subject) are longest (``at``: found by :func:`worst` for this recipient when
    not given). RenderError when a value is missing or past ``deadline``."""
    if at is None:
        at = worst(parts, use.values(recipient), deadline)
    _in_time(deadline)
    started = time.thread_time()
    out = render_job(parts, use, Occurrence(LONGEST_ID, at.body_at, "UTC", name), recipient)
    spent = time.thread_time() - started
    if spent > RENDER_SECONDS:
        raise RenderError(
            f"Filling this template in with this data takes {spent * 1000:,.0f} ms of CPU; "
            f"the most is {RENDER_SECONDS * 1000:g} ms (every send, list and preview does "
            "it): make its loops and filters simpler."
        )
    if parts.subject is not None and at.subject_at != at.body_at:
        occurrence = Occurrence(LONGEST_ID, at.subject_at, "UTC", name)
        again = render_job(parts, use, occurrence, recipient)
        out = Parts(out.body, again.subject, out.blocks, out.embeds)
    if at.parts_at is not None and at.parts_at != at.body_at:
        occurrence = Occurrence(LONGEST_ID, at.parts_at, "UTC", name)
        again = render_job(parts, use, occurrence, recipient)
        out = Parts(out.body, out.subject, again.blocks, again.embeds)
    return out


def sample(
    parts: Parts,
    data: Mapping[str, Any],
    variables: Mapping[str, str],
    at: datetime,
    zone: str = "UTC",
) -> Parts:
    """A preview: ``parts`` with ``data`` (a declared variable without a value shows
    as ``{{ name }}``, so a preview never looks more finished than it is), the
    built-ins of a schedule #123 to "Ann" at ``at``."""
    values: dict[str, Any] = {name: "{{ " + name + " }}" for name in variables}
    values |= {k: v for k, v in data.items() if k in variables}
    values |= builtins(frozenset(RESERVED), Occurrence(123, at, zone, "Ann"))
    return parts.render(values)

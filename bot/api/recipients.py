"""The API's recipients: what ``to`` (and an edit's ``add``) take, one destination or a
list of destinations and chains (``{"first_of": [...]}``), refused with one sentence of
their shape; and a schedule's recipients as answers carry them (core.routing)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, ValidationError, ValidatorFunctionWrapHandler
from pydantic_core import PydanticCustomError

from bot.api.model_base import In, Out, example
from core import routing

#: The longest destination a request may name.
MAX_DESTINATION = 2000
Destination = Annotated[str, Field(min_length=1, max_length=MAX_DESTINATION)]
_CHAIN = '{"first_of": ["slack:@U123", "email:alice@example.com"]}'
_SHAPE = f'must be a destination ("slack:C0123") or a list of destinations and chains ({_CHAIN})'
_ITEM = f'each recipient must be a destination ("slack:C0123") or a chain ({_CHAIN})'


class FirstOf(In):
    """A recipient that is a chain: its destinations tried in order, the next only when
    the one before failed for good (or its step's time limit passed)."""

    model_config = example({"first_of": ["slack:@U0123ABCD", "email:alice@example.com"]})

    first_of: list[Destination] = Field(
        min_length=1,
        max_length=routing.MAX_STEPS,
        description=f"1 to {routing.MAX_STEPS} destinations, tried in order until one "
        "takes the message.",
    )


#: Recipients in a list: each a destination or a chain (admins may name the most).
Recipients = Annotated[
    list[Destination | FirstOf], Field(min_length=1, max_length=routing.ADMIN_CAP)
]


def _one_of(schema: dict[str, Any]) -> None:
    """A string or an array (or, in an edit, null), never two at once: oneOf."""
    if "anyOf" in schema:
        schema["oneOf"] = schema.pop("anyOf")


def to_field(*, required: bool, description: str) -> Any:
    return Field(
        default=... if required else None,
        description=description,
        examples=[
            "webhook:https://hooks.example.com/standup",
            ["slack:C0OPS", {"first_of": ["slack:@U0ALICE", "email:alice@example.com"]}],
        ],
        json_schema_extra=_one_of,
    )


def _length(value: str) -> str | None:
    if not 1 <= len(value) <= MAX_DESTINATION:
        return f"a destination is 1 to {MAX_DESTINATION:,} characters"
    return None


def _item_problem(item: Any) -> str | None:
    """What is wrong with one recipient of a list (None: nothing the model checks)."""
    if isinstance(item, str):
        return _length(item)
    if not (isinstance(item, dict) and set(item) == {"first_of"}):
        return _ITEM
    steps = item["first_of"]
    if not isinstance(steps, list) or not all(isinstance(s, str) for s in steps):
        return "a chain (first_of) is a list of destinations"
    if not 1 <= len(steps) <= routing.MAX_STEPS:
        return f"a chain (first_of) has 1 to {routing.MAX_STEPS} destinations, not {len(steps)}"
    return next((p for p in map(_length, steps) if p), None)


def recipients_problem(value: Any) -> str:
    """Why ``value`` is not recipients as a request names them, in words."""
    if isinstance(value, str):
        return _length(value) or _SHAPE
    if not isinstance(value, list):
        return _SHAPE
    if not value:
        return "must name at least one recipient"
    if len(value) > routing.ADMIN_CAP:
        return f"may name at most {routing.ADMIN_CAP:,} recipients, not {len(value):,}"
    return next((p for p in map(_item_problem, value) if p), _SHAPE)


def recipients_field(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """``value`` read as its field's type, or refused with one sentence of its shape."""
    try:
        return handler(value)
    except ValidationError:
        raise PydanticCustomError("recipients", recipients_problem(value)) from None


def time_of_field() -> Any:
    return Field(
        default="author",
        description="Whose clock 'when' is read on: the author's (default; the schedule's "
        "zone) or each recipient's own (a person's zone as their profile or Herald knows "
        "it; rooms keep the author's).",
    )


def step_timeout_field() -> Any:
    return Field(
        default=None,
        ge=routing.MIN_STEP_TIMEOUT,
        le=routing.MAX_STEP_TIMEOUT,
        description="Seconds one step of a chain is tried before the next is (default: "
        "until it fails for good).",
        examples=[600],
    )


def _absent(value: Any) -> bool:
    return value is None


class RecipientOut(Out):
    """One recipient of a schedule, as stored: its number, its chain, its own zone."""

    model_config = example({"id": 1, "to": ["slack:@U0ALICE", "email:alice@example.com"]})

    id: int = Field(description="Its number in the schedule (a job's recipient).")
    to: list[str] = Field(description="One destination, or a chain tried in order.")
    zone: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="The zone its time is read in (absent: the schedule's).",
    )
    timeout: int | None = Field(
        default=None,
        exclude_if=_absent,
        description="Seconds a step is tried before the next (absent: no limit).",
    )

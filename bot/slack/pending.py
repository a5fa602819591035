"""Creates held back by a duplicate (issue 41): ``/schedule`` or the modal found the
same message already scheduled there at about the same time (core's
:class:`~core.cases.channel_view.Duplicated`: nothing was saved), and the person
answers with **Create anyway** or **Cancel**.

The request waits here, in memory, keyed by a random token that the two buttons
carry as their value: a button's value holds at most 2,000 characters
(https://docs.slack.dev/reference/block-kit/block-elements/button-element) and a
request does not fit (a message alone may be 4,000), nor should it ride through
Slack and back to be read again. A request is kept :data:`EXPIRES` seconds, at most
:data:`KEPT` at once and :data:`PER_PERSON` of one person (the oldest go first: one
person's requests cannot push out everyone else's); one gone (expired, or Herald
restarted) is answered "That request expired: schedule it again." Only the person who
asked, in the workspace they asked in, may answer it. A Create anyway that is refused
(Slack could not be asked just now, the time passed) keeps its request: the buttons
still answer it.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.errors import Conflict, InvalidInput, PermissionDenied

if TYPE_CHECKING:
    from bot.slack.base import Person
    from bot.slack.blocks import Reply

#: Seconds a held request waits for an answer.
EXPIRES = 15 * 60
#: The most requests held at once.
KEPT = 1_000
#: The most requests of one person (in one workspace) held at once.
PER_PERSON = 20
#: The buttons' action ids.
ANYWAY = "herald_duplicate_anyway"
CANCEL = "herald_duplicate_cancel"
ACTIONS = (ANYWAY, CANCEL)
EXPIRED = "That request expired: schedule it again."
CANCELLED = "Nothing was scheduled."
NOT_YOURS = "These buttons answer someone else's request: nothing changed."

#: Runs the request again, for the person who answered, creating it anyway.
Rerun = Callable[["Person"], Awaitable["Reply"]]


@dataclass(frozen=True)
class Held:
    tenant: str
    user: str
    rerun: Rerun
    at: float


class Pending:
    """The requests waiting for Create anyway or Cancel."""

    def __init__(
        self,
        *,
        expires: float = EXPIRES,
        kept: int = KEPT,
        per_person: int = PER_PERSON,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.expires = expires
        self.kept = kept
        self.per_person = per_person
        self.clock = clock
        self._held: dict[str, Held] = {}

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, tenant: str, user: str, rerun: Rerun) -> str:
        """Keep a request of ``user`` (in ``tenant``); the token its buttons carry."""
        self._forget_expired()
        theirs = [t for t, h in self._held.items() if (h.tenant, h.user) == (tenant, user)]
        for old in theirs[: max(0, len(theirs) - self.per_person + 1)]:
            del self._held[old]
        while len(self._held) >= self.kept:
            self._held.pop(next(iter(self._held)))
        token = secrets.token_urlsafe(16)
        self._held[token] = Held(tenant, user, rerun, self.clock())
        return token

    def take(self, token: str, tenant: str, user: str) -> Held:
        """The request ``token`` names, no longer held: InvalidInput when it is gone,
        PermissionDenied (and still held) when it is someone else's."""
        self._forget_expired()
        held = self._held.get(token)
        if held is None:
            raise InvalidInput(EXPIRED)
        if (held.tenant, held.user) != (tenant, user):
            raise PermissionDenied(NOT_YOURS)
        del self._held[token]
        return held

    def put_back(self, token: str, held: Held) -> None:
        """Hold a request taken again (its Create anyway was refused), as it was: it
        expires when it would have."""
        self._held[token] = held
        self._held = dict(sorted(self._held.items(), key=lambda kv: kv[1].at))

    def _forget_expired(self) -> None:
        now = self.clock()
        for token in [t for t, h in self._held.items() if now - h.at >= self.expires]:
            del self._held[token]


def duplicates_found(error: Exception) -> list[Any] | None:
    """What a create refused as a duplicate found (core's ``Duplicated``, a Conflict
    carrying ``found``: the warnings naming each), or None for any other error."""
    found = getattr(error, "found", None)
    if isinstance(error, Conflict) and isinstance(found, list) and found:
        return found
    return None

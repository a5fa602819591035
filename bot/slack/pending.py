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

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from bot.waiting import EXPIRES, KEPT, PER_OWNER, Waiting, WaitingRequests
from core.cases import Duplicated, SaveWarning
from core.errors import InvalidInput, PermissionDenied

if TYPE_CHECKING:
    from bot.slack.base import Person
    from bot.slack.blocks import Reply

#: The most requests of one person (in one workspace) held at once.
PER_PERSON = PER_OWNER
#: The buttons' action ids.
ANYWAY = "herald_duplicate_anyway"
CANCEL = "herald_duplicate_cancel"
ACTIONS = (ANYWAY, CANCEL)
EXPIRED = "That request expired: schedule it again."
CANCELLED = "Nothing was scheduled."
NOT_YOURS = "These buttons answer someone else's request: nothing changed."

#: Runs the request again, for the person who answered, creating it anyway.
Rerun = Callable[["Person"], Awaitable["Reply"]]


#: A request held for its asker: ``owner`` is (workspace, user), ``value`` its rerun.
Held = Waiting[Rerun]


class Pending:
    """The requests waiting for Create anyway or Cancel (:mod:`bot.waiting`), as
    Slack's handlers ask for them: by workspace and user."""

    def __init__(
        self,
        *,
        expires: float = EXPIRES,
        kept: int = KEPT,
        per_person: int = PER_PERSON,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._waiting: WaitingRequests[Rerun] = WaitingRequests(
            expires=expires, kept=kept, per_owner=per_person, clock=clock
        )

    def __len__(self) -> int:
        return len(self._waiting)

    def hold(self, tenant: str, user: str, rerun: Rerun) -> str:
        """Keep a request of ``user`` (in ``tenant``); the token its buttons carry."""
        return self._waiting.keep((tenant, user), rerun)

    def take(self, token: str, tenant: str, user: str) -> Held:
        """The request ``token`` names, no longer held: InvalidInput when it is gone,
        PermissionDenied (and still held) when it is someone else's."""
        held = self._waiting.find(token)
        if held is None:
            raise InvalidInput(EXPIRED)
        if held.owner != (tenant, user):
            raise PermissionDenied(NOT_YOURS)
        self._waiting.take(token)
        return held

    def put_back(self, token: str, held: Held) -> None:
        """Hold a request taken again (its Create anyway was refused), as it was."""
        self._waiting.put_back(token, held)


def duplicates_found(error: Exception) -> list[SaveWarning] | None:
    """What a create refused as a duplicate found (core's ``Duplicated``: the warnings
    naming each), or None for any other error."""
    if isinstance(error, Duplicated) and error.found:
        return error.found
    return None

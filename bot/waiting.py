"""Requests waiting for their asker's answer: a create held back by a duplicate
(issue 41) waits for **Create anyway** or **Cancel**, in Slack and in Discord alike.

A request waits here, in memory, under a random token its buttons carry (a Slack
button's value and a Discord custom_id are too small for the request itself, and it
should not ride through the platform and back to be read again). Each is kept
``expires`` seconds, at most ``kept`` at once and ``per_owner`` of one owner (who asked,
where: their oldest go first, so one person's requests cannot push everyone else's
out). One gone (expired, or Herald restarted) is for the adapter to answer "expired".
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

#: Seconds a request waits for an answer.
EXPIRES = 15 * 60.0
#: The most requests kept at once.
KEPT = 1_000
#: The most requests of one owner kept at once.
PER_OWNER = 20


@dataclass(frozen=True)
class Waiting(Generic[T]):
    """One request: who asked (and where), what to run on an answer, since when
    (monotonic seconds)."""

    owner: Hashable
    value: T
    since: float


class WaitingRequests(Generic[T]):
    """The requests waiting for an answer, by token, oldest first."""

    def __init__(
        self,
        *,
        expires: float = EXPIRES,
        kept: int = KEPT,
        per_owner: int = PER_OWNER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.expires = expires
        self.kept = kept
        self.per_owner = per_owner
        self.clock = clock
        self._waiting: dict[str, Waiting[T]] = {}

    def __len__(self) -> int:
        return len(self._waiting)

    def keep(self, owner: Hashable, value: T) -> str:
        """Keep a request of ``owner``; the token its buttons carry (22 URL-safe
        characters)."""
        self._forget_expired()
        theirs = [t for t, w in self._waiting.items() if w.owner == owner]
        for old in theirs[: max(0, len(theirs) - self.per_owner + 1)]:
            del self._waiting[old]
        while len(self._waiting) >= self.kept:
            self._waiting.pop(next(iter(self._waiting)))
        token = secrets.token_urlsafe(16)
        self._waiting[token] = Waiting(owner, value, self.clock())
        return token

    def find(self, token: str) -> Waiting[T] | None:
        """The request ``token`` names, None once expired (or never kept here)."""
        self._forget_expired()
        return self._waiting.get(token)

    def take(self, token: str) -> Waiting[T] | None:
        """The request, no longer kept (answered once: a second answer finds nothing)."""
        found = self.find(token)
        self._waiting.pop(token, None)
        return found

    def put_back(self, token: str, waiting: Waiting[T]) -> None:
        """Keep a request taken again (its answer was refused), as it was: it expires
        when it would have."""
        self._waiting[token] = waiting
        self._waiting = dict(sorted(self._waiting.items(), key=lambda kv: kv[1].since))

    def _forget_expired(self) -> None:
        now = self.clock()
        for token, waiting in list(self._waiting.items()):
            if now - waiting.since < self.expires:
                break  # kept in order: the rest are younger
            del self._waiting[token]

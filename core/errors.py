"""The one exception root of Herald.

Every error a user can cause or see is a :class:`HeraldError` whose message is a
sentence that person can act on. Driver and SDK errors are wrapped where they enter
``core`` so that surfaces (CLI, chat adapters, console) only ever catch this type.
"""

from __future__ import annotations


class HeraldError(Exception):
    """Base of every error Herald reports to a person.

    ``str(error)`` is a complete sentence meant for the user; nothing was changed
    when it is raised by a use case.
    """


class InvalidInput(HeraldError):
    """The request itself is wrong (bad time, destination, text, zone...)."""


class NotFound(HeraldError):
    """The object does not exist, or the actor may not see it."""


class PermissionDenied(HeraldError):
    """The actor may see the object but not act on it."""


class Conflict(HeraldError):
    """The object changed since the actor read it (stale version) or is in a state
    that does not allow the action."""


class DatabaseError(HeraldError):
    """The database could not be reached or is not at the expected schema."""


class ConfigError(HeraldError):
    """The environment or ``.env`` holds a value Herald cannot use."""

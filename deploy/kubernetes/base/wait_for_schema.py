"""Wait until the database is at the schema this image's code needs, then exit 0.

Every Herald pod runs it in an init container: the migration Job (`herald db upgrade`)
is the only writer of the schema, and `herald run` refuses a PostgreSQL database at
another revision, so the dispatchers and the bot start once the Job has finished
instead of crash-looping until it does. A database that cannot be reached yet is
waited for the same way.
"""

from __future__ import annotations

import logging
import time

from bot.logs import configure_logging
from core import db
from core.errors import DatabaseError
from core.settings import load_settings

#: Seconds between two looks at the database's revision.
POLL_SECONDS = 3.0

log = logging.getLogger("herald.wait_for_schema")


def ready(url: str, head: str) -> bool:
    """Whether the database at ``url`` is at revision ``head``; False (logged) when it
    is at another one, has no schema yet or cannot be reached."""
    try:
        current = db.current_revision(url)
    except DatabaseError as exc:
        log.info("database not reachable yet", extra={"reason": str(exc)})
        return False
    if current != head:
        log.info("waiting for the migration", extra={"revision": current, "head": head})
    return current == head


def main() -> None:
    settings = load_settings(None)
    configure_logging(settings, default_level="INFO")
    head = db.head_revision()
    while not ready(settings.database_url, head):
        time.sleep(POLL_SECONDS)
    log.info("database schema is at head", extra={"head": head})


if __name__ == "__main__":
    main()

"""Herald's Discord adapter (discord.py): the ``/schedule`` command group, its buttons
and dead-letter alerts. Named ``discord_bot`` so it does not shadow the library.

- :mod:`.actions` what each command and button does, as plain functions over ``Herald``
- :mod:`.choices` autocomplete for ``when``, ``id`` and ``timezone``
- :mod:`.targets` the ``to`` option: several channels, members and emails, ``or`` chains
- :mod:`.templates` named templates: ``template:`` autocomplete, ``data:``, ``/schedule templates``
- :mod:`.duplicates` a create refused for a duplicate, waiting for Create anyway or Cancel
- :mod:`.render` the text of replies, cards, autocomplete entries and alerts
- :mod:`.interact` what every callback shares: the actor, ephemeral answers, errors
- :mod:`.commands` the application commands, transformers and autocomplete (glue)
- :mod:`.components` the persistent buttons and the Edit form (glue)
- :mod:`.adapter` the client, start/stop, alerts, :func:`invite_url`
"""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    # discord.py imports the stdlib ``audioop`` (for voice, which Herald does not use),
    # deprecated since Python 3.11.
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord  # noqa: F401

from bot.discord_bot.adapter import (  # noqa: E402
    PERMISSIONS,
    DiscordAdapter,
    HeraldClient,
    create_adapter,
    invite_url,
)

__all__ = ["PERMISSIONS", "DiscordAdapter", "HeraldClient", "create_adapter", "invite_url"]

"""The HTTP API for applications (``/v1`` on ``herald run``'s HTTP port).

Its rooms: :mod:`~bot.api.problems` (RFC 9457 problems and which problem a use case's
refusal is), :mod:`~bot.api.requests` (the request framework: routes, calls, tokens,
rates, bodies), :mod:`~bot.api.handlers` (one per operation, each calling a use case),
:mod:`~bot.api.routes` (the route table, the one source of the routes served and of the
OpenAPI document), :mod:`~bot.api.openapi` (that document and its page),
:mod:`~bot.api.models` (the pydantic models of queries, bodies and answers) and
:mod:`~bot.api.server` (:func:`add_api`, which serves it all on an aiohttp app)."""

from bot.api.server import add_api

__all__ = ["add_api"]

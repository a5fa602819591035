"""Fixtures of the unit tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from bot.logs import QUIETED_LOGGERS


@pytest.fixture
def quieted_restored() -> Iterator[None]:
    """For a test that calls ``configure_logging``: the levels of the libraries' loggers
    it quiets (:data:`bot.logs.QUIETED_LOGGERS`) as they were, those the test is the
    first to create too. The root logger's handlers and level, and the levels of the
    loggers that existed before the test, are restored by the autouse fixture of
    ``tests/conftest.py``."""
    quieted = {name: logging.getLogger(name).level for name in QUIETED_LOGGERS}
    yield
    for logger, was in quieted.items():
        logging.getLogger(logger).setLevel(was)

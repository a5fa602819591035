"""What a time reading really examined: every budget meter made while it ran, and its
total, for the tests that hold readings to their counted budget."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from core.errors import InvalidInput
from core.timeexpr.metered import BUDGET, Meter


@contextmanager
def counted() -> Iterator[list[Meter]]:
    """Every meter made inside the block (their ``spent`` summed is what was examined,
    however many readings made one)."""
    meters: list[Meter] = []
    made = Meter.__init__

    def register(self: Meter, budget: int = BUDGET) -> None:
        made(self, budget)
        meters.append(self)

    Meter.__init__ = register  # type: ignore[method-assign]
    try:
        yield meters
    finally:
        Meter.__init__ = made  # type: ignore[method-assign]


def examined(call: Callable[[], Any]) -> tuple[Any, int, float]:
    """(what ``call`` returned or the InvalidInput it raised, candidates examined, CPU
    seconds)."""
    with counted() as meters:
        start = time.process_time()
        try:
            out: Any = call()
        except InvalidInput as refused:
            out = refused
        cpu = time.process_time() - start
    return out, sum(m.spent for m in meters), cpu

"""core stays free of chat SDKs and screens (the dependency rule of ARCHITECTURE.md)."""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = ("slack_bolt", "slack_sdk", "discord", "textual", "bot", "tui")


def test_importing_core_loads_no_surface() -> None:
    code = (
        "import json, sys, pkgutil, importlib, core\n"
        "for m in pkgutil.walk_packages(core.__path__, 'core.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(json.dumps(sorted({n.split('.')[0] for n in sys.modules})))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(proc.stdout))
    assert "core" in loaded
    assert loaded.isdisjoint(FORBIDDEN), loaded & set(FORBIDDEN)


def _implementers(cls: type, name: str) -> list[type]:
    return [c for c in cls.__mro__ if c is not object and name in vars(c)]


def test_every_use_case_of_the_facade_has_one_real_implementation() -> None:
    """Each method of Herald is implemented once in its classes (no stub for a sibling
    to fill in, no override), so whatever the order of its bases, it runs the same."""
    import inspect
    import itertools
    import random
    from datetime import UTC, datetime
    from typing import Any, cast

    from core.cases import Herald
    from core.cases.base import CaseBase
    from core.clock import ManualClock
    from core.settings import load_settings

    names = [n for n in dir(Herald) if not n.startswith("__")]
    assert "retry_dead_letters" in names and "create_schedule" in names
    for name in names:
        found = _implementers(Herald, name)
        assert len(found) == 1, f"{name} is defined in {[c.__name__ for c in found]}"
        member = inspect.getattr_static(Herald, name)
        function = getattr(member, "__func__", member)
        if inspect.isfunction(function):
            assert "NotImplementedError" not in inspect.getsource(function), name
    # the order of the bases cannot change what a name resolves to
    orders = 0
    every = list(itertools.permutations(Herald.__bases__))
    # 8 bases have 40,320 orders (two minutes): a fixed sample of them, the given
    # order and its reverse included
    picked = [every[0], every[-1], *random.Random(38).sample(every, min(len(every), 718))]
    for bases in picked:
        try:
            shuffled = type("Shuffled", bases, {})
        except TypeError:  # no consistent method order: Python refuses it outright
            continue
        orders += 1
        for name in names:
            assert inspect.getattr_static(shuffled, name) is inspect.getattr_static(Herald, name)
    assert orders > 1
    # every dependency is a constructor argument; nothing is set on it afterwards
    keywords = inspect.signature(Herald).parameters
    for dependency in ("on_due", "channels", "calendar_reader", "metrics"):
        assert keywords[dependency].kind is inspect.Parameter.KEYWORD_ONLY
    assert _implementers(Herald, "__init__") == [CaseBase]
    settings = load_settings(HERALD_DATABASE_URL="sqlite+aiosqlite:///unused.db", _env_file=None)
    metrics = object()
    herald = Herald(
        cast(Any, object()),
        settings,
        ManualClock(datetime(2026, 1, 1, tzinfo=UTC)),
        metrics=cast(Any, metrics),
    )
    assert herald.metrics is metrics and herald.calendar_reader is None
    for name in names:
        member = inspect.getattr_static(Herald, name)
        if inspect.isfunction(member):  # a method: bound to the one implementation
            assert getattr(herald, name).__func__ is member, name

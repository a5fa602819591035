"""The dispatcher depends on DispatchStore, and DispatchStore is exactly what it calls.

mypy proves that a Store satisfies the protocol (core/store/__init__.py); these tests
keep the protocol narrow (every method in it is one the dispatcher calls) and check
the same at run time."""

import inspect
import re
from pathlib import Path

import core.dispatcher
from core.store import DispatchStore, Store


def _members() -> set[str]:
    return {
        name
        for name, value in vars(DispatchStore).items()
        if not name.startswith("_") and inspect.isfunction(value)
    }


def test_the_protocol_is_what_the_dispatcher_calls() -> None:
    package = Path(inspect.getfile(core.dispatcher)).parent
    source = "".join(p.read_text(encoding="utf-8") for p in sorted(package.glob("*.py")))
    called = set(re.findall(r"(?:self\._?|(?<![\w.]))store\.(\w+)", source))
    assert called == _members()


def test_a_store_has_every_method_with_the_same_parameters() -> None:
    for name in _members():
        wanted = inspect.signature(getattr(DispatchStore, name)).parameters
        found = inspect.signature(getattr(Store, name)).parameters
        shape = [(p.name, p.kind, p.default) for p in wanted.values()]
        assert shape == [(p.name, p.kind, p.default) for p in found.values()], name
        assert inspect.iscoroutinefunction(getattr(Store, name)), name

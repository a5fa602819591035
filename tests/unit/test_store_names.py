"""``Store`` is one class over the query classes of ``core/store/``; a method defined in
two of them is silently shadowed by the first in its bases (issue 33: the list's count,
named ``count_schedules`` like the console's count of a filter, made the console's bulk
confirmation count with the wrong query). No name may be defined twice."""

from __future__ import annotations

from collections import Counter

from core.store import Store
from core.store.base import Gateway


def test_no_query_is_defined_in_two_of_stores_classes() -> None:
    names: Counter[str] = Counter()
    for base in Store.__mro__:
        if base in (Store, object) or not issubclass(base, Gateway) or base is Gateway:
            continue
        names.update(
            name
            for name, value in vars(base).items()
            if callable(value) and not (name.startswith("__") and name.endswith("__"))
        )
    assert [name for name, count in names.items() if count > 1] == []

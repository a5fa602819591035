"""core.calendars' face: every name it promises resolves, and a calendar worker process
starts without what only the event loop's side uses (httpx, the network guard, the
schedule models, pydantic): it runs the face first (``python -m core.calendars.worker``)."""

from __future__ import annotations

import subprocess
import sys

from core import calendars

#: Modules a worker must not import at start (checked in a real process).
HEAVY = ("httpx", "core.netguard", "core.models", "core.settings", "pydantic", "sqlalchemy")


def test_every_name_of_the_face_resolves() -> None:
    assert sorted(calendars.__all__) == sorted(calendars._HOMES)
    for name in calendars.__all__:
        assert getattr(calendars, name) is not None
    assert callable(calendars.fetch) and callable(calendars.export)  # not the sub-modules


def test_a_worker_starts_light() -> None:
    probe = (
        "import sys, core.calendars.worker; "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert proc.stdout.strip() == ""

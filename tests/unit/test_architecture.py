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

"""``python -m tui``: the console in this terminal (what ``herald console --serve`` runs
for each browser tab)."""

from __future__ import annotations

import asyncio
import sys

from core.errors import HeraldError
from core.settings import load_settings
from tui.app import run_console


def main() -> int:
    try:
        return asyncio.run(run_console(load_settings()))
    except HeraldError as exc:
        sys.stderr.write(f"herald console: {exc}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())

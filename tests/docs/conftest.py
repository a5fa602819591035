"""The generated documentation pages (docs/gen/) against the committed ones."""

from __future__ import annotations

import difflib

from docs.gen import Page


def assert_current(page: Page, command: str) -> None:
    """The committed ``page`` is what its generator makes from the code now; if not,
    the failure shows the first lines of the difference and the command that fixes it."""
    committed, fresh = page.committed(), page.render()
    if committed == fresh:
        return
    diff = difflib.unified_diff(
        committed.splitlines(), fresh.splitlines(), "committed", "generated", lineterm=""
    )
    shown = "\n".join(list(diff)[:40])
    raise AssertionError(
        f"{page.path} is out of date with the code; regenerate it with\n"
        f"    python -m docs.gen {command}\n"
        f"and commit it. The difference:\n{shown}"
    )

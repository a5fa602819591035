"""The generators of Herald's documentation pages that come from the code: the
configuration reference, the time-phrase gallery, the HTTP API reference and the
console's screenshots.

Run from the repository's root: ``python -m docs.gen all`` (or one of ``config``,
``phrases``, ``openapi``, ``screenshots``). ``docs`` has no ``__init__.py``: it is a
namespace package only so that ``docs.gen`` can be run and imported (tests/docs/).

Every page is a pure function of the code (:func:`Page.render`), so a test regenerates
it and compares it with the committed file; nothing written names a path of the
machine it was made on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: The repository's root (docs/gen/ is two folders below it).
ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@dataclass(frozen=True)
class Page:
    """A generated file: where it goes, relative to the root, and how it is made."""

    path: str
    render: Callable[[], str]

    def write(self) -> None:
        target = ROOT / self.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.render(), encoding="utf-8")

    def committed(self) -> str:
        """The file as it is in the working tree (empty when it is missing)."""
        target = ROOT / self.path
        return target.read_text(encoding="utf-8") if target.exists() else ""


def escape_cell(text: str) -> str:
    """``text`` fit for one cell of a Markdown table: pipes escaped, line breaks
    joined, and ``<`` outside code spans written as an entity so that Slack's
    ``<!channel>`` is shown rather than read as HTML."""
    parts = text.replace("\n", " ").split("`")
    for i in range(0, len(parts), 2):  # the even parts are outside code spans
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts).replace("|", "\\|")

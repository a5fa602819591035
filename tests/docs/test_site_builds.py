"""The documentation site builds with ``mkdocs build --strict`` (a broken link, anchor
or missing page fails it), and the README stays a short front door to it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from docs.gen import ROOT

#: The pages a build must make: the front page and the generated references.
KEY_PAGES = (
    "index.html",
    "reference/configuration/index.html",
    "reference/http-api/index.html",
    "time-phrases/index.html",
)


def test_the_site_builds_strictly_with_its_key_pages(tmp_path: Path) -> None:
    site = tmp_path / "site"
    built = subprocess.run(
        # not --quiet: it hides the warnings --strict counts, and a broken link passed
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    for page in KEY_PAGES:
        assert (site / page).is_file(), page
    api = (site / "reference/http-api/index.html").read_text(encoding="utf-8")
    assert "[OAD(" not in api and "/v1/schedules" in api  # the plugin rendered it


def test_the_readme_is_under_200_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines: the details belong in docs/"

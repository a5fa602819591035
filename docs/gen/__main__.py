"""``python -m docs.gen {all,config,phrases,openapi,screenshots}``, from the repository's
root: write the generated documentation files (docs/gen/__init__.py says which)."""

from __future__ import annotations

import argparse
import sys

from docs.gen import Page


def pages(kind: str) -> list[Page]:
    """The pages one subcommand writes (imported here: each generator's imports are its
    own, the screenshots' Textual ones the heaviest)."""
    if kind == "config":
        from docs.gen import config_reference

        return [Page(config_reference.PATH, config_reference.render)]
    if kind == "phrases":
        from docs.gen import phrases

        return [Page(phrases.PATH, phrases.render)]
    if kind == "openapi":
        from docs.gen import openapi

        return [Page(openapi.JSON_PATH, openapi.render_json), Page(openapi.PATH, openapi.render)]
    raise ValueError(f"no pages of kind {kind!r}")


TEXT_KINDS = ("config", "phrases", "openapi")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs.gen", description=__doc__)
    parser.add_argument("what", choices=("all", *TEXT_KINDS, "screenshots"))
    what = parser.parse_args(argv).what
    for kind in TEXT_KINDS if what == "all" else (what,) if what != "screenshots" else ():
        for page in pages(kind):
            page.write()
            sys.stdout.write(f"wrote {page.path}\n")
    if what in ("all", "screenshots"):
        from docs.gen import screenshots

        for path in screenshots.write_all():
            sys.stdout.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

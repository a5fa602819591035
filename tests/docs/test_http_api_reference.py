"""docs/reference/openapi.json is the document the service serves, and
docs/reference/http-api.md renders it (neoteroi's [OAD(...)] tag)."""

from __future__ import annotations

import json

from bot.api.openapi import openapi_document
from docs.gen import Page, openapi
from tests.docs.conftest import assert_current


def test_the_committed_document_is_the_served_one() -> None:
    assert_current(Page(openapi.JSON_PATH, openapi.render_json), "openapi")
    committed = Page(openapi.JSON_PATH, openapi.render_json).committed()
    assert json.loads(committed) == openapi_document()


def test_the_page_renders_the_committed_document() -> None:
    assert_current(Page(openapi.PATH, openapi.render), "openapi")
    assert "[OAD(./openapi.json)]" in openapi.render()

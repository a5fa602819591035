"""docs/time-phrases.md shows the phrase tables core.timeexpr's tests prove, each read
at the tables' fixed instant: the committed page is current."""

from __future__ import annotations

from docs.gen import Page, phrases
from tests.docs.conftest import assert_current
from tests.support.time_phrases import SAID, TABLE

PAGE = Page(phrases.PATH, phrases.render)


def test_the_committed_page_is_current() -> None:
    assert_current(PAGE, "phrases")


def test_every_phrase_of_both_tables_is_shown_with_its_read_back() -> None:
    text = phrases.render()
    for _, phrase, _, read_back, _, _ in SAID:
        assert f"`{phrase}`" in text and read_back in text
    for _, phrase, *_ in TABLE:
        assert phrases.phrase_cell(phrase) in text

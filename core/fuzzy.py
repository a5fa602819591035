"""The nearest known word to a misspelt one ("tomorow" -> "tomorrow"), for the
suggestions of a refusal.

rapidfuzz does the measuring (normalised Indel similarity, in C). It is imported only
here, and only when a suggestion is wanted: a refusal is the rare path, and the CLI's
start-up does not pay for it.
"""

from __future__ import annotations

from collections.abc import Iterable

#: The least similarity (0-100) for a known word to count as meant: "evry" -> "every"
#: scores 89 and "fridy" -> "friday" 91, while "soon" -> "noon" (75) is left alone.
CUTOFF = 80.0


def closest(word: str, known: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The known word most like ``word`` (ties: the first given), or None when none
    is at least ``cutoff`` alike."""
    from rapidfuzz import fuzz, process

    choices = list(known)  # a mapping would be matched on its values
    found = process.extractOne(word, choices, scorer=fuzz.ratio, score_cutoff=cutoff)
    return None if found is None else str(found[0])

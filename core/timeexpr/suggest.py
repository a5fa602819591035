"""What a refused phrase almost said: "tomorow at 9am" -> "tomorrow at 9am".

Each word Herald's grammar does not know is replaced by the nearest word it does
(:func:`core.fuzzy.closest`); numbers, clock times, dates and anything with a digit or a
sign are left as they are. The corrected phrase is offered when Herald reads it, or,
when the phrase was of no kind Herald knows at all, as the nearest words anyway
("fridy" -> "friday", which still needs a time). Only asked once a phrase is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from core.errors import InvalidInput
from core.timeexpr.words import MONTHS, NUMBER_WORDS, ORDINAL_WORDS, WEEKDAYS, Unread

# Every other word the readers know (core.timeexpr.every, _once, _words, and the
# English dateparser reads for core.timeexpr.freeform), so none is "corrected".
_GRAMMAR = """
    every each daily hourly weekly monthly yearly annually fortnightly fortnight
    day days weekday weekdays weekend weekends week weeks month months year years
    hour hours hr hrs minute minutes min mins second seconds sec secs wk wks
    other at on in the of and until till through starting beginning from for times
    time occurrence occurrences next this coming today tonight tomorrow after now
    noon midday midnight half quarter between end eod eom work working business
    am pm morning afternoon evening night ago last
"""


@lru_cache(maxsize=1)
def vocabulary() -> tuple[str, ...]:
    """The words of Herald's time grammar, each once (longer, commoner forms first, so
    a tie goes to "friday" rather than "fri")."""
    words = [*_GRAMMAR.split(), *WEEKDAYS, *MONTHS, *NUMBER_WORDS, *ORDINAL_WORDS]
    single = [w for w in words if " " not in w]
    return tuple(dict.fromkeys(sorted(single, key=lambda w: (-len(w), w))))


_TOKEN = re.compile(r"[a-z]+")
_PIECES = re.compile(r"(\s+|[,&;]+)")


def corrected(words: str) -> tuple[str, bool] | None:
    """``words`` (normalised) with every unknown word of three letters or more replaced
    by the nearest known one, and whether every unknown word found one; None when no
    word changed."""
    from core.fuzzy import closest

    known = vocabulary()
    known_set = set(known)
    changed, complete = False, True
    pieces = _PIECES.split(words)
    for i, piece in enumerate(pieces):
        if piece in known_set or not _TOKEN.fullmatch(piece):
            continue
        near = closest(piece, known) if len(piece) >= 3 else None
        if near is None:
            complete = False
        else:
            pieces[i], changed = near, True
    return ("".join(pieces), complete) if changed else None


def suggestion(
    words: str, refused: InvalidInput, read: Callable[[str], object]
) -> str | InvalidInput | None:
    """The phrase to offer instead of ``words`` (refused with ``refused``), or None.

    ``read`` reads a phrase (raising InvalidInput when it cannot). The corrected phrase
    is offered when it reads. When it does not, it is offered only if ``words`` was of
    no kind Herald knows (:class:`Unread`: a more precise refusal is kept) and every
    unknown word found a near one ("fridy" -> "friday", but not "hello there"); and
    when the corrected phrase is of a kind Herald knows but impossible ("febuary 30" ->
    "february 30", which has no day 30), its refusal is returned instead: it says why,
    where offering it would suggest another impossible time.
    """
    found = corrected(words)
    if found is None:
        return None
    fixed, complete = found
    try:
        read(fixed)
    except Unread:
        return fixed if complete and isinstance(refused, Unread) else None
    except InvalidInput as impossible:
        return impossible if complete and isinstance(refused, Unread) else None
    return fixed

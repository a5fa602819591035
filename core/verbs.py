"""The table of verbs: what people do to schedules and dead letters, once for every surface.

Each :class:`Verb` names the :class:`core.cases.Herald` method it calls, the words
people may type for it, who may do it (for help texts and greying out actions; the use
case still enforces it), the wording surfaces print once it is done and which surfaces
offer it. The CLI (``bot/cli/parser.py``, ``bot/cli/commands.py``), Slack
(``bot/slack/grammar.py``, ``commands.py``), Discord (``bot/discord_bot/commands.py``,
``actions.py``, ``components.py``) and the console (``tui/screens/schedules.py``,
``dead_letters.py``) read their verbs on schedules and on dead letters from here: the
words, the Discord commands, the buttons' labels and ids, the dispatch and the wording,
and the console greys out what the actor's role may not do by :attr:`Verb.who`. So a
new verb is its use case, one row in :data:`VERBS` and its help text.

Pure: imports no surface, store or use case (a Herald is passed to :func:`perform`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Literal

from core.errors import InvalidInput

Who = Literal["owner", "operator", "admin"]
Takes = Literal[
    "filters", "schedule_id", "schedule_id+version", "job_ids", "schedule_filter", "approval_ids"
]

CLI = "cli"
SLACK = "slack"
DISCORD = "discord"
CONSOLE = "console"
SURFACES = frozenset({CLI, SLACK, DISCORD, CONSOLE})


@dataclass(frozen=True)
class Verb:
    """One thing people do, and how every surface says it."""

    #: The word every surface offering it accepts, e.g. ``"cancel"``.
    name: str
    #: Other words for it (as /remind and other bots say them), e.g. ``("delete", "remove")``.
    aliases: tuple[str, ...]
    #: The :class:`core.cases.Herald` method it calls.
    method: str
    #: What it needs: ``"schedule_id"``, ``"schedule_id+version"`` (a refusal if the
    #: schedule changed since it was read), ``"job_ids"``, ``"filters"``, ``"schedule_filter"``.
    takes: Takes
    #: Who may: ``"owner"`` (a member on their own; operators and admins on anyone's),
    #: ``"operator"`` or ``"admin"``. For help texts and greying out; core enforces it.
    who: Who
    #: What the CLI prints after "Schedule 12 …": "paused", "skips its next occurrence".
    past: str
    #: One line of help.
    help: str
    #: Where it is offered (a surface may offer a subset).
    surfaces: frozenset[str] = SURFACES
    #: A button's or an action's label: "Pause", "Skip next".
    label: str = ""
    #: The headline's start before "schedule #12." in Slack and the console:
    #: "Paused", "Skipped the next occurrence of".
    done: str = ""
    #: Discord's heading on the changed schedule's card.
    heading: str = ""
    #: Whether it flips between active and paused (Discord shows the card's toggle).
    toggles: bool = False
    #: Extra keyword arguments the method takes, beyond the actor and what ``takes`` says.
    options: tuple[str, ...] = field(default=())
    #: A chat command's description (Discord's ``/schedule <verb>``).
    summary: str = ""
    #: The sentence shown to someone whose role lacks ``who`` (the console's role note).
    refused: str = ""
    #: The console's key for it on a row or a selection (its capital: on everything
    #: matching, where the use case can act in bulk); the console's schedules and dead
    #: letters screens make their bindings from it.
    key: str = ""
    #: What the CLI prints once done on dead letters, ``{count}`` filled in.
    told: str = ""

    @property
    def words(self) -> tuple[str, ...]:
        """The name and its aliases."""
        return (self.name, *self.aliases)

    def offered_on(self, surface: str) -> bool:
        return surface in self.surfaces


VERBS: tuple[Verb, ...] = (
    Verb(
        "list",
        (),
        "list_schedules",
        "filters",
        "owner",
        past="listed",
        help="List schedules.",
        surfaces=frozenset({CLI, SLACK, DISCORD}),
    ),
    Verb(
        "show",
        (),
        "show_schedule",
        "schedule_id",
        "owner",
        past="shown",
        help="Show one schedule with its jobs and attempts.",
        surfaces=frozenset({CLI, SLACK, DISCORD}),
    ),
    Verb(
        "edit",
        (),
        "edit_schedule",
        "schedule_id+version",
        "owner",
        past="updated",
        help="Change a schedule's time, text or destination.",
        label="Edit",
        options=("when", "text", "to", "tz"),
        key="e",
    ),
    Verb(
        "pause",
        (),
        "pause_schedule",
        "schedule_id+version",
        "owner",
        past="paused",
        help="Pause a schedule.",
        label="Pause",
        done="Paused",
        heading="Paused: nothing is sent until you resume it.",
        summary="Stop sending until resumed",
        toggles=True,
        key="p",
    ),
    Verb(
        "resume",
        (),
        "resume_schedule",
        "schedule_id+version",
        "owner",
        past="resumed",
        help="Resume a schedule.",
        label="Resume",
        done="Resumed",
        heading="Resumed.",
        summary="Start a paused schedule again",
        toggles=True,
        key="u",
    ),
    Verb(
        "skip",
        (),
        "skip_next",
        "schedule_id+version",
        "owner",
        past="skips its next occurrence",
        help="Skip a recurring schedule's next occurrence.",
        label="Skip next",
        done="Skipped the next occurrence of",
        heading="Skipped the next send.",
        summary="Skip the next send of a recurring schedule",
        key="k",
    ),
    Verb(
        "send-now",
        ("now",),
        "send_schedule_now",
        "schedule_id+version",
        "owner",
        past="is being sent now",
        help="Send a schedule's next occurrence now (a rule's later ones stay).",
        label="Send now",
        done="Sending now",
        heading="Sending now: the next occurrence goes at once; later ones stay.",
        summary="Send the next occurrence now",
        key="w",
    ),
    Verb(
        "cancel",
        ("delete", "remove"),
        "cancel_schedule",
        "schedule_id+version",
        "owner",
        past="cancelled",
        help="Cancel a schedule.",
        label="Cancel",
        done="Cancelled",
        heading="Cancelled: nothing more will be sent.",
        summary="Stop a schedule for good",
        key="c",
    ),
    Verb(
        "shift",
        (),
        "bulk_schedules",
        "schedule_filter",
        "owner",
        past="shifted",
        help="Move schedules' next run earlier or later.",
        surfaces=frozenset({CONSOLE}),
        label="Shift",
        done="Shifted",
        key="t",
    ),
    Verb(
        "retry",
        (),
        "retry_dead_letters",
        "job_ids",
        "owner",
        past="retried",
        help="retry (admins) or ask an admin to",
        label="Retry",
        done="Retried",
        key="r",
        told="Retrying {count} dead letter(s) now.",
    ),
    Verb(
        "approve",
        (),
        "approve",
        "approval_ids",
        "admin",
        past="approved",
        help="approve requests: held messages and dead-letter retries (approvers)",
        label="Approve",
        done="Approved",
        refused="Only an approver decides requests (an admin, for a retry).",
        key="a",
        told="Approved {count} request(s).",
    ),
    Verb(
        "reject",
        (),
        "reject",
        "approval_ids",
        "admin",
        past="rejected",
        help="turn down requests, saying why (approvers)",
        label="Reject",
        done="Rejected",
        options=("reason",),
        refused="Only an approver decides requests (an admin, for a retry).",
        key="x",
        told="Rejected {count} request(s).",
    ),
    Verb(
        "discard",
        (),
        "discard_dead_letters",
        "job_ids",
        "operator",
        past="discarded",
        help="give up",
        label="Discard",
        done="Discarded",
        refused="Only operators and admins can discard dead letters.",
        key="d",
        told="Discarded {count} dead letter(s).",
    ),
)

#: The verbs that act on one schedule at a version: pause, resume, skip, cancel.
STATE_VERBS: tuple[Verb, ...] = tuple(
    v for v in VERBS if v.takes == "schedule_id+version" and v.name != "edit"
)
#: The verbs deciding requests of every kind (core.approvals): a held message, a dead
#: letter's retry. They take approval ids; a surface acting on dead letters gives their
#: requests' (:meth:`core.cases.Herald.retry_approvals`).
APPROVAL_VERBS: tuple[Verb, ...] = tuple(v for v in VERBS if v.takes == "approval_ids")
#: The verbs on dead letters: retry (or ask for one), approve, reject, discard. Slack's
#: and Discord's alerts offer theirs as buttons, an admin's decision.
DEAD_VERBS: tuple[Verb, ...] = tuple(
    v for v in VERBS if v.takes == "job_ids" or v in APPROVAL_VERBS
)
#: The verbs on dead letters a chat alert offers as buttons (retry, discard): an admin's
#: decision (:meth:`core.cases.Herald.decide_dead_letters`).
DECISIONS: tuple[Verb, ...] = tuple(
    v for v in DEAD_VERBS if v.takes == "job_ids" and v.surfaces & {SLACK, DISCORD}
)

_BY_WORD: dict[str, Verb] = {word: v for v in VERBS for word in v.words}


def verb(word: str) -> Verb:
    """The verb ``word`` names (its name or an alias, any case); an unknown word is
    refused with the nearest known one."""
    found = _BY_WORD.get(word.strip().lower())
    if found is not None:
        return found
    near = difflib.get_close_matches(word.strip().lower(), list(_BY_WORD), n=1)
    hint = f' Did you mean "{near[0]}"?' if near else ""
    raise InvalidInput(f'"{word}" is not something Herald does.{hint}')


def offered(surface: str, verbs: tuple[Verb, ...] | None = None) -> tuple[Verb, ...]:
    """The verbs (of ``verbs``, default the whole table) ``surface`` offers, in the
    table's order."""
    return tuple(v for v in (VERBS if verbs is None else verbs) if v.offered_on(surface))


def aliases(verbs: tuple[Verb, ...] | None = None) -> dict[str, str]:
    """Each alias of ``verbs`` (default the whole table) and the name it stands for:
    ``{"delete": "cancel", …}``."""
    return {alias: v.name for v in (VERBS if verbs is None else verbs) for alias in v.aliases}


async def perform(herald: Any, which: Verb | str, actor: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``which``'s use case on ``herald`` as ``actor``: ``perform(herald, "pause",
    actor, 12, expected_version=3)``."""
    chosen = which if isinstance(which, Verb) else verb(which)
    return await getattr(herald, chosen.method)(actor, *args, **kwargs)

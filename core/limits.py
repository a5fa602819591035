"""The documented limits of every platform Herald talks to, in one table, and the
checks that hold a message to them when it is saved.

Each :class:`Limit` names the page it comes from. The chat adapters in ``bot/`` build
their payloads within these numbers (a contract test renders every builder with
extreme inputs and validates the output with slack_sdk's own models and this table);
:func:`check_message` refuses, when a schedule is created or edited, a message its
destination would refuse at send time, in one sentence that names the limit and the
size: "Discord allows 2,000 characters in a message; this message has 3,508."

``core`` imports no chat SDK (import-linter contract "core knows no surface"), so
user-supplied Slack blocks are checked here by structure, against the same numbers
slack_sdk's validators carry (``slack_sdk.models.blocks``, ``slack_sdk.models.views``);
the tests prove both agree on what they accept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass
from datetime import date
from typing import Any

from core import reminders, sms_text, templates
from core.destinations import Destination
from core.errors import InvalidInput

_SLACK_BLOCKS = "https://docs.slack.dev/reference/block-kit/blocks"
_SLACK_ELEMENTS = "https://docs.slack.dev/reference/block-kit/block-elements"
_SLACK_OBJECTS = "https://docs.slack.dev/reference/block-kit/composition-objects"
_DISCORD_EMBEDS = "https://discord.com/developers/docs/resources/message#embed-object-embed-limits"
_DISCORD_COMPONENTS = "https://discord.com/developers/docs/components/reference"
_DISCORD_COMMANDS = (
    "https://discord.com/developers/docs/interactions/application-commands"
    "#application-command-object-application-command-structure"
)


@dataclass(frozen=True)
class Limit:
    """At most ``size`` of ``unit`` in ``where``, as ``platform`` documents at ``source``."""

    platform: str
    size: int
    unit: str
    where: str
    source: str

    def sentence(self, actual: int, subject: str = "this message has") -> str:
        """``Discord allows 2,000 characters in a message; this message has 3,508.``
        (``subject`` ends with its verb)."""
        allows = f"{self.platform} allows {self.size:,} {self.unit} {self.where}"
        return f"{allows}; {subject} {actual:,}."

    def refuse(self, actual: int, subject: str = "this message has") -> TooLarge:
        """The error to raise for ``actual`` over this limit."""
        return TooLarge(self.sentence(actual, subject), self)


class TooLarge(InvalidInput):
    """A message (or part of it) over a platform's documented limit. ``limit`` is the
    :class:`Limit` it passed."""

    def __init__(self, message: str, limit: Limit) -> None:
        super().__init__(message)
        self.limit = limit


def _slack(size: int, unit: str, where: str, source: str) -> Limit:
    return Limit("Slack", size, unit, where, source)


def _discord(size: int, unit: str, where: str, source: str) -> Limit:
    return Limit("Discord", size, unit, where, source)


CHARS = "characters"

# --- Herald's own --------------------------------------------------------------------

#: Herald keeps at most this much text per message, whatever the destination (a
#: webhook's JSON body carries it as ``text``; see README "Limits").
HERALD_TEXT = Limit("Herald", 4000, CHARS, "in a message", "README.md#limits")

# --- Slack ---------------------------------------------------------------------------

#: chat.postMessage truncates text past 40,000 characters; Herald's 4,000 binds first.
SLACK_TEXT = _slack(
    40000, CHARS, "in a message", "https://docs.slack.dev/reference/methods/chat.postMessage"
)
SLACK_MESSAGE_BLOCKS = _slack(
    50, "blocks", "in a message", "https://docs.slack.dev/reference/methods/chat.postMessage"
)
SLACK_VIEW_BLOCKS = _slack(
    100, "blocks", "in a modal", "https://docs.slack.dev/reference/views/modal-views"
)
SLACK_HOME_BLOCKS = _slack(
    100, "blocks", "in the Home tab", "https://docs.slack.dev/surfaces/app-home"
)
SLACK_SECTION_TEXT = _slack(3000, CHARS, "in a section's text", f"{_SLACK_BLOCKS}/section-block")
SLACK_SECTION_FIELDS = _slack(10, "fields", "in a section", f"{_SLACK_BLOCKS}/section-block")
SLACK_FIELD_TEXT = _slack(2000, CHARS, "in a section field", f"{_SLACK_BLOCKS}/section-block")
SLACK_HEADER_TEXT = _slack(150, CHARS, "in a header", f"{_SLACK_BLOCKS}/header-block")
SLACK_CONTEXT_ELEMENTS = _slack(
    10, "elements", "in a context block", f"{_SLACK_BLOCKS}/context-block"
)
SLACK_ACTIONS_ELEMENTS = _slack(
    25, "elements", "in an actions block", f"{_SLACK_BLOCKS}/actions-block"
)
SLACK_MARKDOWN_TEXT = _slack(12000, CHARS, "in a markdown block", f"{_SLACK_BLOCKS}/markdown-block")
#: "The cumulative limit for all markdown blocks in a single payload is 12,000
#: characters" (docs.slack.dev/reference/block-kit/blocks/markdown-block).
SLACK_MARKDOWN_TOTAL = _slack(
    12000, CHARS, "in a message's markdown blocks together", f"{_SLACK_BLOCKS}/markdown-block"
)
SLACK_BLOCK_ID = _slack(255, CHARS, "in a block_id", f"{_SLACK_BLOCKS}/section-block")
SLACK_IMAGE_URL = _slack(3000, CHARS, "in an image URL", f"{_SLACK_BLOCKS}/image-block")
SLACK_ALT_TEXT = _slack(2000, CHARS, "in an image's alt text", f"{_SLACK_BLOCKS}/image-block")
SLACK_TEXT_OBJECT = _slack(3000, CHARS, "in a text object", f"{_SLACK_OBJECTS}/text-object")
SLACK_BUTTON_TEXT = _slack(75, CHARS, "in a button's text", f"{_SLACK_ELEMENTS}/button-element")
SLACK_BUTTON_VALUE = _slack(2000, CHARS, "in a button's value", f"{_SLACK_ELEMENTS}/button-element")
SLACK_BUTTON_URL = _slack(3000, CHARS, "in a button's URL", f"{_SLACK_ELEMENTS}/button-element")
SLACK_ACTION_ID = _slack(255, CHARS, "in an action_id", f"{_SLACK_ELEMENTS}/button-element")
SLACK_CONFIRM_TITLE = _slack(
    100, CHARS, "in a confirm title", f"{_SLACK_OBJECTS}/confirmation-dialog-object"
)
SLACK_CONFIRM_TEXT = _slack(
    300, CHARS, "in a confirm text", f"{_SLACK_OBJECTS}/confirmation-dialog-object"
)
SLACK_CONFIRM_BUTTON = _slack(
    30, CHARS, "in a confirm button", f"{_SLACK_OBJECTS}/confirmation-dialog-object"
)
SLACK_OPTION_TEXT = _slack(75, CHARS, "in an option's text", f"{_SLACK_OBJECTS}/option-object")
SLACK_OPTION_VALUE = _slack(150, CHARS, "in an option's value", f"{_SLACK_OBJECTS}/option-object")
SLACK_SELECT_OPTIONS = _slack(
    100, "options", "in a select menu", f"{_SLACK_ELEMENTS}/select-menu-element"
)
SLACK_PLACEHOLDER = _slack(
    150, CHARS, "in a placeholder", f"{_SLACK_ELEMENTS}/plain-text-input-element"
)
SLACK_INPUT_MAX_LENGTH = _slack(
    3000, CHARS, "in a plain_text_input", f"{_SLACK_ELEMENTS}/plain-text-input-element"
)
SLACK_LABEL = _slack(2000, CHARS, "in an input's label or hint", f"{_SLACK_BLOCKS}/input-block")
SLACK_MODAL_TITLE = _slack(
    24, CHARS, "in a modal's title", "https://docs.slack.dev/reference/views/modal-views"
)
SLACK_MODAL_BUTTON = _slack(
    24, CHARS, "in a modal's submit or close", "https://docs.slack.dev/reference/views/modal-views"
)
SLACK_PRIVATE_METADATA = _slack(
    3000,
    CHARS,
    "in a view's private_metadata",
    "https://docs.slack.dev/reference/views/modal-views",
)
SLACK_CALLBACK_ID = _slack(
    255, CHARS, "in a view's callback_id", "https://docs.slack.dev/reference/views/modal-views"
)

# --- Discord -------------------------------------------------------------------------

DISCORD_CONTENT = _discord(
    2000,
    CHARS,
    "in a message",
    "https://discord.com/developers/docs/resources/message#create-message-jsonform-params",
)
DISCORD_EMBEDS = _discord(10, "embeds", "in a message", _DISCORD_EMBEDS)
DISCORD_EMBED_TOTAL = _discord(6000, CHARS, "in a message's embeds together", _DISCORD_EMBEDS)
DISCORD_EMBED_TITLE = _discord(256, CHARS, "in an embed's title", _DISCORD_EMBEDS)
DISCORD_EMBED_DESCRIPTION = _discord(4096, CHARS, "in an embed's description", _DISCORD_EMBEDS)
DISCORD_EMBED_FIELDS = _discord(25, "fields", "in an embed", _DISCORD_EMBEDS)
DISCORD_FIELD_NAME = _discord(256, CHARS, "in an embed field's name", _DISCORD_EMBEDS)
DISCORD_FIELD_VALUE = _discord(1024, CHARS, "in an embed field's value", _DISCORD_EMBEDS)
DISCORD_FOOTER_TEXT = _discord(2048, CHARS, "in an embed's footer", _DISCORD_EMBEDS)
DISCORD_AUTHOR_NAME = _discord(256, CHARS, "in an embed's author name", _DISCORD_EMBEDS)
DISCORD_WEBHOOK_USERNAME = _discord(
    80,
    CHARS,
    "in a webhook's username",
    "https://discord.com/developers/docs/resources/webhook#execute-webhook",
)
DISCORD_ACTION_ROWS = _discord(5, "action rows", "in a message", _DISCORD_COMPONENTS)
DISCORD_ROW_BUTTONS = _discord(5, "buttons", "in an action row", _DISCORD_COMPONENTS)
DISCORD_BUTTON_LABEL = _discord(80, CHARS, "in a button's label", _DISCORD_COMPONENTS)
DISCORD_CUSTOM_ID = _discord(100, CHARS, "in a custom_id", _DISCORD_COMPONENTS)
DISCORD_MODAL_TITLE = _discord(
    45,
    CHARS,
    "in a modal's title",
    "https://discord.com/developers/docs/interactions/receiving-and-responding#interaction-response-object-modal",
)
DISCORD_MODAL_COMPONENTS = _discord(5, "components", "in a modal", _DISCORD_COMPONENTS)
DISCORD_LABEL = _discord(45, CHARS, "in a label", _DISCORD_COMPONENTS + "#label")
DISCORD_LABEL_DESCRIPTION = _discord(
    100, CHARS, "in a label's description", _DISCORD_COMPONENTS + "#label"
)
DISCORD_TEXT_INPUT = _discord(4000, CHARS, "in a text input", _DISCORD_COMPONENTS + "#text-input")
DISCORD_TEXT_DISPLAY = _discord(
    4000, CHARS, "in a text display", _DISCORD_COMPONENTS + "#text-display"
)
DISCORD_PLACEHOLDER = _discord(100, CHARS, "in a placeholder", _DISCORD_COMPONENTS + "#text-input")
DISCORD_COMMAND_NAME = _discord(32, CHARS, "in a command or option name", _DISCORD_COMMANDS)
DISCORD_COMMAND_DESCRIPTION = _discord(
    100, CHARS, "in a command or option description", _DISCORD_COMMANDS
)
DISCORD_COMMAND_OPTIONS = _discord(25, "options", "in a command", _DISCORD_COMMANDS)
DISCORD_CHOICES = _discord(
    25,
    "choices",
    "in an autocomplete answer",
    "https://discord.com/developers/docs/interactions/receiving-and-responding"
    "#interaction-response-object-autocomplete",
)
DISCORD_CHOICE_NAME = _discord(100, CHARS, "in a choice's name or value", _DISCORD_COMMANDS)

# --- email ---------------------------------------------------------------------------

#: RFC 5322 §2.1.1: a line SHOULD be at most 78 characters and MUST be at most 998.
EMAIL_SUBJECT = Limit(
    "Email (RFC 5322)",
    78,
    CHARS,
    "in a subject line",
    "https://www.rfc-editor.org/rfc/rfc5322#section-2.1.1",
)
EMAIL_LINE = Limit(
    "Email (RFC 5322)",
    998,
    CHARS,
    "in a line",
    "https://www.rfc-editor.org/rfc/rfc5322#section-2.1.1",
)
# The HTTP email providers (core.channels.email_providers) document no limit that binds
# before Herald's own 4,000 characters (HERALD_TEXT) and RFC 5322's 78-character subject
# (EMAIL_SUBJECT), so email adds no text limit of its own:
# - SendGrid v3 Mail Send: a whole message under 30 MB, custom_args under 10,000 bytes
#   (Herald's are the job id and key), a subject at least 1 character (subject_for never
#   gives an empty one); https://www.twilio.com/docs/sendgrid/api-reference/mail-send/mail-send
# - Mailgun Messages: a message up to 25 MB, the o:/h:/v: options 16 kB together (Herald
#   sends under 300 bytes of them);
#   https://documentation.mailgun.com/docs/mailgun/api-reference/openapi-final/tag/Messages/
# The HTML part is the text escaped (at most 6 characters for one, "&quot;") with a
# "<br>" per line: 4,000 characters make at most ~40 kB, far below either.

# --- SMS -----------------------------------------------------------------------------

_TWILIO_SMS = "https://www.twilio.com/docs/glossary/what-sms-character-limit"
#: Twilio takes at most 1,600 characters in a message's Body (error 21617 past it).
SMS_BODY = Limit("Twilio", 1600, CHARS, "in an SMS", _TWILIO_SMS)
#: Twilio recommends at most 10 segments a message (each is billed, and carriers may
#: drop a longer one): the most Herald saves.
SMS_SEGMENTS = Limit("Twilio", 10, "segments", "in an SMS", _TWILIO_SMS)
#: The largest schedule id and one of the longest dates (Wednesday, September) a
#: template's text is rendered with to count its segments.
_SMS_WORST: templates.Values = {"schedule.id": 2**63 - 1, "date": date(2028, 9, 27)}


def check_sms(body: str, template: bool = False) -> None:
    """Refuse an ``sms:`` text over Twilio's 1,600 characters or its 10 segments
    (:mod:`core.sms_text`), saying how many segments it needs and why in that
    encoding; a template by its longest rendering."""
    text = body
    if template:  # rendered once, then made as long as its longest rendering (digits)
        text = templates.render(body, _SMS_WORST)
        text += "0" * max(0, templates.longest_schedule_text(body) - len(text))
    subject = "this message, its variables filled in, can have" if template else "this message has"
    if len(text) > SMS_BODY.size:
        raise SMS_BODY.refuse(len(text), subject)
    encoding, count = sms_text.segments(text)
    if count <= SMS_SEGMENTS.size:
        return
    culprit = sms_text.not_gsm7(text)
    why = f"{encoding}, because of {culprit!r}" if culprit is not None else encoding
    needs = "can need" if template else "needs"
    raise TooLarge(
        f"This text {needs} {count} SMS segments ({why}); the most is "
        f"{SMS_SEGMENTS.size}: shorten it or split it into several schedules.",
        SMS_SEGMENTS,
    )


# --- push ----------------------------------------------------------------------------

BYTES = "bytes"
#: FCM takes at most 4,096 bytes of payload; Herald keeps 3,500 for the notification's
#: body (core.channels.push: the rest is its title, data and keys).
PUSH_BODY = Limit(
    "Firebase Cloud Messaging",
    3500,
    BYTES,
    "in a notification's text (of 4,096 for the whole payload)",
    "https://firebase.google.com/docs/cloud-messaging/concept-options#notifications_and_data_messages",
)
#: ntfy publishes at most 4,096 bytes as a message; a larger body is made an
#: attachment (refused where attachments are off), not the notification's text.
NTFY_BODY = Limit("ntfy", 4096, BYTES, "in a message", "https://docs.ntfy.sh/publish/#attachments")
BYTE_LIMITS: dict[str, Limit] = {"push": PUSH_BODY, "ntfy": NTFY_BODY}


def _check_bytes(limit: Limit, body: str, longest: int) -> None:
    """Refuse a text over a limit in UTF-8 bytes (a template by its longest rendering:
    what its variables add is digits and ASCII dates, a byte a character)."""
    size = len(body.encode("utf-8")) + max(0, longest - len(body))
    if size > limit.size:
        subject = "this message has" if longest == len(body) else "this message can have"
        raise limit.refuse(size, subject)


#: The text limit of each destination kind (others: Herald's own).
TEXT: dict[str, Limit] = {
    "slack": SLACK_TEXT,
    "discord": DISCORD_CONTENT,
    "discord-webhook": DISCORD_CONTENT,
}


def text_limit(destination: str | Destination) -> Limit:
    """The tighter of Herald's own limit and the destination's text limit."""
    kind = (
        destination.kind if isinstance(destination, Destination) else destination.partition(":")[0]
    )
    found = TEXT.get(kind)
    return found if found is not None and found.size < HERALD_TEXT.size else HERALD_TEXT


def clip(text: str, limit: Limit | int) -> str:
    """``text`` cut to fit ``limit`` with an ellipsis: only for what Herald *shows*
    (a quote, a label), never for a message it stores or sends."""
    size = limit if isinstance(limit, int) else limit.size
    return text if len(text) <= size else text[: max(0, size - 1)] + "…"


# --- the checks run when a schedule is saved --------------------------------------------


def check_message(
    destination: Destination, body: str, options: Mapping[str, Any] | None = None
) -> None:
    """Refuse (:class:`TooLarge`, or InvalidInput for a malformed part) a message its
    destination would refuse: the text (a template by the longest text it can expand
    to), Slack blocks, Discord embeds and webhook username, an email subject; with
    what Herald adds to it (:func:`slack_added_block`, :data:`DISCORD_CREDIT_ROOM`),
    so that a message that is saved is sent whole, its "scheduled by" line included.
    ``destination`` is as parsed (``core.channels.parse_destination``)."""
    options = options or {}
    limit = text_limit(destination)
    if len(body) > limit.size:
        raise limit.refuse(len(body))
    longest = len(body)
    if options.get("template"):
        longest = templates.longest_schedule_text(body)
        if longest > limit.size:
            raise limit.refuse(longest, "this message, its variables filled in, can have")
    kind = destination.kind
    if kind == "discord" and shared_channel(destination):
        _discord_credit_fits(longest, bool(options.get("template")))
    if kind == "slack" and options.get("blocks"):
        check_slack_blocks(options["blocks"], adds=slack_added_blocks(destination, options))
    if kind in ("discord", "discord-webhook") and options.get("embeds"):
        check_discord_embeds(options["embeds"])
    if kind == "discord-webhook" and isinstance(options.get("username"), str):
        _at_most(DISCORD_WEBHOOK_USERNAME, options["username"], "this username")
    if kind == "sms":
        check_sms(body, bool(options.get("template")))
    if kind in BYTE_LIMITS:
        _check_bytes(BYTE_LIMITS[kind], body, longest)
    if kind == "email" and isinstance(options.get("subject"), str):
        _at_most(EMAIL_SUBJECT, options["subject"], "this subject")


# --- what Herald adds to a message ---------------------------------------------------

#: The most characters of a name a Discord "scheduled by" line shows (a longer one is
#: clipped, with "…"): room for Discord's display names and usernames (32).
CREDIT_NAME = 40
#: Discord's "scheduled by" line before the name: a last line of small grey text
#: (``-#``), its ``@`` broken by a zero-width space (core.channels.discord.credited).
DISCORD_CREDIT_PREFIX = "\n-# scheduled by @\u200b"
#: The most characters that line takes: what a Discord message into a channel keeps
#: free of its 2,000 (https://discord.com/developers/docs/resources/message
#: #create-message-jsonform-params, ``content``).
DISCORD_CREDIT_ROOM = len(DISCORD_CREDIT_PREFIX) + CREDIT_NAME


def shared_channel(destination: Destination) -> bool:
    """Whether ``destination`` is a channel others read, where a message says who
    scheduled it: a Slack channel (``C…``, a private ``G…``, a thread in one; not a
    direct message ``@U…`` or ``D…``) or a Discord channel (not a direct message
    ``@…``). The dispatcher adds that line when the owner's tenant wants it
    (HERALD_SCHEDULED_BY); its room is kept whatever that says, so a tenant that turns
    it on later finds every message with room for it."""
    if destination.kind == "slack":
        return destination.target[:1] in ("C", "G")
    if destination.kind == "discord":
        return not destination.target.startswith("@")
    return False


#: The option of a schedule sent until done (core.until_done.OPTION): its messages
#: carry a Done button.
_UNTIL_DONE = "until_done"


def slack_added_blocks(destination: Destination, options: Mapping[str, Any]) -> list[str]:
    """The blocks Herald adds under a Slack message's own blocks, named as a refusal
    says them: the Snooze and Done buttons of a direct message
    (core.channels.slack.reminder_actions; a message sent until done has its Done
    button alone there), the "scheduled by" line of a channel
    (core.channels.slack.credit) and a message sent until done's Done button
    (core.channels.slack.done_actions)."""
    if destination.kind != "slack":
        return []
    done = _UNTIL_DONE in options
    if destination.is_dm:
        if done:
            return ["the Done button Herald adds"]
        return [] if options.get(reminders.NOTICE) else ["the Snooze and Done buttons Herald adds"]
    added = ['the "scheduled by" line Herald adds'] if shared_channel(destination) else []
    return [*added, "the Done button Herald adds"] if done else added


def _discord_credit_fits(longest: int, template: bool) -> None:
    """Refuse a Discord message into a channel with no room for its "scheduled by"
    line (``longest``: its longest text, a template's filled in)."""
    total = longest + DISCORD_CREDIT_ROOM
    if total <= DISCORD_CONTENT.size:
        return
    line = f'the "scheduled by" line Herald adds (up to {DISCORD_CREDIT_ROOM} characters)'
    if template:
        raise DISCORD_CONTENT.refuse(
            total, f"this message, its variables filled in and with {line}, can have"
        )
    raise DISCORD_CONTENT.refuse(total, f"with {line}, this message has")


def _at_most(limit: Limit, value: Sized, subject: str) -> None:
    """Refuse ``value`` longer than ``limit``; ``subject`` is what has it (no verb)."""
    if len(value) > limit.size:
        verb = "have" if subject.startswith("these ") else "has"
        raise limit.refuse(len(value), f"{subject} {verb}")


# --- Slack blocks ---------------------------------------------------------------------

#: Block types Herald checks (and slack_sdk parses); anything else is refused.
SLACK_BLOCK_TYPES = (
    "section",
    "divider",
    "header",
    "context",
    "actions",
    "image",
    "rich_text",
    "markdown",
)


def _bad(message: str) -> InvalidInput:
    return InvalidInput(message)


#: "block_id should be unique for each message and each iteration of a message"
#: (every block's page, e.g. https://docs.slack.dev/reference/block-kit/blocks/actions-block);
#: a markdown block's block_id "is ignored ... and will not be retained" (markdown-block).
_BLOCK_ID_PAGE = f"{_SLACK_BLOCKS}/actions-block"
#: An action_id "should be unique among all other action_ids in the containing block"
#: (https://docs.slack.dev/reference/block-kit/block-elements/button-element).
_ACTION_ID_PAGE = f"{_SLACK_ELEMENTS}/button-element"


def check_slack_blocks(blocks: Any, *, adds: Sequence[str] = ()) -> None:
    """Refuse Block Kit blocks Slack would refuse: too many (with the blocks Herald
    ``adds``, named as :func:`slack_added_blocks` names them), an unknown type, a text,
    button value, action_id or confirm dialog over its limit (the numbers slack_sdk
    validates), a block_id used twice, an action_id used twice in one block, markdown
    blocks over 12,000 characters together."""
    if not isinstance(blocks, list):
        raise _bad("The Slack blocks must be a JSON array of blocks.")
    _at_most(SLACK_MESSAGE_BLOCKS, blocks, "this message")
    if adds and len(blocks) + len(adds) > SLACK_MESSAGE_BLOCKS.size:
        raise SLACK_MESSAGE_BLOCKS.refuse(
            len(blocks) + len(adds), f"with {' and '.join(adds)}, this message has"
        )
    block_ids: dict[str, int] = {}
    markdown = 0
    for number, block in enumerate(blocks, start=1):
        where = f"block {number}"
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _bad(f"Slack block {number} is not a block: give each one a type.")
        kind = block["type"]
        if kind not in SLACK_BLOCK_TYPES:
            raise _bad(
                f"Slack has no block type {kind[:40]!r} (block {number}): use "
                f"{', '.join(SLACK_BLOCK_TYPES)}."
            )
        block_id = block.get("block_id")
        if block_id is not None:
            _text_at_most(SLACK_BLOCK_ID, block_id, f"{where}'s block_id")
            if kind != "markdown":  # ignored there (not retained): no clash
                first = block_ids.setdefault(block_id, number)
                if first != number:
                    raise _bad(
                        f"Slack block {number} has the block_id {block_id[:40]!r} of block "
                        f"{first}: each block_id must be unique in a message."
                    )
        if kind == "section":
            _section(block, where)
        elif kind == "header":
            _text_object(block.get("text"), SLACK_HEADER_TEXT, f"{where}'s header", plain=True)
        elif kind == "context":
            elements = _list(block.get("elements"), f"{where}'s elements", required=True)
            _at_most(SLACK_CONTEXT_ELEMENTS, elements, f"{where}")
            for i, element in enumerate(elements, start=1):
                if isinstance(element, dict) and element.get("type") == "image":
                    _image(element, f"{where}'s element {i}")
                else:
                    _text_object(element, SLACK_TEXT_OBJECT, f"{where}'s element {i}")
        elif kind == "actions":
            elements = _list(block.get("elements"), f"{where}'s elements", required=True)
            _at_most(SLACK_ACTIONS_ELEMENTS, elements, f"{where}")
            action_ids: dict[str, int] = {}
            for i, element in enumerate(elements, start=1):
                _element(element, f"{where}'s element {i}")
                action_id = element.get("action_id")
                if action_id is None:  # Slack makes one up
                    continue
                first = action_ids.setdefault(action_id, i)
                if first != i:
                    raise _bad(
                        f"Slack {where}'s element {i} has the action_id {action_id[:40]!r} of "
                        f"its element {first}: each action_id must be unique in its block."
                    )
        elif kind == "image":
            _image(block, where)
            if block.get("title") is not None:
                _text_object(block["title"], SLACK_ALT_TEXT, f"{where}'s title", plain=True)
        elif kind == "rich_text":
            _list(block.get("elements"), f"{where}'s elements", required=True)
        elif kind == "markdown":
            _text_at_most(SLACK_MARKDOWN_TEXT, block.get("text"), f"{where}'s text")
            markdown += len(block["text"])
    if markdown > SLACK_MARKDOWN_TOTAL.size:
        raise SLACK_MARKDOWN_TOTAL.refuse(markdown, "these have")


def _section(block: Mapping[str, Any], where: str) -> None:
    if block.get("text") is None and block.get("fields") is None:
        raise _bad(f"Slack {where} is a section without text or fields: give it one.")
    if block.get("text") is not None:
        _text_object(block["text"], SLACK_SECTION_TEXT, f"{where}'s text")
    fields = _list(block.get("fields"), f"{where}'s fields")
    _at_most(SLACK_SECTION_FIELDS, fields, where)
    for i, field in enumerate(fields, start=1):
        _text_object(field, SLACK_FIELD_TEXT, f"{where}'s field {i}")
    if block.get("accessory") is not None:
        accessory = block["accessory"]
        if isinstance(accessory, dict) and accessory.get("type") == "image":
            _image(accessory, f"{where}'s accessory")
        else:
            _element(accessory, f"{where}'s accessory")


def _element(element: Any, where: str) -> None:
    """An interactive element: Herald's messages carry buttons (links, or values an
    app of yours handles)."""
    if not isinstance(element, dict) or element.get("type") != "button":
        kind = element.get("type") if isinstance(element, dict) else None
        raise _bad(
            f"Slack {where} is a {str(kind)[:40]!r} element, which Herald does not check: "
            "use buttons (or send it without blocks)."
        )
    _text_object(element.get("text"), SLACK_BUTTON_TEXT, f"{where}'s text", plain=True)
    for name, limit in (
        ("action_id", SLACK_ACTION_ID),
        ("value", SLACK_BUTTON_VALUE),
        ("url", SLACK_BUTTON_URL),
    ):
        if element.get(name) is not None:
            _text_at_most(limit, element[name], f"{where}'s {name}")
    if element.get("style") not in (None, "primary", "danger"):
        raise _bad(f"Slack {where} has style {element['style']!r}: use primary or danger.")
    if element.get("confirm") is not None:
        _confirm(element["confirm"], f"{where}'s confirm")


def _confirm(dialog: Any, where: str) -> None:
    """A confirmation dialog: a title (100), a text (300), and the confirm and deny
    buttons' words (30 each; Slack says Yes and No without them), as
    https://docs.slack.dev/reference/block-kit/composition-objects/confirmation-dialog-object
    documents and slack_sdk's ConfirmObject validates."""
    if not isinstance(dialog, dict):
        raise _bad(f"Slack {where} must be a confirmation dialog object.")
    _text_object(dialog.get("title"), SLACK_CONFIRM_TITLE, f"{where} title", plain=True)
    _text_object(dialog.get("text"), SLACK_CONFIRM_TEXT, f"{where} text")
    for name in ("confirm", "deny"):
        if dialog.get(name) is not None:
            _text_object(dialog[name], SLACK_CONFIRM_BUTTON, f"{where} {name}", plain=True)
    if dialog.get("style") not in (None, "primary", "danger"):
        raise _bad(f"Slack {where} has style {dialog['style']!r}: use primary or danger.")


def _image(image: Mapping[str, Any], where: str) -> None:
    if image.get("image_url") is None and image.get("slack_file") is None:
        raise _bad(f"Slack {where} is an image without image_url: give it one.")
    if image.get("image_url") is not None:
        _text_at_most(SLACK_IMAGE_URL, image["image_url"], f"{where}'s image_url")
    _text_at_most(SLACK_ALT_TEXT, image.get("alt_text"), f"{where}'s alt_text")


def _text_object(value: Any, limit: Limit, where: str, *, plain: bool = False) -> None:
    kinds = ("plain_text",) if plain else ("plain_text", "mrkdwn")
    if not isinstance(value, dict) or value.get("type") not in kinds:
        raise _bad(f"Slack {where} must be a text object of type {' or '.join(kinds)}.")
    _text_at_most(limit, value.get("text"), where)


def _text_at_most(limit: Limit, value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise _bad(f"Slack {where} must be text.")
    _at_most(limit, value, where)


def _list(value: Any, where: str, *, required: bool = False) -> Sequence[Any]:
    if value is None and not required:
        return []
    if not isinstance(value, list) or (required and not value):
        raise _bad(f"Slack {where} must be a non-empty list.")
    return value


# --- Discord embeds --------------------------------------------------------------------


def check_discord_embeds(embeds: Any) -> None:
    """Refuse embeds Discord would refuse: more than 10, a part over its limit, or
    more than 6,000 characters in all of them together."""
    if not isinstance(embeds, list):
        raise _bad("The Discord embeds must be a JSON array of embeds.")
    _at_most(DISCORD_EMBEDS, embeds, "this message")
    total = 0
    for number, embed in enumerate(embeds, start=1):
        where = f"embed {number}"
        if not isinstance(embed, dict):
            raise _bad(f"Discord {where} is not an object.")
        parts: list[tuple[Limit, Any, str]] = [
            (DISCORD_EMBED_TITLE, embed.get("title"), f"{where}'s title"),
            (DISCORD_EMBED_DESCRIPTION, embed.get("description"), f"{where}'s description"),
            (DISCORD_FOOTER_TEXT, _sub(embed, "footer", "text"), f"{where}'s footer"),
            (DISCORD_AUTHOR_NAME, _sub(embed, "author", "name"), f"{where}'s author name"),
        ]
        fields = embed.get("fields")
        if fields is not None:
            if not isinstance(fields, list):
                raise _bad(f"Discord {where}'s fields must be a list.")
            _at_most(DISCORD_EMBED_FIELDS, fields, where)
            for i, field in enumerate(fields, start=1):
                if (
                    not isinstance(field, dict)
                    or field.get("name") is None
                    or field.get("value") is None
                ):
                    raise _bad(f"Discord {where}'s field {i} needs a name and a value.")
                parts.append((DISCORD_FIELD_NAME, field["name"], f"{where}'s field {i} name"))
                parts.append((DISCORD_FIELD_VALUE, field["value"], f"{where}'s field {i} value"))
        for limit, value, subject in parts:
            if value is None:
                continue
            if not isinstance(value, str):
                raise _bad(f"Discord {subject} must be text.")
            _at_most(limit, value, subject)
            total += len(value)
    if total > DISCORD_EMBED_TOTAL.size:
        raise DISCORD_EMBED_TOTAL.refuse(total, "these embeds have")


def _sub(embed: Mapping[str, Any], name: str, key: str) -> Any:
    part = embed.get(name)
    return part.get(key) if isinstance(part, dict) else None

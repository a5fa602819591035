"""The use cases: every action a person can take, from any surface, is one method of
:class:`Herald`, which every surface calls; permissions, tenancy, quotas and the audit
log live here, once.

One class per concern, on :class:`~core.cases.base.CaseBase` (the store, clock,
settings, channels and the helpers the concerns share, all given to its constructor):

- :mod:`core.cases.members`: a member's zone, name, admin standing and role;
- :mod:`core.cases.calendars`: skip calendars, event feeds, refreshes, exports;
- :mod:`core.cases.recipients`: whom a schedule goes to, read and checked;
- :mod:`core.cases.schedules`: schedules, on the calendars they skip and recipients;
- :mod:`core.cases.reminders`: a reminder's Snooze and Done buttons, on schedules;
- :mod:`core.cases.dead_letters`: dead letters, retries and their answers;
- :mod:`core.cases.providers`: the email and SMS providers' health (the console);
- :mod:`core.cases.console`: the operator console, on schedules, dead letters and
  providers;
- :mod:`core.cases.tokens`: the HTTP API's tokens (made, listed, revoked, read);
- :mod:`core.cases.devices`: members' push devices, and the save-time check of ``push:``;
- :mod:`core.cases.preferences`: members' preferences and a tenant's defaults;
- :mod:`core.cases.consent`: what a schedule's people say of it when it is saved
  (whether they accept its author, urgent over quiet hours, the read-back's notes);
- :mod:`core.cases.event_hooks`: applications' event hooks and the pull feed;
- :mod:`core.cases.notices`: authors told of their failures (chat adapters);
- :mod:`core.cases.holds`: whether a message waits for an approver when saved;
- :mod:`core.cases.approvals`: requests of every kind (held messages, dead-letter
  retries) listed and decided;
- :mod:`core.cases.until_done`: messages sent until done: their ladders, Done;
- :mod:`core.cases.channel_view`: a channel's agenda, duplicates, send-now and the
  congestion forecast;
- :mod:`core.cases.herald`: :class:`Herald`, the classes above composed;
- :mod:`core.cases.importer`: bulk import (a function over :class:`Herald`).

This module is the package's face: the surfaces import what they use from here, never
from a sub-module (an import-linter contract in ``pyproject.toml`` keeps them private).
"""

from core.cases.approvals import Decided
from core.cases.calendars import describe_before
from core.cases.channel_view import AgendaEntry, DestinationDay, Duplicated, SaveWarning
from core.cases.console import (
    SCHEDULE_BULK,
    Overview,
    RecipientState,
    Timeline,
    parse_shift,
    unavailable,
    verb_rule,
)
from core.cases.devices import (
    DEVICE_LABEL_MAX,
    DEVICE_PLATFORMS,
    DEVICE_TOKEN_MAX,
    MAX_DEVICES,
    token_tail,
)
from core.cases.event_hooks import (
    DESCRIPTION_MAX,
    KEY_PREFIX_MAX,
    PAGE_DEFAULT,
    PAGE_MAX,
    URL_MAX,
    EventPage,
    Registered,
    shown_url,
)
from core.cases.herald import Herald
from core.cases.importer import (
    FIELDS,
    ImportRateExceeded,
    ImportRejected,
    ImportTooLarge,
    import_schedules,
    more_invalid,
)
from core.cases.messages import OPTIONS, check_text
from core.cases.notices import NOTICE_LEASE_SECONDS, AuthorNotices, NoticeLine
from core.cases.preferences import (
    MAX_MEMBER_REF,
    MAX_PLACE,
    MemberPreferences,
    PreferenceChanges,
    prefs_json,
)
from core.cases.recipients import To, canonical, check_count, wanted_of
from core.cases.schedules import MAX_KEY
from core.cases.templates import DESCRIPTION_MAX as TEMPLATE_DESCRIPTION_MAX
from core.cases.templates import SUBJECT_MAX as TEMPLATE_SUBJECT_MAX
from core.cases.templates import Edited, TemplateDetail, WouldBreak
from core.cases.tokens import Unauthorized, scope_allows
from core.cases.until_done import AckFigures
from core.views import ScheduleDetail

__all__ = [
    "AgendaEntry",
    "DestinationDay",
    "Duplicated",
    "SaveWarning",
    "AckFigures",
    "Decided",
    "DEVICE_LABEL_MAX",
    "DEVICE_PLATFORMS",
    "DEVICE_TOKEN_MAX",
    "MAX_DEVICES",
    "DESCRIPTION_MAX",
    "KEY_PREFIX_MAX",
    "PAGE_DEFAULT",
    "PAGE_MAX",
    "URL_MAX",
    "EventPage",
    "Edited",
    "TEMPLATE_DESCRIPTION_MAX",
    "TEMPLATE_SUBJECT_MAX",
    "TemplateDetail",
    "WouldBreak",
    "Registered",
    "shown_url",
    "FIELDS",
    "MAX_KEY",
    "MAX_MEMBER_REF",
    "MAX_PLACE",
    "NOTICE_LEASE_SECONDS",
    "AuthorNotices",
    "NoticeLine",
    "OPTIONS",
    "SCHEDULE_BULK",
    "Herald",
    "ImportRateExceeded",
    "ImportRejected",
    "ImportTooLarge",
    "MemberPreferences",
    "Overview",
    "PreferenceChanges",
    "RecipientState",
    "ScheduleDetail",
    "To",
    "Timeline",
    "Unauthorized",
    "canonical",
    "check_count",
    "check_text",
    "describe_before",
    "import_schedules",
    "more_invalid",
    "parse_shift",
    "prefs_json",
    "scope_allows",
    "token_tail",
    "unavailable",
    "verb_rule",
    "wanted_of",
]

"""The API's named templates (issue 39): ``GET`` and ``POST /v1/templates``, ``GET``,
``PATCH`` (``If-Match`` on the version) and ``DELETE /v1/templates/{name}``, and ``POST
/v1/templates/{name}/preview``.

Their models and handlers live here, their routes in :data:`ROUTES`, which
bot/api/routes.py adds to the table. The use cases (core.cases.templates) check,
scope to the token's tenant (another tenant's template is not found), keep members to
using templates (operators and admins manage them) and audit. A schedule names a
template with ``template``, ``data`` and ``data_by_recipient`` (bot/api/models.py:
:data:`DataValues`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from bot.api.model_base import In, Out, example
from bot.api.models import DataValues, StrictFlag
from bot.api.problems import ApiProblem
from bot.api.requests import PREFIX, Call, Reply, Route
from core import render
from core.cases import TEMPLATE_DESCRIPTION_MAX, TEMPLATE_SUBJECT_MAX, WouldBreak
from core.errors import Conflict
from core.models import Template, TemplateVersion

#: What a variable may be declared as (core.render.KINDS).
Kind = Literal["text", "number", "date"]
#: A template's description and subject at most, as core checks them.
DESCRIPTION_MAX = TEMPLATE_DESCRIPTION_MAX
SUBJECT_MAX = TEMPLATE_SUBJECT_MAX
#: A template's name in a path (core.render.NAME).
NAME_PATTERN = f"^{render.NAME.pattern}$"

_BODY = (
    "Deploy {{ service }} v{{ version }} on {{ date | date: '%A' }} (schedule #{{ schedule.id }})"
)
_VARIABLES = {"service": "text", "version": "number"}
_SUMMARY_EXAMPLE: dict[str, Any] = {
    "name": "deploy",
    "version": 2,
    "description": "A deploy's announcement",
    "variables": _VARIABLES,
    "used_by": 12,
    "updated_at": "2026-03-02T09:00:00Z",
}
_VERSION_EXAMPLE: dict[str, Any] = {
    "version": 2,
    "body": _BODY,
    "subject": None,
    "blocks": None,
    "embeds": None,
    "variables": _VARIABLES,
    "author": "local:ada",
    "created_at": "2026-03-02T09:00:00Z",
}
_TEMPLATE_EXAMPLE: dict[str, Any] = {
    "name": "deploy",
    "description": "A deploy's announcement",
    "version": 2,
    "body": _BODY,
    "subject": None,
    "blocks": None,
    "embeds": None,
    "variables": _VARIABLES,
    "created_by": "local:ada",
    "updated_by": "local:ada",
    "created_at": "2026-03-01T09:00:00Z",
    "updated_at": "2026-03-02T09:00:00Z",
    "versions": [
        _VERSION_EXAMPLE,
        {**_VERSION_EXAMPLE, "version": 1, "body": "Deploy {{ service }}"},
    ],
    "used_by": [42, 43],
}


def _kinds() -> str:
    return "; ".join(f"{kind}: {what}" for kind, what in render.KINDS.items())


def _builtins() -> str:
    return ", ".join(f"{{{{ {name} }}}}" for name in render.BUILTINS)


_BODY_WORDS = (
    "The message, in Liquid: {{ service }} fills in a declared variable, "
    f"{_builtins()} are filled in by Herald; filters such as "
    "{{ date | date: '%A' }} and tags such as {% if %} and {% for %} work (no include or "
    f"render). At most {render.MAX_SOURCE:,} characters."
)


class TemplateCreate(In):
    model_config = example(
        {
            "name": "deploy",
            "body": _BODY,
            "variables": _VARIABLES,
            "description": "A deploy's announcement",
        }
    )

    name: str = Field(
        min_length=1,
        max_length=64,
        description="Unique in the tenant: 1 to 64 lower-case letters, digits, - and _.",
        examples=["deploy"],
    )
    body: str = Field(min_length=1, max_length=render.MAX_SOURCE, description=_BODY_WORDS)
    subject: str | None = Field(
        default=None, max_length=SUBJECT_MAX, description="An email subject (Liquid, as the body)."
    )
    blocks: list[dict[str, Any]] | None = Field(
        default=None, description="Slack Block Kit blocks; their texts are Liquid."
    )
    embeds: list[dict[str, Any]] | None = Field(
        default=None, description="Discord embeds; their texts are Liquid."
    )
    variables: dict[str, Kind] = Field(
        default_factory=dict,
        max_length=render.MAX_VARIABLES,
        description=f"The variables it uses, name → kind ({_kinds()}). A schedule gives "
        "each a value of its kind; a name it uses undeclared is refused.",
    )
    description: str = Field(default="", max_length=DESCRIPTION_MAX)


class TemplateEdit(In):
    """What to change (at least one of body, subject, blocks, embeds, variables,
    description). A change of its parts is a new version, and the schedules using it
    move to it."""

    model_config = example(
        {"body": "Deploy {{ service }} v{{ version }} is live", "force_version": False}
    )

    body: str | None = Field(
        default=None, min_length=1, max_length=render.MAX_SOURCE, description=_BODY_WORDS
    )
    subject: str | None = Field(
        default=None, max_length=SUBJECT_MAX, description='The new subject ("": none).'
    )
    blocks: list[dict[str, Any]] | None = Field(
        default=None, description="The new Slack blocks ([]: none)."
    )
    embeds: list[dict[str, Any]] | None = Field(
        default=None, description="The new Discord embeds ([]: none)."
    )
    variables: dict[str, Kind] | None = Field(
        default=None,
        max_length=render.MAX_VARIABLES,
        description="Every variable anew, name → kind.",
    )
    description: str | None = Field(default=None, max_length=DESCRIPTION_MAX)
    force_version: StrictFlag = Field(
        default=False,
        description="Save even when the new version would break schedules using it (a "
        "limit passed, a value missing): those stay on the version they had, the others "
        "move. Without it such an edit is refused, naming them.",
    )


class PreviewIn(In):
    model_config = example({"data": {"service": "api", "version": 1.4}})

    data: DataValues = Field(
        default_factory=dict,
        description="Values of its variables; one not given shows as {{ name }}.",
    )
    version: int | None = Field(
        default=None, ge=1, le=2**31 - 1, description="A version (default: the current)."
    )


class TemplateSummary(Out):
    model_config = example(_SUMMARY_EXAMPLE)

    name: str
    version: int = Field(description="Its current version (its ETag).")
    description: str
    variables: dict[str, str] = Field(description="Its variables, name → kind.")
    used_by: int = Field(description="How many live schedules (active or paused) use it.")
    updated_at: datetime


class TemplateList(Out):
    model_config = example({"templates": [_SUMMARY_EXAMPLE]})

    templates: list[TemplateSummary] = Field(description="The tenant's templates, by name.")


class TemplateVersionOut(Out):
    model_config = example(_VERSION_EXAMPLE)

    version: int
    body: str
    subject: str | None
    blocks: list[dict[str, Any]] | None
    embeds: list[dict[str, Any]] | None
    variables: dict[str, str]
    author: str
    created_at: datetime


class TemplateOut(Out):
    model_config = example(_TEMPLATE_EXAMPLE)

    name: str
    description: str
    version: int = Field(description="Its current version: send it back in If-Match to edit.")
    body: str
    subject: str | None
    blocks: list[dict[str, Any]] | None
    embeds: list[dict[str, Any]] | None
    variables: dict[str, str] = Field(description="Its variables, name → kind.")
    created_by: str
    updated_by: str
    created_at: datetime
    updated_at: datetime
    versions: list[TemplateVersionOut] = Field(description="Every version, newest first.")
    used_by: list[int] = Field(
        description="The live schedules using it, by id (a member: their own only)."
    )


class KeptOut(Out):
    schedule_id: int
    reason: str = Field(description="Why the new version would break it.")


class TemplateEdited(TemplateOut):
    model_config = example(
        {
            **_TEMPLATE_EXAMPLE,
            "moved": [42],
            "kept": [
                {
                    "schedule_id": 43,
                    "reason": "Template 'deploy' v2 filled in for discord:1234 at its "
                    "longest: Discord allows 2,000 characters in a message; this one "
                    "has 2,480.",
                }
            ],
        }
    )

    moved: list[int] = Field(description="Schedules moved to the new version.")
    kept: list[KeptOut] = Field(
        description="Schedules kept on the version they had (force_version), and why."
    )


class PreviewOut(Out):
    model_config = example(
        {
            "name": "deploy",
            "version": 2,
            "text": "Deploy api v1.4 on Monday (schedule #123)",
            "subject": None,
            "blocks": None,
            "embeds": None,
        }
    )

    name: str
    version: int = Field(description="The version filled in.")
    text: str = Field(description="The body filled in (sample built-ins: schedule #123, Ann).")
    subject: str | None
    blocks: list[dict[str, Any]] | None
    embeds: list[dict[str, Any]] | None


def _summary(template: Template, used_by: int) -> TemplateSummary:
    return TemplateSummary(
        name=template.name,
        version=template.version,
        description=template.description,
        variables=dict(template.variables),
        used_by=used_by,
        updated_at=template.updated_at,
    )


def _version(v: Template | TemplateVersion) -> TemplateVersionOut:
    author = v.author if isinstance(v, TemplateVersion) else v.updated_by
    return TemplateVersionOut(
        version=v.version,
        body=v.body,
        subject=v.subject,
        blocks=v.blocks,
        embeds=v.embeds,
        variables=dict(v.variables),
        author=author,
        created_at=v.created_at if isinstance(v, TemplateVersion) else v.updated_at,
    )


def _detail(
    template: Template, versions: Sequence[Template | TemplateVersion], used_by: list[int]
) -> dict[str, Any]:
    return {
        "name": template.name,
        "description": template.description,
        "version": template.version,
        "body": template.body,
        "subject": template.subject,
        "blocks": template.blocks,
        "embeds": template.embeds,
        "variables": dict(template.variables),
        "created_by": template.created_by,
        "updated_by": template.updated_by,
        "created_at": template.created_at,
        "updated_at": template.updated_at,
        "versions": [_version(v) for v in versions],
        "used_by": used_by,
    }


def _etag(template: Template) -> dict[str, str]:
    return {"ETag": f'"{template.version}"'}


def _name(call: Call) -> str:
    return call.request.match_info["name"]


async def create_template(call: Call) -> Reply:
    body: TemplateCreate = call.body
    made = await call.herald.add_template(
        call.principal,
        body.name,
        body.body,
        subject=body.subject,
        blocks=body.blocks,
        embeds=body.embeds,
        variables=dict(body.variables),
        description=body.description,
    )
    out = TemplateOut(**_detail(made, [made], []))  # its version 1, as saved
    headers = {**_etag(made), "Location": f"{PREFIX}/templates/{made.name}"}
    return Reply(out, 201, headers)


async def list_templates(call: Call) -> Reply:
    rows = await call.herald.list_templates(call.principal)
    return Reply(TemplateList(templates=[_summary(t, n) for t, n in rows]))


async def show_template(call: Call) -> Reply:
    detail = await call.herald.show_template(call.principal, _name(call))
    used = [s.id for s in detail.used_by if s.id is not None]
    out = TemplateOut(**_detail(detail.template, detail.versions, used))
    return Reply(out, headers=_etag(detail.template))


async def edit_template(call: Call) -> Reply:
    """A new version at the version If-Match names (a stale one is 412, as a
    schedule's is); an edit that would break schedules using it is refused naming them
    (422), unless ``force_version``."""
    body: TemplateEdit = call.body
    version = call.if_match()
    try:
        edited = await call.herald.edit_template(
            call.principal,
            _name(call),
            body=body.body,
            subject=body.subject,
            blocks=body.blocks,
            embeds=body.embeds,
            variables=None if body.variables is None else dict(body.variables),
            description=body.description,
            expected_version=version,
            force_version=body.force_version,
        )
    except Conflict as exc:
        if version is not None:
            raise ApiProblem(412, str(exc)) from None
        raise
    except WouldBreak as exc:
        raise ApiProblem(422, exc.said('"force_version": true')) from None
    detail = await call.herald.show_template(call.principal, edited.template.name)
    used = [s.id for s in detail.used_by if s.id is not None]
    out = TemplateEdited(
        **_detail(edited.template, detail.versions, used),
        moved=edited.moved,
        kept=[KeptOut(schedule_id=i, reason=why) for i, why in edited.kept],
    )
    return Reply(out, headers=_etag(edited.template))


async def remove_template(call: Call) -> Reply:
    removed = await call.herald.remove_template(call.principal, _name(call))
    return Reply(_summary(removed, 0))


async def preview_template(call: Call) -> Reply:
    body: PreviewIn | None = call.body
    data = {} if body is None else dict(body.data)
    asked = None if body is None else body.version
    name = _name(call)
    if asked is None:
        asked = (await call.herald.show_template(call.principal, name)).template.version
    parts = await call.herald.preview_template(call.principal, name, data, version=asked)
    out = PreviewOut(
        name=name,
        version=asked,
        text=parts.body,
        subject=parts.subject,
        blocks=parts.blocks,
        embeds=parts.embeds,
    )
    return Reply(out)


_TEMPLATE = "/templates/{name}"
_IF_MATCH = {
    "If-Match": 'The template version you read, as its ETag ("3"); a newer one is refused (412).'
}

#: The routes of named templates (bot/api/routes.py adds them).
ROUTES: tuple[Route, ...] = (
    Route(
        "GET",
        "/templates",
        "listTemplates",
        "The tenant's named templates, each with how many schedules use it",
        "read",
        list_templates,
        TemplateList,
        tag="templates",
    ),
    Route(
        "POST",
        "/templates",
        "createTemplate",
        "Add a named template (operators and admins)",
        "write",
        create_template,
        TemplateOut,
        201,
        body=TemplateCreate,
        problems=(409, 422),
        tag="templates",
        description="Members use templates; operators and admins add, edit and remove "
        "them. The answer's ETag is its version (1).",
    ),
    Route(
        "GET",
        _TEMPLATE,
        "getTemplate",
        "One template, its versions and the schedules using it (its ETag is its version)",
        "read",
        show_template,
        TemplateOut,
        problems=(404,),
        tag="templates",
    ),
    Route(
        "PATCH",
        _TEMPLATE,
        "editTemplate",
        "Change a template: a new version, which the schedules using it move to",
        "write",
        edit_template,
        TemplateEdited,
        body=TemplateEdit,
        headers=_IF_MATCH,
        problems=(404, 409, 412, 422),
        tag="templates",
        description="Each schedule using it is checked with its own data for every "
        "destination; a version that would break some is refused naming them, unless "
        "force_version keeps those on the version they had. The answer says which "
        "moved and which were kept, and why.",
    ),
    Route(
        "DELETE",
        _TEMPLATE,
        "removeTemplate",
        "Remove a template and its versions (refused while a live schedule uses it)",
        "write",
        remove_template,
        TemplateSummary,
        problems=(404, 422),
        tag="templates",
    ),
    Route(
        "POST",
        _TEMPLATE + "/preview",
        "previewTemplate",
        "A template filled in with data and sample built-ins",
        "read",
        preview_template,
        PreviewOut,
        body=PreviewIn,
        body_optional=True,
        problems=(404, 422),
        tag="templates",
        description="Nothing is saved. A variable without a value shows as {{ name }}.",
    ),
)

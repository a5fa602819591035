"""The CLI through a running service's HTTP API instead of the database.

With ``HERALD_API_URL`` and ``HERALD_API_TOKEN`` set (in the environment or ``.env``),
``herald schedule``, ``list``, ``show``, ``edit``, ``pause``, ``resume``, ``skip``, ``send-now``,
``cancel``, ``prefs`` (bot/cli/prefs.py), ``done``, ``awaiting`` (bot/cli/until_done.py)
and ``approvals`` (bot/cli/approvals.py) ask ``herald run`` over ``/v1`` as the
token's member. Such a command imports neither the store nor SQLAlchemy: it starts in
a few tens of milliseconds and waits on no database lock, so many scripts can schedule
at once while the dispatcher drains a burst. Every other command (and every command
without those settings) reads the database as before. The answers read as the local
commands' do; refusals are the service's own sentences. A redirect is followed only
within the URL's origin (scheme, host, port): the token is never sent to another
address.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from bot.cli.approvals import remote_approvals
from bot.cli.parser import EXIT_ERROR
from bot.cli.prefs import remote_prefs
from bot.cli.until_done import ladder_arg, remote_awaiting, remote_done
from core.until_done import step_label
from core.verbs import CLI, STATE_VERBS, offered, verb

TIMEOUT = 30.0


class RemoteError(Exception):
    """A refusal or failure, in the sentence to print."""


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``, the port spelled out for http and https."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def _spelled(url: str) -> str:
    scheme, host, port = _origin(url)
    return f"{scheme}://{host}:{port}"


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the origin (scheme, host, port) it was sent to:
    the bearer token goes nowhere else (not to another host, nor from https to http)."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        target = urllib.parse.urljoin(req.full_url, newurl)
        if _origin(target) != _origin(req.full_url):
            fp.close()
            raise RemoteError(
                f"Herald at {_spelled(req.full_url)} redirected the request to "
                f"{_spelled(target)}, another address; the token is not sent there: set "
                "HERALD_API_URL to the address the service answers on."
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_SameOriginRedirects())


def endpoint(environ: dict[str, str] | None = None) -> tuple[str, str] | None:
    """``(url, token)`` when both are set (environment first, then ``.env``)."""
    env = os.environ if environ is None else environ
    url, token = env.get("HERALD_API_URL"), env.get("HERALD_API_TOKEN")
    if (url is None or token is None) and os.path.exists(".env"):
        from dotenv import dotenv_values

        values = dotenv_values(".env")
        url = url or values.get("HERALD_API_URL")
        token = token or values.get("HERALD_API_TOKEN")
    if url and token:
        return url.rstrip("/"), token
    return None


class Remote:
    """One command against ``url`` with ``token``."""

    def __init__(self, url: str, token: str, out: Any = None) -> None:
        self.url = url
        self.token = token
        self.out = out or sys.stdout

    def call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        target = f"{self.url}/v1{path}"
        if query:
            target += "?" + urllib.parse.urlencode(
                {k: str(v).lower() if isinstance(v, bool) else v for k, v in query.items()}
            )
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(target, data=data, method=method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with _OPENER.open(request, timeout=TIMEOUT) as response:
                return response.status, dict(response.headers), json.load(response)
        except urllib.error.HTTPError as exc:
            raise RemoteError(_problem_text(exc)) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RemoteError(
                f"Cannot reach Herald at {self.url} ({reason}): is `herald run` up, and "
                "HERALD_API_URL right?"
            ) from None

    def emit(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def emit_json(self, data: Any) -> None:
        self.out.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")

    # --- commands ---------------------------------------------------------------------

    def schedule(self, a: argparse.Namespace) -> None:
        from bot.cli.options import say_not_created

        body = _schedule_body(a)
        query = {"strict": True} if a.strict else None
        status, _, s = self.call("POST", "/schedules", body, query=query)
        created = status == 201
        _say_warnings(s)
        if a.json:
            self.emit_json({**s, "created": created})
            return
        if not created:
            say_not_created(s["id"], a.key)
        if a.quiet:
            self.emit(str(s["id"]))
            return
        zone = s["timezone"]
        self.emit(f"Schedule {s['id']}: {s['description']}, in {zone}.")
        self._held_and_ladder(s)
        if s.get("priority", "normal") != "normal":
            self.emit(f"  priority: {s['priority']}")
        self.emit(f"  to:   {_recipients_text(s)}")
        if times := _their_times(s):
            self.emit(f"  their time: {times}")
        if s["next_run_at"]:
            self.emit(f"  next: {_local(s['next_run_at'], zone)} {zone}   ({s['next_run_at']})")

    def _held_and_ladder(self, s: dict[str, Any]) -> None:
        """What a read-back says of a schedule held for approval or sent until done
        (bot/cli/schedules.py's held_and_ladder, from the API's fields)."""
        if s.get("lifecycle") == "awaiting":
            self.emit(
                "  awaiting approval: nothing is sent until an approver approves it "
                "(herald approvals list shows the request)"
            )
        if s.get("until_done"):
            self.emit(f"  sent {s['until_done']['words']}")

    def list(self, a: argparse.Namespace) -> None:
        if a.limit < 1:
            raise RemoteError("The limit must be at least 1.")
        rows: list[dict[str, Any]] = []
        query: dict[str, Any] = {"all": a.all}
        for name, value in (("state", a.state), ("to", a.to), ("search", a.search)):
            if value is not None:
                query[name] = value
        if a.tenant is not None:
            query["tenant"] = a.tenant
        while len(rows) < a.limit:
            query["limit"] = min(200, a.limit - len(rows))
            _, _, page = self.call("GET", "/schedules", query=query)
            rows += page["items"]
            if not page["next_cursor"]:
                break
            query["cursor"] = page["next_cursor"]
        if a.json:
            self.emit_json(rows)
            return
        if not rows:
            self.emit("No schedules.")
            return
        from bot.cli.options import priority_marked, table_lines

        def cells(s: dict[str, Any]) -> tuple[str, str, str, str]:
            """The ID, STATE, NEXT and TEXT columns, as both tables show them."""
            return (
                str(s["id"]),
                priority_marked(s["state"], s.get("priority", "normal")),
                f"{_local(s['next_run_at'], s['timezone'])} {s['timezone']}"
                if s["next_run_at"]
                else "-",
                " ".join(s["text"].split())[:60],
            )

        if any(s.get("author") for s in rows):  # a channel's agenda: whose each is
            agenda = []
            for s in rows:
                sid, state, next_at, text = cells(s)
                agenda.append([sid, state, str(s["author"]), s["description"], next_at, text])
            header = ["ID", "STATE", "AUTHOR", "WHEN", "NEXT (in the schedule's zone)", "TEXT"]
            for line in table_lines(header, agenda):
                self.emit(line)
            return

        header = ["ID", "STATE", "NEXT (in the schedule's zone)", "TO", "TEXT"]
        table = []
        for s in rows:
            sid, state, next_at, text = cells(s)
            table.append([sid, state, next_at, _first_and_more(s), text])
        if {s["tenant"] for s in rows} != {"local"}:
            header = ["TENANT", *header]
            table = [[s["tenant"], *row] for s, row in zip(rows, table, strict=True)]

        for line in table_lines(header, table):
            self.emit(line)

    def show(self, a: argparse.Namespace) -> None:
        _, _, s = self.call("GET", f"/schedules/{a.id}")
        archived = "?archived=true" if a.archived else ""
        _, _, detail = self.call("GET", f"/schedules/{a.id}/jobs{archived}")
        if a.json:
            self.emit_json({**s, "jobs": detail["jobs"], "attempts": detail["attempts"]})
            return
        self.emit(f"Schedule {s['id']} ({s['state']}, version {s['version']})")
        listed = s.get("recipients") or [{"to": [s["destination"]]}]
        if len(listed) == 1:
            self.emit(f"  to:      {_recipient_words(listed[0])}")
        else:
            self.emit(f"  to:      {len(listed)} recipients")
            for i, r in enumerate(listed, 1):
                self.emit(f"    {i}. {_recipient_words(r)}")
        self.emit(f"  when:    {s['expression']}  [{s['description']}]")
        self.emit(f"  next:    {_local(s['next_run_at'], s['timezone'])} {s['timezone']}")
        self.emit(f"  priority: {s.get('priority', 'normal')}")
        if streak := s.get("failed_streak"):
            row = "occurrence" if streak == 1 else f"{streak} occurrences"
            self.emit(f"  failing: its last {row} failed")
        if s.get("recurring") and s.get("auto_pause") is False:
            self.emit("  auto-pause: off")
        self.emit(f"  owner:   {s['owner']}")
        if s["tenant"] != "local":
            self.emit(f"  tenant:  {s['tenant']}")
        if s.get("until_done"):
            self.emit(f"  sent:    {s['until_done']['words']}")
        self.emit(f"  text:    {s['text']}")
        if s.get("fared"):
            self.emit(f"  fared:   {s['fared']}")
        self.emit("  jobs:")
        for job in detail["jobs"]:
            err = f"  {job['last_error']}" if job["last_error"] else ""
            mark = "  archived" if job.get("archived") else ""
            step = step_label(job.get("ladder") or "")
            step = f"  ({step})" if step else ""
            if job.get("done_by"):
                step += f"  done by {job['done_by']} at {job['done_at']}"
            if job.get("ladder") and job["destination"]:
                step += f"  to {job['destination']}"
            self.emit(
                f"    {job['id']:>6}  {job['state']:<9}  due {job['due_at']}  "
                f"attempts {job['attempts']}{step}{err}{mark}"
            )
        if detail["attempts"]:
            providers = any(at.get("handoff") for at in detail["attempts"])
            zone = f" (providers' times in {s['timezone']})" if providers else ""
            self.emit(f"  attempts{zone}:")
            for at in detail["attempts"]:
                code = f" {at['status_code']}" if at["status_code"] is not None else ""
                how = f"  {at['handoff']}" if at.get("handoff") else ""
                to = f"  to {at['destination']}" if at.get("destination") else ""
                mark = "  archived" if at.get("archived") else ""
                self.emit(
                    f"    {at['started_at']}  job {at['job_id']}  {at['outcome']}{code}{how}"
                    f"{to}{mark}"
                )

    def change(self, a: argparse.Namespace) -> None:
        headers = {} if a.version is None else {"If-Match": f'"{a.version}"'}
        if a.command == "edit":
            from bot.cli.options import recipients_arg, template_data

            data, by = template_data(a)
            fields = (
                ("when", a.when),
                ("text", a.text),
                ("template", a.template),
                ("data", data),
                ("data_by_recipient", by),
                ("to", recipients_arg(a.to) if a.to else None),
                ("add", recipients_arg(a.add_to) or None),
                ("remove", list(a.remove_to) or None),
                ("tz", a.tz),
                ("priority", a.priority),
                ("auto_pause", a.auto_pause),
                ("until_done", ladder_arg(a)),
                ("private", a.private),
            )
            body = {name: value for name, value in fields if value is not None}
            _, _, s = self.call("PATCH", f"/schedules/{a.id}", body, headers=headers)
            what = "updated"
            _say_warnings(s)
        else:
            _, _, s = self.call("POST", f"/schedules/{a.id}/{a.command}", headers=headers)
            what = verb(a.command).past
        if a.json:
            self.emit_json(s)
            return
        if s.get("notes") and a.command != "edit":  # send-now: which occurrence goes now
            self.emit(f"Schedule {s['id']}: {'; '.join(s['notes'])}.")
            return
        if s["next_run_at"] is None:
            self.emit(f"Schedule {s['id']} {what}.")
        else:
            nxt = _local(s["next_run_at"], s["timezone"])
            self.emit(f"Schedule {s['id']} {what}; next: {nxt} {s['timezone']}.")
        if a.command == "edit":
            self._held_and_ladder(s)
            self.emit(f"  to: {_recipients_text(s)}")


#: What each command the API serves does here (bot/cli/main.py's ``remote`` commands).
SERVED: dict[str, Callable[[Remote, argparse.Namespace], None]] = {
    "schedule": Remote.schedule,
    "list": Remote.list,
    "show": Remote.show,
    "edit": Remote.change,
    **{v.name: Remote.change for v in offered(CLI, STATE_VERBS)},
    "prefs": remote_prefs,
    "done": remote_done,
    "awaiting": remote_awaiting,
    "approvals": remote_approvals,
}


def run_remote(args: argparse.Namespace, url: str, token: str) -> int:
    """Carry out a command the API serves. Returns the exit status."""
    remote = Remote(url, token)
    try:
        SERVED[args.command](remote, args)
    except RemoteError as exc:
        print(f"herald: error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - e.g. InvalidInput from an option's JSON
        if type(exc).__module__.startswith("core."):
            print(f"herald: error: {exc}", file=sys.stderr)  # noqa: T201 - CLI output
            return EXIT_ERROR
        raise
    return 0


def _schedule_body(a: argparse.Namespace) -> dict[str, Any]:
    """``herald schedule``'s request to POST /v1/schedules: its recipients, time, text,
    options and skip calendars (files read here)."""
    from bot.cli.options import (
        recipients_arg,
        schedule_options,
        step_timeout_arg,
        template_data,
    )

    to = recipients_arg(a.to)
    timeout = step_timeout_arg(a.step_timeout)
    data, by = template_data(a)
    fields = {
        "to": to[0] if len(to) == 1 else to,
        "when": a.when,
        "text": a.text,
        "template": a.template,
        "data": data,
        "data_by_recipient": by,
        "time_of": "recipient" if a.their_time else None,
        "step_timeout": None if timeout is None else round(timeout),
        "tz": a.tz,
        "key": a.key,
        "max_lateness": a.max_lateness,
        "options": schedule_options(a) or None,
        "priority": a.priority,
        "auto_pause": False if a.auto_pause is False else None,
        "until_done": ladder_arg(a) or None,
        "private": True if a.private else None,
    }
    body = {name: value for name, value in fields.items() if value is not None}
    sources = list(a.skip_calendar or [])
    if sources:  # what a URL is, as the local command reads it (webcal:// too)
        from bot.cli.options import open_text
        from core.calendars import is_url

        urls = [s for s in sources if is_url(s)]
        files = {}
        for path in (s for s in sources if not is_url(s)):
            with open_text(path) as f:
                files[os.path.basename(path)] = f.read()
        if urls:
            body["skip"] = urls
        if files:
            body["skip_files"] = files
    return body


def _say_warnings(s: dict[str, Any]) -> None:
    """On stderr, the warnings the service answered with a save (a duplicate, a
    crowded destination), as the local command says them."""
    for warning in s.get("warnings") or ():
        print(f"warning: {warning['message']}", file=sys.stderr)  # noqa: T201 - CLI output


def _recipient_words(r: dict[str, Any], *, timeout: bool = True) -> str:
    """One recipient of the API's schedule: ``slack:@U1 or email:u1@example.com``,
    its zone, and (``timeout``) how long a step of its chain is tried."""
    text = " or ".join(r.get("to") or [])
    if r.get("zone"):
        text += f" ({r['zone']} time)"
    if timeout and r.get("timeout") and len(r.get("to") or []) > 1:
        from core.timeexpr import describe_duration

        text += f" (each step at most {describe_duration(r['timeout'])})"
    return text


def _recipients_text(s: dict[str, Any]) -> str:
    """Every recipient of the API's schedule, in order (as core.views.recipients_text)."""
    listed = s.get("recipients") or [{"to": [s["destination"]]}]
    return ", ".join(_recipient_words(r, timeout=False) for r in listed)


def _first_and_more(s: dict[str, Any]) -> str:
    """A list's TO: the first recipient and how many more (``slack:C0123ABC +2``)."""
    first, *more = s.get("recipients") or [{"to": [s["destination"]]}]
    return _recipient_words(first, timeout=False) + (f" +{len(more)}" if more else "")


def _their_times(s: dict[str, Any]) -> str | None:
    """When each recipient reading the time in their own zone gets the next run, as
    the service says it (``recipient_times``, core.views.recipient_times), if it does."""
    times = s.get("recipient_times")
    return str(times) if times else None


def _problem_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read() or b"{}")
    except ValueError:
        body = {}
    detail = body.get("detail") if isinstance(body, dict) else None
    return str(detail or f"Herald answered {exc.code} {exc.reason}.")


def _local(iso: str | None, zone: str) -> str:
    """``Mon 30 Mar 2026 09:00`` in ``zone`` (as the local commands print it)."""
    if iso is None:
        return "-"
    return datetime.fromisoformat(iso).astimezone(ZoneInfo(zone)).strftime("%a %d %b %Y %H:%M")

"""Bulk import of schedules from JSON Lines (``herald import FILE``).

Every line is validated first, with the same rules as a single ``create``. When any
line is bad nothing is imported (unless ``skip_invalid``). Lines whose ``key`` the
owner already used are skipped, so running an import again is safe. Rows go in with
bulk inserts, one transaction per chunk.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from core.actors import ActorRef
from core.cases import Herald
from core.cases.schedules import audit_summary
from core.errors import HeraldError, InvalidInput

FIELDS = {"to", "when", "text", "tz", "key"}
REQUIRED = ("to", "when", "text")
CHUNK = 5000

Progress = Callable[[int, int], None]


@dataclass
class ImportReport:
    """What an import did. ``invalid`` holds ``(line number, reason)`` pairs."""

    imported: int = 0
    skipped_existing: int = 0
    skipped_duplicate: int = 0
    invalid: list[tuple[int, str]] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)


class ImportRejected(InvalidInput):
    """Some lines are bad, so nothing was imported. ``invalid`` lists ``(line, reason)``."""

    def __init__(self, invalid: list[tuple[int, str]]) -> None:
        self.invalid = invalid
        first_line, first_reason = invalid[0]
        super().__init__(
            f"Nothing imported: {len(invalid)} bad line(s); "
            f"the first is line {first_line}: {first_reason}."
        )


def _read_line(line: str) -> dict[str, Any]:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(obj, dict):
        raise InvalidInput("each line must be a JSON object with to, when and text")
    unknown = sorted(set(obj) - FIELDS)
    if unknown:
        raise InvalidInput(
            f"unknown field {', '.join(unknown)} (known: {', '.join(sorted(FIELDS))})"
        )
    missing = [name for name in REQUIRED if name not in obj]
    if missing:
        raise InvalidInput(f"missing {', '.join(missing)}")
    for name, value in obj.items():
        if not isinstance(value, str):
            raise InvalidInput(f"{name} must be a string")
    return obj


async def import_schedules(
    herald: Herald,
    actor_id: ActorRef,
    lines: Iterable[str],
    *,
    skip_invalid: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import JSON Lines as ``actor_id``'s schedules.

    Raises ImportRejected, listing every bad line by number, when any line is bad and
    ``skip_invalid`` is false; nothing is imported then.
    """
    actor = await herald.actor(actor_id)
    report = ImportReport()
    rows: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    line_numbers: list[int] = []
    seen_keys: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            obj = _read_line(raw)
            values = herald.build_schedule(
                actor,
                to=obj["to"],
                when=obj["when"],
                text=obj["text"],
                tz=obj.get("tz"),
                key=obj.get("key"),
            )
            values = await herald.with_asker(actor, values)  # a reminder: whom it may remind
        except HeraldError as exc:
            report.invalid.append((number, str(exc).rstrip(".")))
            continue
        key = values["idempotency_key"]
        if key is not None:
            if key in seen_keys:
                report.skipped_duplicate += 1
                continue
            seen_keys.add(key)
        rows.append(values)
        details.append(audit_summary(values))
        line_numbers.append(number)
    unreachable: dict[str, str] = {}
    for destination in sorted({row["destination"] for row in rows}):
        try:
            await herald.check_reachable(destination)
        except HeraldError as exc:
            unreachable[destination] = str(exc).rstrip(".")
    if unreachable:
        for number, row in zip(line_numbers, rows, strict=True):
            if row["destination"] in unreachable:
                report.invalid.append((number, unreachable[row["destination"]]))
        report.invalid.sort()
        keep = [i for i, row in enumerate(rows) if row["destination"] not in unreachable]
        rows = [rows[i] for i in keep]
        details = [details[i] for i in keep]
    if report.invalid and not skip_invalid:
        raise ImportRejected(report.invalid)
    existing = await herald.store.existing_keys(
        actor.id,
        [row["idempotency_key"] for row in rows if row["idempotency_key"] is not None],
        tenant=actor.tenant,
    )
    if existing:
        keep = [i for i, row in enumerate(rows) if row["idempotency_key"] not in existing]
        report.skipped_existing = len(rows) - len(keep)
        rows = [rows[i] for i in keep]
        details = [details[i] for i in keep]
    total = len(rows)
    await herald.check_quota(actor, adding=total)  # imports count like one-by-one creates
    if progress is not None:
        progress(0, total)
    now = herald.clock.now()
    for start in range(0, total, CHUNK):
        ids = await herald.store.create_schedules_bulk(
            rows[start : start + CHUNK],
            details=details[start : start + CHUNK],
            actor=actor.id,
            action="schedule.import",
            now=now,
            tenant=actor.tenant,
            surface=None if actor.surface is None else actor.surface.value,
        )
        report.ids.extend(ids)
        report.imported += len(ids)
        if progress is not None:
            progress(report.imported, total)
    return report

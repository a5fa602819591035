"""The null burst with named templates (issue 39): ``make bench``'s 10,000 no-op messages
due at one instant (``python -m bench.peers herald burst``), their schedules each
naming a template with three variables and their own data, against the same burst of
plain text.

Three modes, each run a fresh process on a fresh SQLite database, in interleaved
rounds (the order rotating each round):

- ``plain``: the burst as ``make bench`` runs it (``bench {i}``);
- ``template``: every schedule uses the template ``{{ a }} {{ b }} {{ c }}`` (text,
  number, text) with data of its own: the fast path of core.render (``Compiled.plain``);
- ``shared``: the same template, every schedule with the same data (one template
  written once, scheduled many times with the same values);
- ``filter``: ``{{ a }} {{ b }} {{ c }} on {{ date | date: '%A' }}``: a filter, so
  Liquid renders every message (the slow path).

The schedules are written by the benchmark's own bulk insert (``bot.cli.bench``) with
the columns a templated schedule has (``template_id``, ``template_version``, the
version's body, ``options["liquid"]``), so the dispatcher claims and renders exactly
what a schedule made by ``herald add --template`` sends.

``python -m bench.template_burst [ROUNDS]``: one JSON line per run, the medians per mode
and the ratios to plain (msg/s and CPU ms/msg; the median of each round's own ratio).
``python -m bench.template_burst one MODE`` is one run (what the rounds start)."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.peers import BURST, HERE, scaled

MODES = ("plain", "template", "shared", "filter")
KEYS = ("drain_per_s", "p50_ms", "last_ms", "cpu_ms_per_msg", "dropped")
#: Each mode's template body (None: plain text) and its declared variables.
BODIES: dict[str, str | None] = {
    "plain": None,
    "template": "{{ a }} {{ b }} {{ c }}",
    "shared": "{{ a }} {{ b }} {{ c }}",
    "filter": "{{ a }} {{ b }} {{ c }} on {{ date | date: '%A' }}",
}
VARIABLES = {"a": "text", "b": "number", "c": "text"}


async def _template(url: str, body: str) -> int:
    """Add the template ``bench`` (version 1) to the local tenant; its id."""
    from core.models import Template
    from core.store import AuditEntry, Store

    store = await Store.open(url)
    try:
        now = datetime.now(UTC)
        template = Template(
            tenant="local",
            name="bench",
            body=body,
            variables=VARIABLES,
            created_by="local:bench",
            updated_by="local:bench",
            created_at=now,
            updated_at=now,
        )
        saved = await store.add_template(
            template, audit=AuditEntry("local:bench", "template.create", "template")
        )
        assert saved.id is not None
        return saved.id
    finally:
        await store.close()


def _templated_rows(body: str, template_id: int, shared: bool = False) -> None:
    """Make the benchmark's bulk schedules use template ``template_id`` (``body``), each
    with its own data (the warm-up's too)."""
    import bot.cli.bench as harness

    original = harness.schedule_rows

    def rows(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        made = original(*args, **kwargs)
        for i, row in enumerate(made):
            data = {"a": "service-api", "b": 14, "c": "eu-west-1"}
            if not shared:  # each schedule its own data
                data = {"a": f"service-{i}", "b": i, "c": "eu-west-1"}
            row["body"] = body
            row["options"] = {"liquid": {"template": "bench", "version": 1, "data": data}}
            row["template_id"] = template_id
            row["template_version"] = 1
        return made

    harness.schedule_rows = rows


async def one(mode: str) -> dict[str, Any]:
    """One null burst of ``mode``."""
    import bench.peers as peers
    from core import db

    peers.TARGET = None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        url = f"sqlite:///{path}"
        db.upgrade(url)
        body = BODIES[mode]
        if body is not None:
            _templated_rows(body, await _template(url, body), shared=mode == "shared")
        row = await peers.herald_dispatch(scaled(BURST), 0.0, path)
        row.pop("samples", None)
        return {**{k: row.get(k) for k in KEYS}, "sent_as": await _sent_as(url)}


async def _sent_as(url: str) -> str:
    """One delivered attempt's text, as recorded: proof the template was filled in."""
    import sqlalchemy as sa

    from core.store import Store

    store = await Store.open(url)
    try:
        async with store._read() as conn:
            query = sa.text("SELECT body FROM attempt ORDER BY id DESC LIMIT 1")
            return str((await conn.execute(query)).scalar_one())
    finally:
        await store.close()


def _ratio(rows: dict[str, list[dict[str, Any]]], mode: str, key: str) -> float:
    """The median of each round's own ratio of ``mode`` to plain."""
    pairs = zip(rows[mode], rows["plain"], strict=True)
    return round(statistics.median(a[key] / b[key] for a, b in pairs), 3)


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 5
    got: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for r in range(rounds):
        for mode in MODES[r % len(MODES) :] + MODES[: r % len(MODES)]:
            out = subprocess.run(
                [sys.executable, "-m", "bench.template_burst", "one", mode],
                capture_output=True,
                text=True,
                check=True,
                cwd=HERE.parent,
                env=dict(os.environ),
            )
            row = json.loads(out.stdout.splitlines()[-1])
            got[mode].append(row)
            print(json.dumps({"round": r, "mode": mode, **row}), flush=True)
    for mode, rows in got.items():
        med = {k: statistics.median(r[k] for r in rows) for k in KEYS}
        print(json.dumps({"median": mode, **med}))
    for mode in MODES[1:]:
        ratios = {k: _ratio(got, mode, k) for k in ("drain_per_s", "cpu_ms_per_msg", "p50_ms")}
        print(json.dumps({f"ratio {mode}/plain": ratios}))
    print(json.dumps({"load_average": [round(x, 2) for x in os.getloadavg()]}))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["one"]:
        from bot.service import loop_factory
        from core.settings import load_settings

        factory = loop_factory(load_settings(_env_file=None).event_loop)
        with asyncio.Runner(loop_factory=factory) as runner:
            print(json.dumps(runner.run(one(sys.argv[2]))))
    else:
        sys.exit(main(sys.argv[1:]))

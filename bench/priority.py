"""An urgent webhook behind a rate-limited import (issue 37), before and after priorities.

``python -m bench.priority [N] [TREE ...]``: 10,000 bulk webhooks (``N``) to one URL
limited to 100/s (``HERALD_RATE_LIMITS``), all due at one instant, and one urgent webhook
to the same URL due 10 s later; one dispatcher (service mode, SQLite) sends them to a
local receiver (``bench/receiver.py``). The figure is how long after its due time the
urgent one started (its attempt's ``started_at``), and how many bulk ones went before it.
Each tree given (default: this one; ``make bench``: this one and the tree before
priorities, ``git archive d8b2b3c``) runs the same workload with its own code, in a
fresh process, started from that directory. A run stops once the urgent one is sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.peers import HERE, _receiver, scaled

#: The tree before priorities (the foundation of issue 37: the columns, no ordering).
BEFORE = "d8b2b3c"
BULK, RATE, URGENT_AFTER = 10_000, 100, 10.0

# Run with ``python -c`` from a tree's directory, so that tree's own code is imported;
# only what every tree since the foundation has (Store, Dispatcher, schedule_rows).
_RUN = """
import asyncio, json, sys, tempfile, time
from datetime import UTC, datetime, timedelta
from pathlib import Path
import sqlalchemy as sa

async def main(n, target, rate, after):
    from bot.cli.bench import schedule_rows
    from core.channels.webhook import WebhookChannel
    from core.clock import SystemClock
    from core.dispatcher import Dispatcher, DispatcherConfig
    from core.http_client import HTTPClient
    from core.settings import load_settings
    from core.store import Store
    from core.store.base import ATTEMPT, JOB, SCHEDULE

    url = f"webhook:{target}/hook"
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            HERALD_DATABASE_URL=f"sqlite:///{Path(tmp) / 'p.db'}",
            HERALD_WEBHOOK_ALLOW_PRIVATE="true",
            HERALD_RATE_LIMITS=f"{url}={rate}/s",
            _env_file=None,
        )
        store = await Store.open(settings.database_url)
        due = datetime.now(UTC) + timedelta(seconds=3)
        rows = schedule_rows(n, due, 0.0, url)
        urgent = schedule_rows(1, due + timedelta(seconds=after), 0.0, url)
        for row in rows:
            row["priority"] = "bulk"
        urgent[0].update(priority="urgent", body="urgent")
        for batch in (rows, urgent):
            await store.create_schedules_bulk(
                batch, details=[{} for _ in batch], actor="local:bench", action="bench",
                now=datetime.now(UTC),
            )
        http = HTTPClient.from_settings(settings)
        dispatcher = Dispatcher(
            store,
            {"webhook": WebhookChannel(settings.webhook_secret_for, http=http)},
            clock=SystemClock(),
            config=DispatcherConfig.from_settings(settings),
        )
        stop = asyncio.Event()
        runner = asyncio.create_task(dispatcher.serve(stop))
        first = (
            sa.select(ATTEMPT.c.started_at, JOB.c.due_at, JOB.c.id)
            .join(JOB, JOB.c.id == ATTEMPT.c.job_id)
            .join(SCHEDULE, SCHEDULE.c.id == JOB.c.schedule_id)
            .where(SCHEDULE.c.body == "urgent")
        )
        deadline = time.monotonic() + n / rate + 120
        found = None
        while found is None and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            async with store._engine.connect() as conn:
                found = (await conn.execute(first)).first()
        stop.set()
        await runner
        before = None
        if found is not None:
            q = sa.select(sa.func.count()).select_from(ATTEMPT).where(
                ATTEMPT.c.started_at < found[0], ATTEMPT.c.job_id != found[2]
            )
            async with store._engine.connect() as conn:
                before = (await conn.execute(q)).scalar()
        await http.close()
        await store.close()
    def aware(t):
        return t if t.tzinfo else t.replace(tzinfo=UTC)
    delay = None if found is None else (aware(found[0]) - aware(found[1])).total_seconds()
    print(json.dumps({"urgent_delay_s": delay, "bulk_sent_before": before}))

asyncio.run(main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
"""


def run_tree(tree: Path, target: str, n: int) -> dict[str, Any]:
    """The workload with ``tree``'s own code, in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", _RUN, str(n), target, str(RATE), str(URGENT_AFTER)],
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
    )
    return dict(json.loads(out.stdout.splitlines()[-1]))


def run(trees: list[Path] | None = None, n: int | None = None) -> dict[str, Any]:
    """The figure for each tree; without trees, the tree before priorities (exported
    with ``git archive``, when git has it) and this one."""
    n = n or scaled(BULK)
    with tempfile.TemporaryDirectory() as tmp:
        named: dict[str, Path] = {}
        if trees:
            named = {str(t): t for t in trees}
        else:
            old = Path(tmp) / "before"
            old.mkdir()
            archive = subprocess.run(
                ["git", "archive", BEFORE], cwd=HERE.parent, capture_output=True, check=False
            )
            if archive.returncode == 0:
                subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
                named[f"before ({BEFORE})"] = old
            named["after (this tree)"] = HERE.parent
        with _receiver() as target:
            return {
                "workload": f"{n:,} bulk webhooks to one URL at {RATE}/s due at once, one "
                f"urgent to the same URL due {URGENT_AFTER:g} s later",
                **{name: run_tree(tree, target, n) for name, tree in named.items()},
            }


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv and argv[0].isdigit() else None
    trees = [Path(t).resolve() for t in argv[1 if n else 0 :]]
    print(json.dumps(run(trees or None, n), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

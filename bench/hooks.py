"""What an event hook that is down costs the webhook burst (issue 38): Herald's usual
2,000-webhook burst (``make bench``'s, one local receiver), without any hook, and with
one event hook registered that hears every event type and refuses connections (nothing
listens on its port), so that every outcome also writes an event and the pusher keeps
failing and backing off beside the deliveries.

``python -m bench.hooks [ROUNDS]``: interleaved rounds (the order rotates each round),
each run a fresh process on a fresh SQLite database; one JSON line per run, then the
medians and the ratio of the hook's to the plain run's (drain rate, p50, last).
``python -m bench.hooks one plain|hook-down`` is one run (what the rounds start)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.peers import HERE, WEBHOOK_BURST, _receiver, scaled

MODES = ("plain", "hook-down")
KEYS = ("drain_per_s", "p50_ms", "last_ms", "cpu_ms_per_msg", "dropped")


def _closed_port() -> int:
    """A port nothing listens on (connections to it are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _hook_down(url: str) -> None:
    from core.events import EVENT_TYPES, new_secret
    from core.models import EventHook
    from core.store import AuditEntry, Store

    store = await Store.open(url)
    try:
        now = datetime.now(UTC)
        await store.add_hook(
            EventHook(
                tenant="local",
                owner="local:bench",
                tenant_wide=True,
                url=f"http://127.0.0.1:{_closed_port()}/events",
                types=list(EVENT_TYPES),
                secret=new_secret(),
                created_at=now,
                updated_at=now,
            ),
            audit=AuditEntry("local:bench", "hook.create", "event_hook"),
        )
    finally:
        await store.close()


async def _counts(url: str) -> dict[str, Any]:
    import sqlalchemy as sa

    from core.store import Store

    store = await Store.open(url)
    try:
        async with store._read() as conn:
            events = (await conn.execute(sa.text("SELECT count(*) FROM event"))).scalar_one()
            tries = (
                await conn.execute(sa.text("SELECT coalesce(max(tries), 0) FROM event_hook"))
            ).scalar_one()
        return {"events": int(events), "hook_tries": int(tries)}
    finally:
        await store.close()


async def one(mode: str) -> dict[str, Any]:
    """One burst to ``HERALD_BENCH_TARGET``, with (``hook-down``) or without a hook."""
    import bench.peers as peers
    from core import db

    peers.TARGET = os.environ["HERALD_BENCH_TARGET"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        url = f"sqlite:///{path}"
        db.upgrade(url)
        if mode == "hook-down":
            await _hook_down(url)
        row = await peers.herald_dispatch(scaled(WEBHOOK_BURST), 0.0, path)
        row.pop("samples", None)
        return {**{k: row.get(k) for k in KEYS}, **await _counts(url)}


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 5
    got: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    with _receiver() as target:
        for r in range(rounds):
            for mode in MODES[r % 2 :] + MODES[: r % 2]:
                out = subprocess.run(
                    [sys.executable, "-m", "bench.hooks", "one", mode],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=HERE.parent,
                    env={**os.environ, "HERALD_BENCH_TARGET": target},
                )
                row = json.loads(out.stdout.splitlines()[-1])
                got[mode].append(row)
                print(json.dumps({"round": r, "mode": mode, **row}), flush=True)
    medians = {
        mode: {k: statistics.median(r[k] for r in rows) for k in (*KEYS, "events", "hook_tries")}
        for mode, rows in got.items()
    }
    for mode, med in medians.items():
        print(json.dumps({"median": mode, **med}))
    plain, down = medians["plain"], medians["hook-down"]
    print(
        json.dumps(
            {
                "ratio hook-down/plain": {
                    "drain_per_s": round(down["drain_per_s"] / plain["drain_per_s"], 3),
                    "p50_ms": round(down["p50_ms"] / plain["p50_ms"], 3),
                    "last_ms": round(down["last_ms"] / plain["last_ms"], 3),
                }
            }
        )
    )
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

"""Fan-out: 1,000 schedules, each to 5 recipients, due at one instant (5,000 deliveries,
null channel), Herald against Node.js + BullMQ adding the same 5,000 jobs with
``addBulk``, in interleaved rounds.

Herald's schedules are written as an import writes them (``create_schedules_bulk``: one
schedule row and one job per recipient), due far ahead, then made due at one instant,
as ``herald bench dispatch`` does with its one-recipient schedules; BullMQ's jobs are
added as delayed jobs all due at one instant (``bench/bullmq/bench.js``). Both deliver
200 warm-up messages first. Besides the drain figures, ``add_ms`` is the time taken to
write the 5,000 (Herald: 1,000 schedules and their 5,000 jobs in one transaction;
BullMQ: ``addBulk`` in parts of 1,000).

``python -m bench.fanout [ROUNDS]`` prints one JSON line per run and the table
(``make bench`` adds the table to ``bench/RESULTS.md``); one run alone:
``python -m bench.peers herald fanout`` (or ``"herald run"``, ``bullmq``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SCHEDULES = 1_000
RECIPIENTS = 5
DELIVERIES = SCHEDULES * RECIPIENTS
SYSTEMS = ("herald", "herald run", "bullmq")
ROUNDS = 3
LABELS = {"bullmq": "Node.js + BullMQ (Redis), addBulk"}


async def herald_fanout(db: Path, *, service: bool) -> dict[str, Any]:
    """Herald's dispatcher (in this process, or a ``herald run`` process) on the fan-out:
    ``herald bench dispatch``'s run with each schedule written with RECIPIENTS
    recipients (its fill replaced for the run: N jobs = N / RECIPIENTS schedules)."""
    import bot.cli.bench as cli_bench
    from core.settings import load_settings

    timed: dict[str, float] = {}
    cli_bench._fill = _fan_out_fill(timed)
    settings = load_settings(HERALD_DATABASE_URL=f"sqlite:///{db}", _env_file=None)
    data = await cli_bench.bench_dispatch(
        settings,
        jobs=DELIVERIES,
        spread=0.0,
        channel="null",
        dispatchers=1,
        pending=0,
        samples=True,
        service=service,
    )
    from bench.peers import _summary

    return {
        **_summary(DELIVERIES, data["lateness_samples_ms"], 0.0),
        "cpu_ms_per_msg": data["cpu_ms_per_job"],
        "add_ms": round(timed["add_s"] * 1000, 1),
    }


def _fan_out_fill(timed: dict[str, float]) -> Callable[..., Any]:
    from bot.cli.bench import schedule_rows
    from core import routing
    from core.store import Store

    async def fill(
        store: Store, n: int, first: datetime, step: float, destination: str | Callable[..., str]
    ) -> None:
        assert isinstance(destination, str)  # the null channel's one destination
        recipients = routing.to_json(
            [routing.Recipient(r, (destination,), None, None) for r in range(RECIPIENTS)]
        )
        rows = [
            {**row, "recipients": recipients}
            for row in schedule_rows(n // RECIPIENTS, first, step, destination)
        ]
        started = time.perf_counter()
        await store.create_schedules_bulk(
            rows,
            details=[{} for _ in rows],
            actor="local:bench",
            action="bench",
            now=datetime.now(UTC),
        )
        if n == DELIVERIES:  # the measured schedules, not the warm-up
            timed["add_s"] = time.perf_counter() - started

    return fill


def bullmq_fanout() -> dict[str, Any]:
    """BullMQ on the same 5,000 jobs (``queue_peer``'s summary, with ``add_ms``)."""
    from bench.peers import queue_peer

    return queue_peer("bullmq", DELIVERIES, 0.0)


# --- the interleaved rounds -----------------------------------------------------------------


def _median(values: list[float]) -> float | None:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else None


def run_rounds(rounds: int = ROUNDS) -> dict[str, list[dict[str, Any]]]:
    """Each round runs every system once, in rotated order, each in a fresh process."""
    from bench.peers import peer_missing, run_one

    skipped = {s: reason for s in SYSTEMS if (reason := peer_missing(s))}
    got: dict[str, list[dict[str, Any]]] = {s: [] for s in SYSTEMS}
    for r in range(rounds):
        for system in SYSTEMS[r % len(SYSTEMS) :] + SYSTEMS[: r % len(SYSTEMS)]:
            row = {"skipped": skipped[system]} if system in skipped else run_one(system, "fanout")
            got[system].append(row)
            brief = {k: v for k, v in row.items() if k != "samples"}
            print(json.dumps({"round": r, "system": system, **brief}), flush=True)
    return got


def _paired(got: dict[str, list[dict[str, Any]]], a: str, b: str, key: str) -> float | None:
    """The median over the rounds of a's figure ÷ b's figure (rounds where both ran)."""
    return _median(
        [
            x[key] / y[key]
            for x, y in zip(got[a], got[b], strict=True)
            if (x.get(key) or 0) > 0 and (y.get(key) or 0) > 0
        ]
    )


def table(got: dict[str, list[dict[str, Any]]]) -> str:
    rows = [
        "| workload | system | msg/s | first late (ms) | median late (ms) | last late (ms) "
        "| dropped | add 5,000 (ms) | herald ÷ this (msg/s) | herald run ÷ this (msg/s) "
        "| this ÷ herald (median late) | this ÷ herald (add) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for system in SYSTEMS:
        good = [row for row in got[system] if "sent" in row]
        label = LABELS.get(system, system)
        if not good:
            why = next((r.get("skipped") or r.get("error") for r in got[system]), "")
            rows.append(f"| fan-out | {label} | not run: {why} |" + " – |" * 9)
            continue

        def med(key: str, digits: int = 1, rows_: list[dict[str, Any]] = good) -> str:
            value = _median([r[key] for r in rows_ if r.get(key) is not None])
            return "–" if value is None else f"{value:,.{digits}f}"

        def times(value: float | None) -> str:
            return "–" if value is None else f"{value:,.2f}×"

        rows.append(
            f"| fan-out | {label} | {med('drain_per_s', 0)} | {med('first_ms')} "
            f"| {med('p50_ms')} | {med('last_ms')} | {med('dropped', 0)} | {med('add_ms')} "
            f"| {times(_paired(got, 'herald', system, 'drain_per_s'))} "
            f"| {times(_paired(got, 'herald run', system, 'drain_per_s'))} "
            f"| {times(_paired(got, system, 'herald', 'p50_ms'))} "
            f"| {times(_paired(got, system, 'herald', 'add_ms'))} |"
        )
    return "\n".join(rows)


def note(rounds: int, got: dict[str, list[dict[str, Any]]]) -> str:
    late = [s for s, rows in got.items() if any((r.get("added_late_ms") or 0) > 0 for r in rows)]
    return (
        (
            f"Not all jobs were in before they were due in some runs of {', '.join(late)} "
            "(their lateness includes adding them). "
            if late
            else ""
        )
        + f"Fan-out: {SCHEDULES:,} schedules × {RECIPIENTS} recipients due at one instant = "
        f"{DELIVERIES:,} no-op deliveries (null channel, SQLite) for Herald; BullMQ adds the "
        f"same {DELIVERIES:,} jobs with `addBulk` (parts of 1,000) as delayed jobs due at one "
        "instant, one Worker with concurrency 64. add = the time to write them (Herald: "
        "the schedules and one job per recipient, one transaction). Medians of "
        f"{rounds} interleaved rounds; ratios are the median of each round's own ratio. "
        "`python -m bench.fanout [ROUNDS]`."
    )


def fanout_table(rounds: int = ROUNDS) -> str:
    """Run the rounds; the table (Markdown) and its note."""
    got = run_rounds(rounds)
    return table(got) + "\n\n" + note(rounds, got)


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else ROUNDS
    print(fanout_table(rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Herald beside the queue stacks and the bare HTTP clients, in interleaved rounds: each
round runs every system once on each workload, in rotated order; the tables show
medians and, for each peer, the median of each round's own ratio to Herald (this
machine's speed changes from minute to minute, so only figures from the same round are
compared). ``python -m bench.peers rounds [N]`` prints them; ``make bench`` writes them
to ``bench/RESULTS.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from bench.peers import (
    BARE_IN_FLIGHT,
    BURST,
    STAGGER_SECONDS,
    STAGGERED,
    WEBHOOK_BURST,
    _receiver,
    peer_missing,
    run_one,
    scale,
    scaled,
)

ROUNDS = 3
#: The systems of each workload, measured once per round.
ROUND_SYSTEMS = {
    "burst": ("herald", "herald run", "bullmq", "celery"),
    "staggered": ("herald", "herald run", "bullmq", "celery"),
    "webhook-burst": (
        "herald",
        "herald run",
        "bullmq",
        "celery",
        "bare aiohttp",
        "bare aiohttp uvloop",
        "bare httpx",
        "bare fetch",
    ),
}
HERALDS = ("herald", "herald run")
LABELS = {
    "bullmq": "Node.js + BullMQ (Redis)",
    "celery": "Celery (RabbitMQ)",
    "bare fetch": "bare fetch (Node)",
    "bare aiohttp": "bare aiohttp (asyncio's loop)",
    "bare aiohttp uvloop": "bare aiohttp (uvloop, Herald's loop)",
}

Runs = dict[tuple[str, str], list[dict[str, Any]]]


def rounds_table(rounds: int = ROUNDS) -> str:
    """Run the rounds and return the two tables (Markdown) with their note."""
    everyone = sorted({system for systems in ROUND_SYSTEMS.values() for system in systems})
    skipped = {system: reason for system in everyone if (reason := peer_missing(system))}
    got: Runs = {}
    with _receiver() as target:
        for r in range(rounds):
            for workload, systems in ROUND_SYSTEMS.items():
                order = systems[r % len(systems) :] + systems[: r % len(systems)]  # rotated
                for system in order:
                    if system not in skipped:
                        got.setdefault((system, workload), []).append(
                            run_one(system, workload, {"HERALD_BENCH_TARGET": target})
                        )
    return (
        systems_table(got, skipped)
        + "\n\n"
        + ratios_table(got, skipped)
        + "\n\n"
        + _note(rounds, skipped, got)
    )


def _measured(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs that produced figures (not skipped, not failed)."""
    return [row for row in rows if "sent" in row]


def _median(values: Iterable[float | None]) -> float | None:
    ordered = sorted(v for v in values if v is not None)
    return ordered[len(ordered) // 2] if ordered else None


def _label(system: str, rows: list[dict[str, Any]]) -> str:
    label = LABELS.get(system, system)
    pools = {row["pool"] for row in rows if "pool" in row}
    return f"{label}, pool: {' / '.join(sorted(pools))}" if pools else label


def _paired(
    got: Runs, a: str, b: str, workload: str, key: str, of: Callable[[float, float], float]
) -> float | None:
    """The median over the rounds of ``of(a's figure, b's figure)`` for ``key``, over the
    rounds in which both have a positive figure."""
    pairs = zip(got.get((a, workload), []), got.get((b, workload), []), strict=False)
    found = [
        of(x[key], y[key])
        for x, y in pairs
        if isinstance(x.get(key), (int, float))
        and isinstance(y.get(key), (int, float))
        and x[key] > 0
        and y[key] > 0
    ]
    return _median(found)


def _times(value: float | None) -> str:
    return "–" if value is None else f"{value:,.2f}×"


def systems_table(got: Runs, skipped: dict[str, str]) -> str:
    rows = [
        "| workload | system | msg/s | first late (ms) | median late (ms) | p99 late (ms) "
        "| dropped | vs Herald in process (msg/s) | each run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for workload, systems in ROUND_SYSTEMS.items():
        for system in systems:
            runs = got.get((system, workload), [])
            good = _measured(runs)
            label = _label(system, good)
            if not good:
                why = (
                    f"skipped: {skipped[system]}"
                    if system in skipped
                    else "failed: " + next((r.get("error") or r.get("skipped") for r in runs), "")
                )
                rows.append(f"| {workload} | {label} | {why} | – | – | – | – | – | – |")
                continue

            def med(key: str, rows_: list[dict[str, Any]] = good) -> float | None:
                return _median([row.get(key) for row in rows_])

            def cell(value: float | None, digits: int = 1) -> str:
                return "–" if value is None else f"{value:,.{digits}f}"

            key, unit = ("drain_per_s", " msg/s") if workload != "staggered" else ("p50_ms", " ms")
            each = " / ".join(
                f"{row[key]:,}{unit}" if row.get(key) is not None else "failed" for row in runs
            )
            rows.append(
                f"| {workload} | {label} | {cell(med('drain_per_s'), 0)} "
                f"| {cell(med('first_ms'))} | {cell(med('p50_ms'))} | {cell(med('p99_ms'))} "
                f"| {cell(med('dropped'), 0)} "
                f"| {_times(_paired(got, system, 'herald', workload, 'drain_per_s', _div))} "
                f"| {each} |"
            )
    return "\n".join(rows)


def _div(a: float, b: float) -> float:
    return a / b


def ratios_table(got: Runs, skipped: dict[str, str]) -> str:
    """Herald (in process, and as ``herald run``) against each of the others: how many
    times its drain rate, and how many times later the other's median message is."""
    rows = [
        "| workload | peer | herald ÷ peer (msg/s) | herald run ÷ peer (msg/s) "
        "| peer ÷ herald (median late) | peer ÷ herald run (median late) |",
        "|---|---|---|---|---|---|",
    ]
    for workload, systems in ROUND_SYSTEMS.items():
        for peer in systems:
            if peer in HERALDS:
                continue
            label = _label(peer, _measured(got.get((peer, workload), [])))
            if peer in skipped:
                rows.append(f"| {workload} | {label} | skipped | – | – | – |")
                continue
            cells = [
                _times(_paired(got, herald, peer, workload, "drain_per_s", _div))
                for herald in HERALDS
            ] + [_times(_paired(got, peer, herald, workload, "p50_ms", _div)) for herald in HERALDS]
            rows.append(f"| {workload} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _note(rounds: int, skipped: dict[str, str], got: Runs) -> str:
    factor = scale()
    before = (
        f"Scaled by {factor:g} (`HERALD_BENCH_SCALE`): a quick check, not the figures. "
        if factor != 1
        else ""
    )
    late = sorted(
        {
            f"{system} {workload}"
            for (system, workload), runs in got.items()
            for row in runs
            if (row.get("added_late_ms") or 0) > 0
        }
    )
    if late:
        before += (
            "Not all messages were in before their due instant in some runs (their "
            f"lateness includes adding them): {', '.join(late)}. "
        )
    return before + (
        f"Medians of {rounds} interleaved round{'s' if rounds != 1 else ''} (each round "
        "runs every system once per workload, in rotated order); ratios are the median of "
        f"each round's own ratio. burst = {scaled(BURST):,} no-op messages due at one "
        f"instant; staggered = {scaled(STAGGERED)} over {STAGGER_SECONDS:g} s; "
        f"webhook-burst = {scaled(WEBHOOK_BURST):,} webhooks due at "
        "one instant over 200 URLs of one local receiver (aiohttp, its own process). "
        "Lateness = the start of a message's work minus its due time; msg/s = messages "
        "÷ (the last start − the due instant), as for the other peers. "
        "herald = the dispatcher in the benchmark's process with the service's logging "
        "set up; herald run = the `herald run` process (SQLite); both on the event loop "
        "`herald run` takes by default (uvloop). "
        "Node.js + BullMQ: the pinned BullMQ (bench/bullmq/package.json), jobs added with "
        "`addBulk` as delayed jobs, one Worker with concurrency 64, the webhook job a "
        "POST with Node's built-in fetch; Redis at its default `hz 10` wakes a blocked "
        "worker up to ~100 ms after a delayed job's time (a `BZPOPMIN` timeout of 50 ms "
        "took 90-150 ms here), which adds that much to BullMQ's lateness. Celery: tasks "
        "sent with `eta`, one worker with the named pool and 64 at once, no result "
        "backend, the webhook task a POST with requests (one pooled "
        "Session); each task writes its own start time to a file. Herald, BullMQ, Celery "
        "and bare fetch deliver 200 warm-up messages first. bare aiohttp / bare httpx / bare fetch "
        f"= the HTTP client alone, {BARE_IN_FLIGHT} requests in flight: the ceiling of "
        "the webhook rows (fetch: BullMQ's); bare aiohttp on asyncio's own loop and on "
        "uvloop (the same loop as Herald's: the fair ceiling). A peer whose runtime or "
        "service is missing on the machine is skipped with the reason."
        + ("" if not skipped else f" Skipped in this run: {len(skipped)}.")
    )

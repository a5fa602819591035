"""The queue peers' harness without the peers: the one-line reason a peer is skipped,
the reading of their reports, and the rounds' tables. No service, no runtime."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from bench import bullmq_peer, celery_peer, peers, rounds
from bench.services import PeerOutputError, not_on_path, one_line, peer_json, unreachable


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound but not listening: connecting to it is refused at once."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def test_closed_service_port_gives_one_line_without_credentials(closed_port: int) -> None:
    reason = unreachable("RabbitMQ", f"amqp://guest:s3cret@127.0.0.1:{closed_port}//")
    assert reason == f"RabbitMQ not reachable at 127.0.0.1:{closed_port} (connection refused)"
    assert unreachable("Redis", "not a url") == "Redis: cannot read a host and port from the URL"


def test_open_service_port_is_no_reason() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert unreachable("Redis", f"redis://127.0.0.1:{server.getsockname()[1]}/15") is None


def test_missing_runtime_is_named() -> None:
    assert not_on_path("herald-no-such-runtime") == "herald-no-such-runtime not found on PATH"


@pytest.mark.parametrize(
    ("system", "variable"),
    [("bullmq", "HERALD_BENCH_REDIS_URL"), ("celery", "HERALD_BENCH_AMQP_URL")],
)
def test_peer_with_its_service_down_is_skipped_not_failed(
    system: str, variable: str, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    scheme = "redis" if system == "bullmq" else "amqp"
    monkeypatch.setenv(variable, f"{scheme}://127.0.0.1:{closed_port}/")
    monkeypatch.setattr(bullmq_peer, "_install", lambda: None)  # no npm ci in a unit test
    found = peers.queue_peer(system, 10, 0.0)
    assert list(found) == ["skipped"]
    # the service's port, or, on a machine without the runtime, the runtime
    assert str(closed_port) in found["skipped"] or "not" in found["skipped"]
    assert "\n" not in found["skipped"]


def test_report_is_the_last_json_line() -> None:
    assert peer_json('a warning\n{"samples": [1.5], "failed": 0}\n') == {
        "samples": [1.5],
        "failed": 0,
    }
    with pytest.raises(PeerOutputError, match="no report"):
        peer_json("Error: connect ECONNREFUSED\n")
    with pytest.raises(PeerOutputError, match="unreadable"):
        peer_json('{"samples": [1, 2')  # cut short
    with pytest.raises(PeerOutputError, match="without samples"):
        peer_json('{"sent": 3}')
    assert one_line("npm ERR! one\nnpm ERR! the cause\n\n") == "npm ERR! the cause"
    assert len(one_line("x" * 500)) == 160


def test_peer_report_is_summarised_like_the_python_peers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = {"samples": [20.0, 5.0, 10.0], "failed": 1, "peak_rss_mb": 88.0, "added_late_ms": 0}
    monkeypatch.setattr(peers, "peer_missing", lambda system: None)
    monkeypatch.setattr(bullmq_peer, "run", lambda n, spread, target: report)
    found = peers.queue_peer("bullmq", 4, 0.0)
    assert found["sent"] == 3
    assert found["dropped"] == 2  # one never ran, one failed
    assert (found["first_ms"], found["p50_ms"], found["last_ms"]) == (5.0, 10.0, 20.0)
    assert found["drain_per_s"] == 150  # 3 started by 20 ms after the due instant
    assert found["peak_rss_mb"] == 88.0  # the peer's process, not the harness


def test_celery_record_lines() -> None:
    lines = ["-1 0 0 1", "0 2.5 3.0 1", "1 1.0 9.5 0", "-1 0 0 1"]
    found = celery_peer._report(lines, 0.0, 60.0)
    assert found["samples"] == [2.5, 1.0]
    assert (found["failed"], found["last_finish_ms"]) == (1, 9.5)


def test_rounds_tables_show_skips_and_per_round_ratios() -> None:
    def run(rate: int, p50: float) -> dict[str, object]:
        return {"sent": 10, "drain_per_s": rate, "p50_ms": p50, "first_ms": 1.0, "dropped": 0}

    got: rounds.Runs = {
        ("herald", "burst"): [run(1000, 10.0), run(2000, 10.0), run(3000, 10.0)],
        ("herald run", "burst"): [run(900, 12.0), run(1800, 12.0), run(2700, 12.0)],
        ("celery", "burst"): [
            {**run(500, 40.0), "pool": "threads ×64"},
            {"error": "celery worker exited: boom"},
            {**run(1000, 40.0), "pool": "threads ×64"},
        ],
    }
    skipped = {"bullmq": "Redis not reachable at 127.0.0.1:6379 (connection refused)"}
    systems = rounds.systems_table(got, skipped)
    assert "| burst | Node.js + BullMQ (Redis) | skipped: Redis not reachable" in systems
    assert "| burst | Celery (RabbitMQ), pool: threads ×64 | 1,000 |" in systems
    assert "500 msg/s / failed / 1,000 msg/s" in systems
    ratios = rounds.ratios_table(got, skipped)
    # each round's own ratio (2.0 and 3.0), not the ratio of the medians
    assert "| burst | Celery (RabbitMQ), pool: threads ×64 | 3.00× | 2.70× | 4.00× | 3.33× |" in (
        ratios
    )
    assert "| burst | Node.js + BullMQ (Redis) | skipped |" in ratios

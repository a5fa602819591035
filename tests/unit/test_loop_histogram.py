"""The dispatcher's lock-free histogram exposes what prometheus-client's would."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from core.metrics import LATENESS_BUCKETS, LoopHistogram

VALUES = [0.0, 0.001, 0.0011, 0.004, 0.05, 0.7, 3, 29.9, 30, 61, 4000, 1e9]


def _exposition(registry: CollectorRegistry) -> list[str]:
    text = generate_latest(registry).decode()
    return [line for line in text.splitlines() if "_created" not in line]


def test_same_series_as_a_prometheus_histogram() -> None:
    reference, ours = CollectorRegistry(), CollectorRegistry()
    expected = Histogram(
        "h_seconds", "doc", ["channel"], buckets=LATENESS_BUCKETS, registry=reference
    )
    actual = LoopHistogram("h_seconds", "doc", "channel", LATENESS_BUCKETS, registry=ours)
    for i, value in enumerate(VALUES):
        kind = "slack" if i % 3 else "webhook"
        expected.labels(kind).observe(value)
        actual.labels(kind).observe(value)

    assert _exposition(ours) == _exposition(reference)
    assert 'h_seconds_bucket{channel="slack",le="0.001"} 1.0' in _exposition(ours)


def test_a_second_histogram_of_the_same_name_is_refused() -> None:
    registry = CollectorRegistry()
    LoopHistogram("dup_seconds", "doc", "channel", (1.0,), registry=registry)
    try:
        LoopHistogram("dup_seconds", "doc", "channel", (1.0,), registry=registry)
    except ValueError as exc:
        assert "dup_seconds" in str(exc)
    else:
        raise AssertionError("a duplicate metric name was accepted")

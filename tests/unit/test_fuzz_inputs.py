"""Arbitrary destination URIs and webhook URLs: only the domain error, never a crash."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.channels import parse_destination
from core.errors import InvalidInput

CASES = int(os.environ.get("HERALD_FUZZ_CASES", "2000"))  # make reliability: 10,000
FAST = settings(max_examples=CASES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

schemes = st.sampled_from(
    [
        "slack",
        "discord",
        "discord-webhook",
        "webhook",
        "email",
        "log",
        "null",
        "file",
        "ftp",
        "http",
        "SLACK",
        "",
        "javascript",
    ]
)
urlish = st.one_of(
    st.text(),
    st.builds(
        lambda scheme, host, path: f"{scheme}://{host}{path}",
        st.sampled_from(["http", "https", "file", "gopher", "", "HTTP"]),
        st.one_of(st.text(max_size=30), st.ip_addresses().map(str), st.just("localhost")),
        st.text(max_size=40),
    ),
)


@FAST
@given(st.builds(lambda s, rest: f"{s}:{rest}", schemes, st.one_of(st.text(), urlish)))
def test_destination_uris(uri: str) -> None:
    try:
        dest = parse_destination(uri)
    except InvalidInput as exc:
        assert str(exc).endswith(".")  # a sentence
        return
    assert str(dest).startswith(dest.kind + ":")
    assert dest.kind in {"slack", "discord", "discord-webhook", "webhook", "email", "log", "null"}
    if dest.kind == "webhook":
        assert dest.target.lower().startswith(("http://", "https://"))


@FAST
@given(urlish)
def test_webhook_urls(url: str) -> None:
    try:
        dest = parse_destination(f"webhook:{url}")
    except InvalidInput:
        return
    assert dest.target.lower().startswith(("http://", "https://"))
    assert "…" in dest.redacted() and dest.redacted().count("/") <= 3  # no path leaks

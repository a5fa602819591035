"""A costly time rule against a running ``herald run``: refused at once, nothing stalls.

``RRULE:FREQ=MINUTELY;BYYEARDAY=366;BYMONTH=1;BYHOUR=5;BYMINUTE=5`` never happens, and
reading it walked dateutil to the year 9999 on the event loop: any read-scope token
froze the service for ~68 s (/healthz stalled, due webhooks went out a minute late).
Each rule's reading is now bounded by a counted budget (core.timeexpr.metered)."""

from __future__ import annotations

import threading
import time

import httpx

from tests.api.conftest import Service

COSTLY = [
    "RRULE:FREQ=MINUTELY;BYYEARDAY=366;BYMONTH=1;BYHOUR=5;BYMINUTE=5",  # never happens
    "RRULE:FREQ=MINUTELY;BYYEARDAY=366;BYMONTH=1;BYHOUR=5;BYMINUTE=5;UNTIL=29991231",
    "DTSTART:20260302T000000 RRULE:FREQ=HOURLY;INTERVAL=168;BYDAY=TU",  # too costly
]
ANSWER_WITHIN = 10.0  # seconds a refusal may take here (it takes milliseconds; it took ~68 s)
HEALTH_WITHIN = 2.0  # seconds /healthz may take meanwhile


def test_costly_rules_are_refused_while_the_service_stays_responsive(service: Service) -> None:
    reader = service.token("local:api-costly", scope="read")
    writer = service.token("local:api-costly-w")
    answers: list[tuple[int, str, float]] = []
    errors: list[BaseException] = []

    def ask(method: str, path: str, token: str, **kwargs: object) -> None:
        try:
            with service.client(token) as c:
                start = time.monotonic()
                r = c.request(method, path, timeout=ANSWER_WITHIN, **kwargs)  # type: ignore[arg-type]
                answers.append(
                    (r.status_code, r.json().get("detail", ""), time.monotonic() - start)
                )
        except BaseException as exc:  # a timeout is the old freeze: reported below
            errors.append(exc)

    calls = [
        threading.Thread(
            target=ask, args=("GET", "/v1/when", reader), kwargs={"params": {"when": rule}}
        )
        for rule in COSTLY
    ] + [
        threading.Thread(
            target=ask,
            args=("POST", "/v1/schedules", writer),
            kwargs={"json": {"to": "log:", "when": COSTLY[0], "text": "never"}},
        )
    ]
    for call in calls:
        call.start()
    slowest = 0.0
    while any(call.is_alive() for call in calls):
        start = time.monotonic()
        assert httpx.get(service.base + "/healthz", timeout=30).status_code == 200
        slowest = max(slowest, time.monotonic() - start)
    for call in calls:
        call.join()
    assert not errors, f"a costly rule was not answered within {ANSWER_WITHIN} s: {errors!r}"
    assert slowest < HEALTH_WITHIN, f"/healthz took {slowest:.1f} s"
    assert len(answers) == len(calls)
    for status, detail, took in answers:
        assert status == 422, detail
        assert "never happens" in detail or "too costly to expand" in detail, detail
        assert took < ANSWER_WITHIN
    with service.client(writer) as c:  # nothing was stored
        assert c.get("/v1/schedules").json()["items"] == []

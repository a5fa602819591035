"""Herald's Grafana dashboard (deploy/grafana/herald.json) is valid Grafana, names only
metrics Herald exports, and every query of every panel answers on a real Prometheus
(the Debian package's server) scraping a real ``herald run`` that has just delivered a
burst of webhooks, some of them refused. The Prometheus configuration is the one in
deploy/prometheus/prometheus.yml with its targets pointed at the test's process, so its
alert rules load too."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import httpx
import pytest
import yaml

from bot.cli.bench import schedule_rows
from core import db
from core.metrics import DATABASE_GAUGES, Metrics
from core.store import Store
from tests.fakes import WebhookReceiver
from tests.fakes.http import Scripted, unused_port

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "herald.json"
DATASOURCES = DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
PROVIDERS = DEPLOY / "grafana" / "provisioning" / "dashboards" / "herald.yml"
PROMETHEUS_CONFIG = DEPLOY / "prometheus" / "prometheus.yml"
RULES = DEPLOY / "prometheus-rules.yml"
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")

#: What Grafana puts in place of its interval variables, as the test's short run needs
#: them: a rate over a minute spans the burst (scraped every second) while the panels'
#: queries are evaluated, even on a slow machine.
GRAFANA_INTERVALS = {"$__rate_interval": "1m", "$__interval": "1m", "$__range": "1h"}
#: Where the compose file's monitoring profile mounts deploy/grafana.
DASHBOARDS_MOUNT = "/var/lib/grafana/dashboards/herald"
#: What an operator looks for on the dashboard.
OPERATORS_WATCH = {
    "herald_deliveries_total",
    "herald_delivery_lateness_seconds_bucket",
    "herald_jobs",
    "herald_dead_letters_awaiting_decision",
    "herald_provider_429_total",
    "herald_rate_limit_waits_total",
    "herald_dispatcher_heartbeat_timestamp_seconds",
    "herald_calendars_failing",
    "herald_calendar_last_success_timestamp_seconds",
}
#: The exposition's names for a metric family, by its type.
SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum")}


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def all_panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside collapsed rows too."""
    for panel in board["panels"]:
        yield panel
        yield from panel.get("panels", [])


def queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expression) of every target of every panel."""
    return [
        (f"{panel['title']} ({target['refId']})", target["expr"])
        for panel in all_panels(board)
        for target in panel.get("targets", [])
    ]


def exported_names() -> set[str]:
    """The names of the series Herald's registry exposes (``_total`` on counters, the
    three series of a histogram)."""
    return {
        family.name + suffix
        for family in Metrics().registry.collect()
        for suffix in SUFFIXES[family.type]
    }


def as_prometheus_runs_it(expr: str) -> str:
    for variable, value in GRAFANA_INTERVALS.items():
        expr = expr.replace(variable, value)
    return expr


# -- the dashboard's shape (fast) -------------------------------------------------------


def test_every_panel_is_a_grafana_panel() -> None:
    board = dashboard()
    assert board["uid"] == "herald" and board["title"]
    assert 36 <= board["schemaVersion"] <= 41
    ids = [panel["id"] for panel in all_panels(board)]
    assert len(ids) == len(set(ids)), "two panels share an id"
    taken: set[tuple[int, int]] = set()
    for panel in all_panels(board):
        title = panel.get("title", panel["id"])
        assert panel["type"], title
        grid = panel["gridPos"]
        assert all(isinstance(grid[key], int) for key in ("x", "y", "w", "h")), title
        assert grid["x"] >= 0 and grid["w"] > 0 and grid["x"] + grid["w"] <= 24, title
        cells = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & taken, f"{title} overlaps another panel"
        taken |= cells
        if panel["type"] == "row":
            assert "targets" not in panel, title
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, title
        refs = [target["refId"] for target in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), f"{title}: missing or repeated refIds"
        for target in panel["targets"]:
            assert target["expr"].strip(), title
            assert target["datasource"] == panel["datasource"], title
        assert "unit" in panel["fieldConfig"]["defaults"], f"{title} has no unit"


def test_the_dashboard_reads_the_provisioned_datasource() -> None:
    """The datasource variable defaults to the provisioned Prometheus (by uid), and the
    dashboard provider reads the folder the compose file mounts deploy/grafana at."""
    (variable,) = [v for v in dashboard()["templating"]["list"] if v["name"] == "datasource"]
    assert variable["type"] == "datasource" and variable["query"] == "prometheus"
    (source,) = yaml.safe_load(DATASOURCES.read_text())["datasources"]
    assert source["type"] == "prometheus"
    assert variable["current"]["value"] == source["uid"]
    (provider,) = yaml.safe_load(PROVIDERS.read_text())["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"] == DASHBOARDS_MOUNT


def test_every_metric_the_dashboard_names_is_exported() -> None:
    exported, used = exported_names(), set()
    for title, expr in queries(dashboard()):
        for name in re.findall(r"\b(herald_[a-z0-9_]+)", expr):
            assert name in exported, f"{title} uses {name}, which Herald does not export"
            used.add(name)
    assert OPERATORS_WATCH <= used, f"no panel shows {OPERATORS_WATCH - used}"


def test_database_gauges_are_counted_once() -> None:
    """Every dispatcher exports the database's gauges: a panel takes their ``max`` so
    three dispatchers do not triple the queue (as deploy/prometheus-rules.yml does)."""
    under_max = re.compile(r"max(\s+by\s*\([^)]*\))?\s*\(\s*$")
    for title, expr in queries(dashboard()):
        for found in re.finditer(r"\b(herald_[a-z_]+)", expr):
            if found.group(1) in DATABASE_GAUGES:
                assert under_max.search(expr[: found.start()]), f"{title}: {found.group(1)}"


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian: prometheus)")
def test_promtool_accepts_the_prometheus_configuration(tmp_path: Path) -> None:
    """As the compose file mounts them: the rules next to the configuration."""
    assert PROMTOOL is not None
    shutil.copy(PROMETHEUS_CONFIG, tmp_path / "prometheus.yml")
    shutil.copy(RULES, tmp_path / RULES.name)
    done = subprocess.run(
        [PROMTOOL, "check", "config", str(tmp_path / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 rule files found" in done.stdout + done.stderr


# -- every query on a real Prometheus --------------------------------------------------

#: The burst: webhooks to one receiver, by path. One URL takes 10 a second (the
#: webhook channel's rate limit), so the ok ones also make rate-limit waits.
OK, GONE, BUSY, DOWN = 12, 3, 3, 2


def prometheus_config(tmp_path: Path, herald_port: int) -> Path:
    """deploy/prometheus/prometheus.yml with its targets pointed at the test's ``herald
    run`` and scraped every second; the rules copied next to it."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    config["global"].update(scrape_interval="1s", evaluation_interval="1s")
    (job,) = config["scrape_configs"]
    job.pop("dns_sd_configs")
    job["static_configs"] = [{"targets": [f"127.0.0.1:{herald_port}"]}]
    shutil.copy(RULES, tmp_path / RULES.name)
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


async def start_prometheus(
    config: Path, tmp_path: Path, port: int, log: BinaryIO
) -> asyncio.subprocess.Process:
    assert PROMETHEUS is not None
    return await asyncio.create_subprocess_exec(
        PROMETHEUS,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        stdout=log,
        stderr=log,
    )


async def start_herald(url: str, port: int, log: BinaryIO) -> asyncio.subprocess.Process:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HERALD_")},
        "HERALD_DATABASE_URL": url,
        "HERALD_ADAPTERS": "none",
        "HERALD_WEBHOOK_ALLOW_PRIVATE": "true",  # the receiver is on 127.0.0.1
        "HERALD_SWEEP_SECONDS": "0.5",  # the gauges, and the schedules this test adds
        "HERALD_HTTP_HOST": "127.0.0.1",
        "HERALD_HTTP_PORT": str(port),
    }
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "run", env=env, stdout=log, stderr=log
    )


async def stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def schedule_burst(store: Store, hook: WebhookReceiver, n: int, path: str) -> None:
    """``n`` one-off webhooks due now to ``path`` of the receiver."""
    now = datetime.now(UTC)
    rows = schedule_rows(n, now, 0.0, f"webhook:{hook.url}{path}", owner="local:dashboard")
    await store.create_schedules_bulk(
        rows, details=[{} for _ in rows], actor="local:dashboard", action="test", now=now
    )


async def query(api: httpx.AsyncClient, expr: str) -> list[dict[str, Any]]:
    """The instant vector ``expr`` evaluates to now; an error fails the test."""
    answer = await api.get("/api/v1/query", params={"query": expr})
    body = answer.json()
    assert body["status"] == "success", f"{expr}: {body.get('error')}"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


async def ready(api: httpx.AsyncClient, within: float = 60) -> None:
    """Wait for Prometheus's readiness endpoint: until its storage is open it answers
    queries 503 "Service Unavailable" (which failed this test once on a busy machine)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if (await api.get("/-/ready")).status_code == 200:
                return
        except httpx.TransportError:
            pass  # not listening yet
        await asyncio.sleep(0.1)
    raise AssertionError(f"Prometheus was not ready within {within} s (see prometheus.log)")


async def until(api: httpx.AsyncClient, expr: str, within: float = 60) -> None:
    """Poll ``expr`` until it returns something (scraped, evaluated)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await query(api, expr):  # Prometheus is ready (:func:`ready`)
            return
        await asyncio.sleep(0.1)
    raise AssertionError(
        f"{expr} returned nothing within {within} s (herald.log and prometheus.log are in "
        "the test's tmp_path)"
    )


#: The burst as Prometheus has it. A rate needs two samples after the burst began, so
#: the burst starts once the series exist (the webhook channel's children, made at its
#: first delivery), and the panels are read once these say so.
BURST_SEEN = (
    "sum(increase(herald_delivery_lateness_seconds_count[$__rate_interval])) > 0",
    'sum(increase(herald_deliveries_total{outcome="permanent"}[$__rate_interval])) > 0',
    'sum(increase(herald_deliveries_total{outcome="retry"}[$__rate_interval])) > 0',
    "sum(increase(herald_provider_429_total[$__rate_interval])) > 0",
    'max(herald_jobs{state="dead"}) > 0',
)


@pytest.mark.skipif(
    PROMETHEUS is None,
    reason="the Prometheus server is not installed (Debian package prometheus; .ci/run "
    "installs it)",
)
@pytest.mark.timeout(180)  # two processes starting on a busy machine
async def test_every_panel_query_answers_on_a_real_prometheus(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'herald.db'}"
    db.upgrade(url)
    herald_port, prometheus_port = unused_port(), unused_port()
    config = prometheus_config(tmp_path, herald_port)
    base = f"http://127.0.0.1:{prometheus_port}"
    with (
        (tmp_path / "herald.log").open("wb") as herald_log,
        (tmp_path / "prometheus.log").open("wb") as prometheus_log,
    ):
        async with WebhookReceiver() as hook:
            hook.script(*[Scripted(status=410)] * GONE, on="/gone")
            hook.script(*[Scripted(status=429, headers={"Retry-After": "1"})] * BUSY, on="/busy")
            hook.script(*[Scripted(status=503)] * DOWN, on="/down")
            herald = await start_herald(url, herald_port, herald_log)
            prometheus = await start_prometheus(config, tmp_path, prometheus_port, prometheus_log)
            store = await Store.open(url)
            try:
                async with httpx.AsyncClient(base_url=base, timeout=10) as api:
                    await ready(api)
                    await schedule_burst(store, hook, 1, "/first")
                    await until(api, 'herald_deliveries_total{job="herald",outcome="permanent"}')
                    for n, path in ((OK, "/ok"), (GONE, "/gone"), (BUSY, "/busy"), (DOWN, "/down")):
                        await schedule_burst(store, hook, n, path)
                    for expr in BURST_SEEN:
                        await until(api, as_prometheus_runs_it(expr))
                    rules = (await api.get("/api/v1/rules")).json()["data"]["groups"]
                    problems = [
                        f"{title}: {problem}"
                        for title, expr in queries(dashboard())
                        if (problem := await what_is_wrong(api, as_prometheus_runs_it(expr)))
                    ]
            finally:
                await store.close()
                await stop(prometheus)
                await stop(herald)
    assert not problems, "panels whose query fails:\n" + "\n".join(problems)
    assert [group["name"] for group in rules] == ["herald"], "the alert rules did not load"


async def what_is_wrong(api: httpx.AsyncClient, expr: str) -> str | None:
    """Why ``expr`` is no good for a panel (an error, no result, or a series with no
    number although the burst has just gone through), or None."""
    body = (await api.get("/api/v1/query", params={"query": expr})).json()
    if body["status"] != "success":
        return f"{body['errorType']}: {body['error']}"
    result = body["data"]["result"]
    if not result:
        return "no result"
    blank = [series["metric"] for series in result if series["value"][1] == "NaN"]
    return f"NaN for {blank}" if blank else None

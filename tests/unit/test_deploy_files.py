"""The container files: compose structure, health checks, no committed secrets, and an
.env.example that lists every setting Herald reads."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_services_and_dependencies() -> None:
    services = compose()["services"]
    assert {"postgres", "migrate", "bot", "dispatcher", "console"} <= set(services)
    assert services["dispatcher"]["environment"]["HERALD_ADAPTERS"] == "none"
    assert services["bot"]["environment"]["HERALD_ADAPTERS"] == "auto"  # the one with chats
    assert "healthcheck" in services["postgres"]
    assert services["migrate"]["command"] == ["db", "upgrade"]
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    dispatcher = services["dispatcher"]
    assert dispatcher["deploy"]["replicas"] >= 2
    assert dispatcher["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert "readyz" in " ".join(dispatcher["healthcheck"]["test"])
    assert services["console"]["command"] == ["console"]
    assert "tools" in services["console"]["profiles"]  # on demand: docker compose run --rm console
    assert "pgdata" in compose()["volumes"]


def memory_bytes(text: str) -> float:
    """Compose's byte notation: 512M, 1G, 1.5g, 1024 (bytes)."""
    found = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)b?", str(text).lower())
    assert found, f"{text!r} is not a size"
    return float(found.group(1)) * 1024 ** " kmg".index(found.group(2) or " ")


def test_every_service_has_resource_limits_and_reservations() -> None:
    for name, service in compose()["services"].items():
        resources = service["deploy"]["resources"]
        limits, reservations = resources["limits"], resources["reservations"]
        assert float(reservations["cpus"]) <= float(limits["cpus"]), name
        assert memory_bytes(reservations["memory"]) <= memory_bytes(limits["memory"]), name
    # the dispatcher's own deploy (for its replicas) keeps the limits the others inherit
    services = compose()["services"]
    assert services["dispatcher"]["deploy"]["resources"] == services["bot"]["deploy"]["resources"]


def mounts(service: dict) -> dict[str, Path]:
    """A service's bind mounts from the repository: where they land, what they are."""
    found: dict[str, Path] = {}
    for volume in service["volumes"]:
        source, target, *_ = volume.split(":")
        if source.startswith("./"):
            found[target] = ROOT / source
    return found


def test_monitoring_profile_scrapes_every_herald_process() -> None:
    services = compose()["services"]
    prometheus, grafana = services["prometheus"], services["grafana"]
    for service in (prometheus, grafana):
        assert service["profiles"] == ["monitoring"]  # not started by a plain `up`
        for target, source in mounts(service).items():
            assert source.exists(), f"{source.relative_to(ROOT)} (mounted at {target})"
    assert prometheus["image"].split(":")[0] == "prom/prometheus"
    assert grafana["image"].split(":")[0] == "grafana/grafana"
    config_path = mounts(prometheus)["/etc/prometheus/prometheus.yml"]
    config = yaml.safe_load(config_path.read_text())
    for rules in config.get("rule_files", []):
        assert f"/etc/prometheus/{rules}" in mounts(prometheus), rules
    hosts = set()
    for job in config["scrape_configs"]:
        assert job.get("metrics_path", "/metrics") == "/metrics"
        for static in job.get("static_configs", []):
            hosts.update(target.partition(":")[0] for target in static["targets"])
        for dns in job.get("dns_sd_configs", []):
            assert dns["type"] == "A" and dns["port"] == 8080
            hosts.update(dns["names"])
    assert {"bot", "dispatcher"} <= hosts <= set(services)


def test_grafana_finds_its_dashboard_and_prometheus() -> None:
    grafana = compose()["services"]["grafana"]
    provisioning = mounts(grafana)["/etc/grafana/provisioning"]
    providers = [
        provider
        for path in sorted((provisioning / "dashboards").glob("*.yml"))
        for provider in yaml.safe_load(path.read_text())["providers"]
    ]
    folders = {provider["options"]["path"].rstrip("/") for provider in providers}
    dashboards = [t for t, source in mounts(grafana).items() if source.suffix == ".json"]
    assert dashboards and all(str(Path(t).parent) in folders for t in dashboards)
    sources = [
        source
        for path in sorted((provisioning / "datasources").glob("*.yml"))
        for source in yaml.safe_load(path.read_text())["datasources"]
    ]
    assert any(s["url"].rstrip("/") == "http://prometheus:9090" for s in sources)


def test_no_secret_values_are_committed() -> None:
    text = (ROOT / "docker-compose.yml").read_text() + (ROOT / ".env.example").read_text()
    for pattern in (
        r"xox[bpa]-[0-9A-Za-z-]{10,}",
        r"whsec_[0-9A-Za-z+/=]{10,}",
        r"xapp-[0-9A-Za-z-]{10,}",
    ):
        assert not re.search(pattern, text)
    for line in (ROOT / ".env.example").read_text().splitlines():
        name, _, value = line.partition("=")
        if any(word in name for word in ("TOKEN", "SECRET", "PASSWORD")) and not name.startswith(
            "#"
        ):
            assert value == "", f"{name} has a value in .env.example"


def test_env_example_lists_every_setting() -> None:
    text = (ROOT / ".env.example").read_text()
    for field in Settings.model_fields.values():
        alias = field.alias
        if alias in (None, "USER"):
            continue
        assert re.search(rf"^#? ?{alias}=", text, re.M), f"{alias} is missing from .env.example"


def test_dockerfile_is_multi_stage_non_root_with_a_healthcheck() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM ", text, re.M)) >= 2
    assert re.search(r"^USER (?!root)\w+", text, re.M)
    assert "HEALTHCHECK" in text and "/healthz" in text
    assert 'ENTRYPOINT ["herald"]' in text

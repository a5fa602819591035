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

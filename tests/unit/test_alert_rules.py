"""The alert rules parse, cover what operators need, and name only metrics Herald exports.
(`promtool check rules deploy/prometheus-rules.yml` does the same where promtool exists.)"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from core.metrics import Metrics

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus-rules.yml"
WANTED = {
    "HeraldQueueDeep",
    "HeraldJobsOverdue",
    "HeraldProviderErrorRateHigh",
    "HeraldDeadLettersWaiting",
    "HeraldDispatcherHeartbeatStale",
    "HeraldCalendarFailing",
    "HeraldCalendarsNotRefreshed",
}


def exported_names() -> set[str]:
    names = set()
    for family in Metrics().registry.collect():
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
        names.add(family.name + "_total")
    return names


def test_rules_parse_and_cover_the_essentials() -> None:
    doc = yaml.safe_load(RULES.read_text())
    rules = [rule for group in doc["groups"] for rule in group["rules"]]
    assert WANTED <= {rule["alert"] for rule in rules}
    exported = exported_names()
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        assert re.fullmatch(r"\d+[smh]", rule["for"])
        for name in re.findall(r"\b(herald_[a-z_]+)", rule["expr"]):
            assert name in exported, f"{rule['alert']} uses unknown metric {name}"


def test_calendar_alerts_name_the_calendar_and_the_way_out() -> None:
    """Per-calendar alerts keep the ``calendar_id`` label (an id, never a URL) and say
    where to look."""
    doc = yaml.safe_load(RULES.read_text())
    rules = {rule["alert"]: rule for group in doc["groups"] for rule in group["rules"]}
    for name in ("HeraldCalendarFailing", "HeraldCalendarsNotRefreshed"):
        rule = rules[name]
        assert "by (calendar_id)" in rule["expr"]
        assert "{{ $labels.calendar_id }}" in rule["annotations"]["summary"]
        assert "herald feeds refresh" in rule["annotations"]["description"]
    assert "Calendars screen" in rules["HeraldCalendarFailing"]["annotations"]["description"]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_accepts_the_rules() -> None:
    subprocess.run(["promtool", "check", "rules", str(RULES)], check=True)

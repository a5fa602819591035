"""The alert rules parse, cover what operators need, name only metrics Herald exports,
count a database gauge once however many dispatchers export it, and pass their promtool
unit tests (deploy/prometheus-rules.test.yml: one firing and one quiet case per alert)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from core.metrics import DATABASE_GAUGES, Metrics

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus-rules.yml"
RULE_TESTS = RULES.with_name("prometheus-rules.test.yml")
PROMTOOL = shutil.which("promtool")
WANTED = {
    "HeraldQueueDeep",
    "HeraldJobsOverdue",
    "HeraldProviderErrorRateHigh",
    "HeraldDeadLettersWaiting",
    "HeraldDispatcherHeartbeatStale",
    "HeraldLateSends",
    "HeraldCalendarFailing",
    "HeraldCalendarsNotRefreshed",
}


def exported_names() -> set[str]:
    names = set()
    for family in Metrics().registry.collect():
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
        names.add(family.name + "_total")
        if family.type == "histogram":  # its series exist once a label is observed
            names.update(family.name + suffix for suffix in ("_bucket", "_count", "_sum"))
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


def alert_rules() -> dict[str, dict]:
    doc = yaml.safe_load(RULES.read_text())
    return {rule["alert"]: rule for group in doc["groups"] for rule in group["rules"]}


def test_database_gauges_are_counted_once() -> None:
    """Each dispatcher exports the database's gauges: a rule takes their ``max`` (by
    labels) so three dispatchers do not triple the queue."""
    exported = exported_names()
    assert set(DATABASE_GAUGES) <= exported
    aggregated = re.compile(r"max(\s+by\s*\([^)]*\))?\s*\(\s*$")
    for name, rule in alert_rules().items():
        for found in re.finditer(r"\b(herald_[a-z_]+)", rule["expr"]):
            if found.group(1) in DATABASE_GAUGES:
                before = rule["expr"][: found.start()]
                assert aggregated.search(before), f"{name}: {found.group(1)} is not under max"


def test_every_alert_has_a_firing_and_a_quiet_unit_test() -> None:
    doc = yaml.safe_load(RULE_TESTS.read_text())
    assert doc["rule_files"] == [RULES.name]
    cases = [case for test in doc["tests"] for case in test["alert_rule_test"]]
    for name in alert_rules():
        mine = [case for case in cases if case["alertname"] == name]
        assert any(case.get("exp_alerts") for case in mine), f"{name} is never seen firing"
        assert any(not case.get("exp_alerts") for case in mine), f"{name} is never quiet"


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (Debian: prometheus)")
def test_promtool_accepts_the_rules_and_their_unit_tests_pass() -> None:
    assert PROMTOOL is not None
    for args in (["check", "rules", str(RULES)], ["test", "rules", str(RULE_TESTS)]):
        done = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr

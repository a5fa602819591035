"""docs/reference/configuration.md is generated from core.settings.Settings: it names
and describes every setting, shows no secret and no path of the machine it was made
on, and is current."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from core.settings import Settings, data_dir
from docs.gen import ROOT, Page, config_reference
from tests.docs.conftest import assert_current

PAGE = Page(config_reference.PATH, config_reference.render)


def test_the_committed_page_is_current() -> None:
    assert_current(PAGE, "config")


def test_every_setting_has_a_row_with_its_variable() -> None:
    text = config_reference.render()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    variables = [row.split("`")[1] for row in rows]
    assert sorted(variables) == sorted(f.alias or n for n, f in Settings.model_fields.items())


def test_secrets_show_no_default_and_the_database_no_path() -> None:
    text = config_reference.render()
    rows = {line.split("`")[1]: line for line in text.splitlines() if line.startswith("| `")}
    for name in ("SLACK_BOT_TOKEN", "HERALD_API_TOKEN", "HERALD_WEBHOOK_SECRETS"):
        assert rows[name].split(" | ")[2] == "(secret)"
    assert "per user" in rows["HERALD_DATABASE_URL"] and "sqlite:///" not in text
    for machine in (ROOT, Path.home(), Path(tempfile.gettempdir()), data_dir()):
        assert machine.as_posix() not in text


def test_a_field_comment_is_its_description() -> None:
    rows = {
        line.split("`")[1]: line
        for line in config_reference.render().splitlines()
        if line.startswith("| `")
    }
    assert "The time of day of a rule that names none" in rows["HERALD_DEFAULT_TIME"]
    assert "also read from `HERALD_API_MAX_IMPORT`" in rows["HERALD_IMPORT_MAX_BYTES"]


def test_every_setting_has_a_description() -> None:
    missing = config_reference.undocumented()
    assert not missing, (
        f"{len(missing)} settings have no #: comment above their field in core/settings.py "
        f"or core/channel_settings/: {', '.join(missing)}"
    )


def test_a_setting_without_a_description_stops_the_generator() -> None:
    described = config_reference.Setting("HERALD_A", "text", "empty", "What A does.")
    bare = [
        config_reference.Setting("HERALD_B", "text", "empty", ""),
        config_reference.Setting("HERALD_C", "integer", "`1`", ""),
    ]
    group = config_reference.Group("", [described, *bare])
    found = [config_reference.Section("Core", "", [group])]
    with pytest.raises(config_reference.Undescribed) as raised:
        config_reference.check_described(found)
    assert raised.value.variables == ["HERALD_B", "HERALD_C"]
    assert "HERALD_B, HERALD_C" in str(raised.value)

"""A claimed job carries its schedule's tenant and its owner's name from the members
table of that tenant only (both databases), and the dispatcher credits only shared
channels of tenants that want it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.actors import Principal
from core.cases import Herald
from core.channels import parse_destination
from core.clock import ManualClock
from core.dispatcher import DispatcherConfig, shared_channel
from core.settings import load_settings
from core.store import ClaimedJob
from tests.conftest import START

ADA = Principal("slack:U1", "slack:T1")
ADA_ELSEWHERE = Principal("slack:U1", "slack:T2")


async def claimed(herald: Herald, clock: ManualClock) -> list[ClaimedJob]:
    clock.advance(120)
    now = clock.now()
    return await herald.store.claim_due(
        now=now, worker="w", lease_until=now + timedelta(seconds=30), limit=10
    )


async def test_the_owner_name_comes_from_the_schedules_tenant(
    herald: Herald, clock: ManualClock
) -> None:
    await herald.sync_member(ADA, display_name="Ada")
    await herald.sync_member(ADA_ELSEWHERE, display_name="Impostor")
    await herald.create_schedule(ADA, to="slack:C0123", when="in 1 minute", text="x")
    [job] = await claimed(herald, clock)
    assert (job.tenant, job.owner_name) == ("slack:T1", "Ada")


async def test_an_owner_without_a_name_has_none(herald: Herald, clock: ManualClock) -> None:
    await herald.create_schedule(ADA, to="slack:C0123", when="in 1 minute", text="x")
    [job] = await claimed(herald, clock)
    assert job.owner_name == ""


@pytest.mark.parametrize(
    ("destination", "tenant", "shared"),
    [
        ("slack:C0123", "slack:T1", True),
        ("slack:G0123", "slack:T1", True),
        ("slack:C0123/1700000000.000100", "slack:T1", True),
        ("slack:D0123", "slack:T1", False),
        ("discord:123456789012345678", "discord:42", True),
        ("discord:123456789012345678", "discord:@7", False),
        ("webhook:https://example.org/hook", "local", False),
        ("email:ada@example.org", "local", False),
    ],
)
def test_only_shared_channels_are_credited(destination: str, tenant: str, shared: bool) -> None:
    assert shared_channel(parse_destination(destination), tenant) is shared


def test_the_setting_is_on_by_default_and_per_tenant() -> None:
    settings = load_settings(
        _env_file=None, HERALD_TENANT_SCHEDULED_BY="slack:T2=off, discord:42 = ON"
    )
    assert settings.scheduled_by is True
    assert settings.tenant_scheduled_by == {"slack:T2": False, "discord:42": True}
    config = DispatcherConfig.from_settings(settings)
    job = ClaimedJob(1, 1, START, START, 1, "k", "slack:C0123", "x", None, None, {})
    job.tenant, job.owner_name = "slack:T1", "Ada"
    assert config.scheduled_by_name(job, parse_destination("slack:C0123")) == "Ada"
    job.tenant = "slack:T2"
    assert config.scheduled_by_name(job, parse_destination("slack:C0123")) is None
    with pytest.raises(Exception, match="TENANT=on or TENANT=off"):
        load_settings(_env_file=None, HERALD_TENANT_SCHEDULED_BY="slack:T1=sometimes")

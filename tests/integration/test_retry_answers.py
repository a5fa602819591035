"""Whoever asked for a dead letter's retry in chat is told what an admin decided, in
their direct messages: approved, or turned down with the reason. The decision is stored
first; the message is a courtesy, and a failure to send it changes nothing."""

from __future__ import annotations

from core.actors import Principal
from core.cases import Herald
from core.channels.base import DeliveryResult
from core.clock import ManualClock
from core.reminders import NOTICE
from core.settings import Settings
from tests.support.channels import RecordingChannel
from tests.tui.conftest import deliver

ALICE = Principal("slack:UALICE", "slack:TA")
ROOT = "local:root-admin"  # HERALD_ADMINS: Herald-wide


async def _asked(herald: Herald, clock: ManualClock) -> int:
    """Alice's schedule died; she asks for a retry from Slack."""
    await herald.create_schedule(ALICE, to="slack:C0ALERTS", when="in 1 minute", text="hi")
    clock.advance(61)
    assert await deliver(herald, clock, fail=True, error="channel_not_found") == 1
    [letter] = await herald.dead_letters(ALICE)
    assert await herald.retry_dead_letters(ALICE, [letter.job_id]) == ("requested", 1)
    return letter.job_id


async def test_the_requester_hears_the_answer_in_their_direct_messages(
    herald: Herald, settings: Settings, clock: ManualClock
) -> None:
    slack = RecordingChannel()
    told = Herald(herald.store, settings, clock, channels={"slack": slack})
    job = await _asked(told, clock)
    await told.reject_dead_retry(ROOT, [job], "the channel was archived <!channel>")
    [notice] = slack.deliveries
    assert notice.destination.kind == "slack" and notice.destination.target == "@UALICE"
    assert notice.options[NOTICE] is True  # no Snooze or Done under it
    assert notice.body.startswith(
        f"local:root-admin turned down your request to retry dead letter {job}"
    )
    assert notice.body.endswith(": the channel was archived &lt;!channel&gt;")  # no broadcast
    # asked again and approved: told that too, and the job is back in the queue
    await told.retry_dead_letters(ALICE, [job])
    assert await told.retry_dead_letters(ROOT, [job]) == ("retried", 1)
    assert slack.deliveries[-1].body.endswith(
        "approved your request to retry "
        f"dead letter {job} (schedule {notice.schedule_id}): it is being sent again."
    )
    job_row = await told.store.get_job(job)
    assert job_row is not None and job_row.state == "pending"


async def test_a_refused_message_changes_no_decision(
    herald: Herald, settings: Settings, clock: ManualClock
) -> None:
    refusing = RecordingChannel(lambda d: DeliveryResult.permanent("cannot_dm_bot"))
    told = Herald(herald.store, settings, clock, channels={"slack": refusing})
    job = await _asked(told, clock)
    assert await told.reject_dead_retry(ROOT, [job], "no") == 1
    [letter] = await told.dead_letter(ROOT, job)
    assert (letter.retry_rejected_by, letter.retry_reject_reason) == (ROOT, "no")
    assert len(refusing.deliveries) == 1


async def test_a_terminal_requester_is_not_messaged(
    herald: Herald, settings: Settings, clock: ManualClock
) -> None:
    slack = RecordingChannel()
    told = Herald(herald.store, settings, clock, channels={"slack": slack})
    await told.create_schedule("local:bob", to="log:", when="in 1 minute", text="x")
    clock.advance(61)
    await deliver(told, clock, fail=True)
    [letter] = await told.dead_letters("local:bob")
    await told.retry_dead_letters("local:bob", [letter.job_id])
    await told.reject_dead_retry(ROOT, [letter.job_id], "no")
    assert slack.deliveries == []  # they read it in `herald dead list`


async def test_one_message_however_many_letters_the_decision_covers(
    herald: Herald, settings: Settings, clock: ManualClock
) -> None:
    slack = RecordingChannel()
    told = Herald(herald.store, settings, clock, channels={"slack": slack})
    for i in range(3):
        await told.create_schedule(ALICE, to="slack:C0ALERTS", when="in 1 minute", text=f"m{i}")
    clock.advance(61)
    assert await deliver(told, clock, fail=True) == 3
    jobs = sorted(d.job_id for d in await told.dead_letters(ALICE))
    await told.retry_dead_letters(ALICE, jobs)
    await told.reject_dead_retry(ROOT, jobs, "no")
    [notice] = slack.deliveries  # not three
    listed = ", ".join(str(j) for j in jobs)
    assert notice.body.endswith(f"your request to retry 3 dead letters ({listed}): no")

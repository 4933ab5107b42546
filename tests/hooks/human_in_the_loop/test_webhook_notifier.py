"""``WebhookNotifier`` on the real dev server: each event is signed per Standard Webhooks (verified
by a local receiver with the ``standardwebhooks`` library), retried until delivered without losing
the request, carries one-time links for each approver, and the Slack format is a Block Kit
message a Slack incoming webhook takes; escalation hands the call to other approvers and a
timeout is recorded as a timeout."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import unquote

import pytest

from core.approval_links import LINK_PATH, verify_token
from hooks.human_in_the_loop import (
    AlwaysAskPolicy,
    ConfirmationHook,
    DurableConfirmationStrategy,
    Escalation,
    WebhookNotifier,
)
from tests.support.hitl_helpers import call, calls, hitl_agent, start, wait_pending
from tests.support.polling import eventually
from tests.support.side_effects import WEBHOOK_SECRET_ENV, allow_webhook, worker_environment
from tests.support.webhook_receiver import TEST_SECRET, WebhookReceiver

LINK_SECRET = "test-link-secret-0123456789abcdef0123"
INBOX = "http://inbox.example.test"


@pytest.fixture
def links(monkeypatch):
    """The worker's settings for links (it runs in this process and reads them per event)."""
    monkeypatch.setenv("AGENT_INBOX_PUBLIC_URL", INBOX)
    monkeypatch.setenv("AGENT_APPROVAL_LINK_SECRET", LINK_SECRET)


@pytest.fixture
def receiver():
    server = WebhookReceiver()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def webhook_secret():
    """The workers hold the signing secret; each test's receiver is allowed by :func:`notified`."""
    with worker_environment(**{WEBHOOK_SECRET_ENV: TEST_SECRET, "AGENT_WEBHOOK_URLS": None}):
        yield


def notified(url: str, fmt: str = "standard", **options) -> ConfirmationHook:
    allow_webhook(url)
    notifier = WebhookNotifier(url, format=fmt, secret_env=WEBHOOK_SECRET_ENV)
    return ConfirmationHook({"*": DurableConfirmationStrategy(AlwaysAskPolicy(), notifier=notifier, **options)})


def token_of(url: str) -> str:
    assert url.startswith(INBOX + LINK_PATH)
    return unquote(url[len(INBOX + LINK_PATH) :])


async def test_requested_and_decided_events_are_signed_with_links(
    client, worker, scripted, model, run_id, links, receiver
):
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
    handle = await start(hitl_agent(model, notified(receiver.url, approvers=["ann", "bob"])), client, worker, run_id)
    (pending,) = await wait_pending(handle)
    (requested,) = await eventually(lambda: receiver.events("approval_requested"), message="no approval_requested")
    data = requested["data"]
    assert data["run_id"] == run_id and data["call"]["tool_call_id"] == pending.tool_call_id
    assert data["decision"] is None
    assert [link["approver"] for link in data["links"]] == ["ann", "bob"]
    claims = verify_token(token_of(data["links"][1]["reject_url"]), LINK_SECRET)
    assert (claims.run_id, claims.tool_call_id, claims.action, claims.approver) == (
        run_id,
        pending.tool_call_id,
        "reject",
        "bob",
    )
    assert claims.arguments_sha256 == pending.arguments_sha256 and claims.expires_at == pending.expires_at
    desc = await handle.workflow.describe()
    assert claims.request_id == pending.request_id and pending.request_id.startswith(f"{desc.run_id}/")
    await handle.confirm(pending.tool_call_id, approver="ann")
    await handle.result()  # the run's end waits for the decided event
    (decided,) = receiver.events("approval_decided")
    assert decided["data"]["decision"]["approver"] == "ann" and decided["data"]["decision"]["via"] == "update"
    assert decided["data"]["links"] == []
    assert not receiver.refused


async def test_failed_delivery_is_retried_with_the_same_id(client, worker, scripted, model, run_id):
    receiver = WebhookReceiver(failures=2)
    try:
        scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
        handle = await start(hitl_agent(model, notified(receiver.url)), client, worker, run_id)
        (pending,) = await wait_pending(handle)
        (delivered,) = await eventually(lambda: receiver.received, message="the webhook never got the event")
        assert receiver.attempts == 3
        assert delivered["id"] == f"{run_id}:{pending.tool_call_id}:approval_requested:0"
        assert delivered["body"]["data"]["links"] == []  # no public URL or link key here
        await handle.confirm(pending.tool_call_id)
        assert (await handle.result()).messages[-2].tool_call_result.result == "3"
    finally:
        receiver.close()


async def test_a_failing_webhook_never_loses_the_request(client, worker, scripted, model, run_id):
    receiver = WebhookReceiver(failures=10**6)
    try:
        scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
        handle = await start(hitl_agent(model, notified(receiver.url)), client, worker, run_id)
        (pending,) = await wait_pending(handle)
        await eventually(lambda: receiver.attempts >= 2, message="the notification was not retried")
        assert [p.tool_call_id for p in await handle.pending_confirmations()] == [pending.tool_call_id]
        await handle.reject(pending.tool_call_id, feedback="no")
        await eventually(lambda: receiver.attempts >= 3, message="the decided event was not attempted")
    finally:
        receiver.close()


async def test_escalation_then_timeout_is_recorded_as_a_timeout(
    client, worker, scripted, model, run_id, links, receiver
):
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "gave up"}])
    hook = notified(
        receiver.url,
        approvers=["ann"],
        timeout=timedelta(seconds=4),
        escalation=[Escalation(after=timedelta(seconds=1), approvers=["lead"])],
    )
    handle = await start(hitl_agent(model, hook), client, worker, run_id)
    await wait_pending(handle)
    escalated = await eventually(
        handle.pending_confirmations, lambda found: found and found[0].escalations == 1, message="never escalated"
    )
    assert escalated[0].approvers == ["lead"] and escalated[0].escalated_at is not None
    result = await handle.result()
    record = result.messages[-2].meta["confirmation"]
    assert record["via"] == "timeout" and record["approver"] is None and record["action"] == "reject"
    (event,) = receiver.events("approval_escalated")
    assert [link["approver"] for link in event["data"]["links"]] == ["lead"]
    assert event["data"]["call"]["approvers"] == ["lead"]
    (expired,) = receiver.events("approval_expired")
    assert expired["data"]["decision"]["via"] == "timeout" and expired["data"]["decision"]["approver"] is None
    assert [e["type"] for e in receiver.events()] == [
        "approval_requested",
        "approval_escalated",
        "approval_expired",
    ]


async def test_slack_format_is_block_kit_an_incoming_webhook_takes(client, worker, scripted, model, run_id, links):
    slack = WebhookReceiver(slack=True)
    try:
        scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
        handle = await start(hitl_agent(model, notified(slack.url, "slack", approvers=["ann"])), client, worker, run_id)
        (pending,) = await wait_pending(handle)
        (message,) = await eventually(lambda: slack.events(), message="slack never got the message")
        assert not slack.refused
        assert "add" in message["text"] and run_id in message["text"]
        (actions,) = [block for block in message["blocks"] if block["type"] == "actions"]
        approve, reject = actions["elements"]
        assert (approve["text"]["text"], approve["style"], reject["style"]) == ("Approve", "primary", "danger")
        assert verify_token(token_of(approve["url"]), LINK_SECRET).action == "confirm"
        await handle.confirm(pending.tool_call_id, approver="ann")
        await handle.result()
        assert len(slack.events()) == 2 and not slack.refused
        assert not [block for block in slack.events()[1]["blocks"] if block["type"] == "actions"]
    finally:
        slack.close()

"""Replay the committed histories of approval routing with today's code: a rule that asks and one
that lets a call run (``routing_rule.json``), an escalation then a decision by the escalation's
approver (``routing_escalation_decided.json``), an escalation then the timeout
(``routing_escalation_timeout.json``), and webhook notifications (``routing_webhook.json``).

A change that would give these runs other commands on replay (a rule evaluated differently, an
escalation timer moved, a notification no longer sent) fails here. Re-record after an intended
change with

    RECORD_HITL_HISTORIES=1 .venv/bin/pytest tests/hooks/human_in_the_loop/test_routing_replay.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from hooks.human_in_the_loop import (
    AlwaysAskPolicy,
    ConfirmationHook,
    DurableConfirmationStrategy,
    Escalation,
    RulePolicy,
    WebhookNotifier,
)
from runtime.plugin import AgentPlugin
from tests.support.hitl_helpers import call, calls, hitl_agent, start, wait_pending
from tests.support.polling import eventually
from tests.support.side_effects import WEBHOOK_SECRET_ENV, worker_environment
from tests.support.webhook_receiver import TEST_SECRET, WebhookReceiver
from workflows.agent_workflow import AgentWorkflow

HISTORIES = Path(__file__).resolve().parents[2] / "histories"
PATHS = ("rule", "escalation_decided", "escalation_timeout", "webhook")


def history_file(path: str) -> Path:
    return HISTORIES / f"routing_{path}.json"


def hook_for(path: str, url: str = "") -> ConfirmationHook:
    if path == "rule":
        return ConfirmationHook({"*": DurableConfirmationStrategy(RulePolicy("args.a > 10"))})
    if path == "webhook":
        return ConfirmationHook(
            {
                "*": DurableConfirmationStrategy(
                    AlwaysAskPolicy(), notifier=WebhookNotifier(url, secret_env=WEBHOOK_SECRET_ENV)
                )
            }
        )
    return ConfirmationHook(
        {
            "*": DurableConfirmationStrategy(
                AlwaysAskPolicy(),
                approvers=["ann"],
                timeout=timedelta(seconds=3),
                escalation=[Escalation(after=timedelta(seconds=1), approvers=["lead"])],
            )
        }
    )


@pytest.mark.recorder  # collected only with RECORD_HITL_HISTORIES=1 (see tests/conftest.py)
@pytest.mark.parametrize("path", PATHS)
async def test_record_history(path, client, worker, scripted, model, run_id):
    receiver = WebhookReceiver()
    limits = worker_environment(**{WEBHOOK_SECRET_ENV: TEST_SECRET, "AGENT_WEBHOOK_URLS": receiver.url})
    try:
        limits.__enter__()
        if path == "rule":  # a = 50 asks, a = 1 runs unasked
            scripted.script(model, [calls(call("add", a=50, b=1), call("add", a=1, b=1)), {"text": "done"}])
        else:
            scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "done"}])
        handle = await start(hitl_agent(model, hook_for(path, receiver.url)), client, worker, run_id)
        (pending,) = await wait_pending(handle)
        if path == "rule":
            await handle.confirm(pending.tool_call_id, approver="ann")
        elif path == "escalation_decided":
            await eventually(
                handle.pending_confirmations, lambda found: found and found[0].escalations == 1, message="not escalated"
            )
            await handle.confirm(pending.tool_call_id, approver="lead")
        elif path == "webhook":
            await eventually(lambda: receiver.received, message="the webhook never got the request")
            await handle.reject(pending.tool_call_id, feedback="no", approver="ann")
        await handle.result()
        HISTORIES.mkdir(exist_ok=True)
        history_file(path).write_text((await handle.workflow.fetch_history()).to_json())
    finally:
        limits.__exit__(None, None, None)
        receiver.close()


def scheduled(history: WorkflowHistory, activity: str) -> list:
    return [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == activity
    ]


def payload(p) -> dict:
    return json.loads(p.data)


def notifications_of(history: WorkflowHistory) -> list[dict]:
    return [
        payload(e.activity_task_scheduled_event_attributes.input.payloads[0])
        for e in scheduled(history, "deliver_approval_event")
    ]


@pytest.mark.parametrize("path", PATHS)
async def test_replay_history(path):
    text = history_file(path).read_text()
    history = WorkflowHistory.from_json(f"routing-{path}", text)
    urls = {n["notifier"]["init_parameters"]["url"] for n in notifications_of(history)}
    with worker_environment(AGENT_WEBHOOK_URLS=",".join(urls) or None):  # the recording worker's limits
        replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])
        result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    assert history.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    # the recorded path is what the file name says
    timers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_TIMER_FIRED]
    updates = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED]
    tools = [
        payload(e.activity_task_scheduled_event_attributes.input.payloads[0]) for e in scheduled(history, "invoke_tool")
    ]
    notifications = notifications_of(history)
    decisions = [
        payload(e.workflow_execution_update_accepted_event_attributes.accepted_request.input.args.payloads[0])
        for e in updates
    ]
    if path == "rule":  # one asked and confirmed, both ran
        assert [d["approver"] for d in decisions] == ["ann"] and len(tools) == 2 and not timers
    elif path == "escalation_decided":  # the escalation timer fired, then lead decided
        assert len(timers) == 1 and [d["approver"] for d in decisions] == ["lead"] and len(tools) == 1
        assert timers[0].event_id < updates[0].event_id
    elif path == "escalation_timeout":  # escalated, then expired: no decision, no tool
        assert len(timers) == 2 and not decisions and not tools
    else:
        assert [n["type"] for n in notifications] == ["approval_requested", "approval_decided"]
        assert notifications[1]["record"]["action"] == "reject" and notifications[1]["record"]["approver"] == "ann"
        assert notifications[0]["notifier"]["init_parameters"]["secret_env"] == WEBHOOK_SECRET_ENV


def test_a_rule_replays_in_a_process_that_never_imported_cel():
    """The run's rule is compiled first inside the workflow sandbox when nothing outside imported
    ``cel`` yet (a fresh worker replaying a parked run): the lazy import must pass through."""
    script = (
        "import asyncio, sys\n"
        "from temporalio.client import WorkflowHistory\n"
        "from temporalio.worker import Replayer\n"
        "from runtime.plugin import AgentPlugin\n"
        "from workflows.agent_workflow import AgentWorkflow\n"
        "assert 'cel' not in sys.modules\n"
        f"history = WorkflowHistory.from_json('routing-rule', open({str(history_file('rule'))!r}).read())\n"
        "replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])\n"
        "asyncio.run(replayer.replay_workflow(history, raise_on_replay_failure=True))\n"
        "print('replayed')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=HISTORIES.parents[1]
    )
    assert done.returncode == 0 and "replayed" in done.stdout, done.stderr[-3000:]

"""Replay the committed history of a run with approvers (``tests/histories/path_approvers.json``)
with today's code: a Signal from an approver not on the list is ignored, then a listed approver's
Update decides and the tool runs. If the Signal handler stopped refusing, replay would take the
ignored Signal as the decision and diverge from the recorded commands, so this fails CI.

Re-record after an intended change with
``RECORD_HITL_HISTORIES=1 .venv/bin/pytest tests/hooks/human_in_the_loop/test_approvers_replay.py``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agent import Agent, ChatMessage
from agent.approvals.decisions import DecisionRefusedError, signal_decision
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy, ToolDecision
from runtime.plugin import AgentPlugin
from tests import tools as t
from tests.support.hitl_helpers import call, calls, signals_processed, wait_pending
from workflows.agent_workflow import AgentWorkflow

HISTORY = Path(__file__).resolve().parents[2] / "histories" / "path_approvers.json"


async def _record(client, worker: str, scripted, model: str, run_id: str) -> None:
    scripted.script(model, [calls(call("add", id="p1", a=2, b=3)), {"text": "5"}])
    hook = ConfirmationHook(
        {"*": DurableConfirmationStrategy(AlwaysAskPolicy(), approvers=["ops"])}, approvers={"add": ["alice", "bob"]}
    )
    agent = Agent(model=model, tools=[t.add], hooks={"before_tool": [hook]})
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    (pending,) = await wait_pending(handle)
    assert pending.approvers == ["alice", "bob"]
    await signal_decision(handle.workflow, ToolDecision(tool_call_id="p1", action="confirm", approver="mallory"))
    await signals_processed(handle, 1)  # the run has processed the signal (and ignored it)
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == ["p1"]
    with pytest.raises(DecisionRefusedError):  # refused by the validator: not in the history
        await handle.confirm("p1", approver="ops")
    await handle.confirm("p1", approver="alice")
    await handle.result()
    HISTORY.write_text((await handle.workflow.fetch_history()).to_json())


@pytest.mark.recorder  # collected only with RECORD_HITL_HISTORIES=1 (see tests/conftest.py)
async def test_record_history(client, worker, scripted, model, run_id):
    await asyncio.wait_for(_record(client, worker, scripted, model, run_id), timeout=120)


async def test_replay_history():
    history = WorkflowHistory.from_json("path-approvers", HISTORY.read_text())
    replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None

    events = list(history.events)
    types = [e.event_type for e in events]
    assert types[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    (signal,) = [e for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
    (accepted,) = [e for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED]
    (activity,) = [
        e
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "invoke_tool"
    ]
    # recorded order: the unlisted signal, then the listed approver's Update, then the tool
    assert signal.event_id < accepted.event_id < activity.event_id

    def payload(p) -> dict:
        return json.loads(p.data)

    sent = payload(signal.workflow_execution_signaled_event_attributes.input.payloads[0])
    assert sent["approver"] == "mallory"
    decided = payload(
        accepted.workflow_execution_update_accepted_event_attributes.accepted_request.input.args.payloads[0]
    )
    assert decided["approver"] == "alice"

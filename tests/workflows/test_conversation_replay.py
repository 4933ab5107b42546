"""Replay committed histories of the conversation paths with today's code, so a later change that
breaks such runs fails CI:

- ``message_delivery``: two messages sent during a tool call, delivered in order at the next step
  boundary (Update ``send_message``, one with a ``message_id`` sent twice) and one by Signal;
- ``session_idle``: a session of two turns, then ``wait_for_user`` passes: ``exit_reason="idle"``;
- ``session_continue_as_new_first`` / ``_last``: the first and the last workflow run of a session
  that continued as new between turns (the last starts from the snapshot: turn, receipts, State);
- ``cancel_tool``: ``cancel_run`` while a tool activity runs (the activity acknowledges the cancel);
- ``temporal_cancel_approval``: Temporal's own cancel while a confirmation waits.

Re-record after an intended change with
``RECORD_HITL_HISTORIES=1 .venv/bin/pytest tests/unit/test_conversation_replay.py``.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agent import Agent, ChatMessage
from bench.cancel_support import gate
from core.payloads import UserMessage
from core.wire import USER_MESSAGE_SIGNAL
from runtime.plugin import AgentPlugin
from tests import tools as t
from tests.support.hitl_helpers import ask_all, call, calls, wait_pending
from tests.support.polling import eventually
from workflows.agent_workflow import AgentWorkflow

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
RECORDED = ("message_delivery", "session_idle", "session_continue_as_new", "cancel_tool", "temporal_cancel_approval")
PATHS = (
    "message_delivery",
    "session_idle",
    "session_continue_as_new_first",
    "session_continue_as_new_last",
    "cancel_tool",
    "temporal_cancel_approval",
)
#: How each history ends, and what its result says.
LAST_EVENT = {
    "session_continue_as_new_first": EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
}


def history_file(path: str) -> Path:
    return HISTORIES / f"conversation_{path}.json"


async def _record(path: str, client, worker: str, scripted, model: str, run_id: str, gates: Path) -> None:
    go = [ChatMessage.from_user("go")]
    session = timedelta(minutes=5)
    if path == "message_delivery":
        scripted.script(model, [calls(call("gate", id="g1", label="r1")), {"text": "got them"}])
        handle = await Agent(model=model, tools=[gate]).start(client, go, run_id=run_id, task_queue=worker)
        await eventually(lambda: (gates / "r1.started").exists(), message="gate never started")
        await handle.send_message("first", sender="ann", message_id="m1")
        await handle.send_message("first again", sender="ann", message_id="m1")
        await handle.workflow.signal(USER_MESSAGE_SIGNAL, UserMessage(text="second", sender="bob"))
        await handle.send_message("third")
        (gates / "r1.open").touch()
        await handle.result()
    elif path == "session_idle":
        scripted.script(model, [{"text": "hello"}, calls(call("add", id="a1", a=1, b=2)), {"text": "3"}])
        agent = Agent(
            model=model, tools=[t.add], hooks={"after_run": [t.trace_after_run]}, state_schema={"trace": {"type": list}}
        )
        handle = await agent.start(client, go, run_id=run_id, task_queue=worker, wait_for_user=timedelta(seconds=2))
        await handle.wait_turn(1)
        receipt = await handle.send_message("add 1 and 2")
        await handle.wait_turn(receipt.turn)
        assert (await handle.result()).exit_reason == "idle"
    elif path == "session_continue_as_new":
        turns = 12
        scripted.script(model, [{"text": f"answer {i}"} for i in range(1, turns + 1)])
        agent = Agent(
            model=model,
            tools=[t.add],
            continue_as_new_after_events=100,
            hooks={"after_run": [t.trace_after_run]},
            state_schema={"trace": {"type": list}},
        )
        handle = await agent.start(client, go, run_id=run_id, task_queue=worker, wait_for_user=session)
        await handle.wait_turn(1)
        for n in range(2, turns + 1):
            await handle.send_message(f"q{n}", message_id=f"q{n}")
            await handle.wait_turn(n)
        await handle.cancel("recorded")
        result = await handle.result()
        assert result.continuations >= 1
        first_run = (await handle.workflow.describe()).raw_description.workflow_execution_info.first_run_id
        first = await client.get_workflow_handle(run_id, run_id=first_run).fetch_history()
        history_file("session_continue_as_new_first").write_text(first.to_json())
        history_file("session_continue_as_new_last").write_text((await handle.workflow.fetch_history()).to_json())
        return
    elif path == "cancel_tool":
        scripted.script(
            model, [calls(call("gate", id="g1", label="c1"), call("add", id="a1", a=1, b=1)), {"text": "x"}]
        )
        handle = await Agent(model=model, tools=[gate, t.add]).start(client, go, run_id=run_id, task_queue=worker)
        await eventually(lambda: (gates / "c1.started").exists(), message="gate never started")
        await handle.cancel("recorded cancel")
        assert (await handle.result()).exit_reason == "cancelled"
    else:
        scripted.script(model, [calls(call("add", id="a1", a=1, b=2)), {"text": "never"}])
        agent = Agent(model=model, tools=[t.add], hooks={"before_tool": [ask_all()]})
        handle = await agent.start(client, go, run_id=run_id, task_queue=worker)
        await wait_pending(handle)
        await handle.workflow.cancel()
        assert (await handle.result()).exit_reason == "cancelled"
    history = await handle.workflow.fetch_history()
    history_file(path).write_text(history.to_json())


@pytest.mark.recorder  # collected only with RECORD_HITL_HISTORIES=1 (see tests/conftest.py)
@pytest.mark.parametrize("path", RECORDED)
async def test_record_history(path, client, worker, scripted, model, run_id, tmp_path, monkeypatch):
    monkeypatch.setenv("GATE_DIR", str(tmp_path))
    await asyncio.wait_for(_record(path, client, worker, scripted, model, run_id, tmp_path), timeout=120)


@pytest.mark.parametrize("path", PATHS)
async def test_replay_history(path):
    history = WorkflowHistory.from_json(f"conversation-{path}", history_file(path).read_text())
    replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    types = [e.event_type for e in history.events]
    assert types[-1] == LAST_EVENT.get(path, EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED)
    if path == "message_delivery":
        updates = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED]
        signals = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
        assert (len(updates), len(signals)) == (3, 1)
    if path == "temporal_cancel_approval":
        assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED in types
    if path == "cancel_tool":
        assert EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED in types

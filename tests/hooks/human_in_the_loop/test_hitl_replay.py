"""Replay committed histories of the confirm, reject, modify and timeout paths with today's code.

A change to the run loop or the confirmation hook that would break runs waiting in production
(a different command sequence on replay) fails here. The histories live in
``tests/histories/hitl_*.json``; re-record them after an intended change with

    RECORD_HITL_HISTORIES=1 .venv/bin/pytest tests/hooks/human_in_the_loop/test_hitl_replay.py
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from core.payloads import AgentRunResult
from runtime.plugin import AgentPlugin
from tests.support.hitl_helpers import ask_all, call, calls, hitl_agent, start, wait_pending
from workflows.agent_workflow import AgentWorkflow

HISTORIES = Path(__file__).resolve().parents[2] / "histories"
PATHS = ("confirm", "reject", "modify", "timeout")


def history_file(path: str) -> Path:
    return HISTORIES / f"hitl_{path}.json"


@pytest.mark.recorder  # collected only with RECORD_HITL_HISTORIES=1 (see tests/conftest.py)
@pytest.mark.parametrize("path", PATHS)
async def test_record_history(path, client, worker, scripted, model, run_id):
    scripted.script(model, [calls(call("add", a=1, b=2), call("echo", text="hi")), {"text": "done"}])
    hook = ask_all(timeout=timedelta(seconds=1)) if path == "timeout" else ask_all()
    handle = await start(hitl_agent(model, hook), client, worker, run_id)
    if path != "timeout":
        first, second = await wait_pending(handle, count=2)
        if path == "confirm":
            await handle.confirm(first.tool_call_id, approver="ann")
        elif path == "reject":
            await handle.reject(first.tool_call_id, feedback="no", approver="ann")
        else:
            await handle.modify(first.tool_call_id, new_tool_params={"a": 5, "b": 5}, approver="ann")
        await handle.workflow.signal("tool_decision", {"tool_call_id": second.tool_call_id, "action": "confirm"})
    await handle.result()
    history = await handle.workflow.fetch_history()
    HISTORIES.mkdir(exist_ok=True)
    history_file(path).write_text(history.to_json())


@pytest.mark.parametrize("path", PATHS)
async def test_replay_history(path):
    history = WorkflowHistory.from_json(f"hitl-{path}", history_file(path).read_text())
    replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    # the recorded path is what the file name says
    completed = history.events[-1].workflow_execution_completed_event_attributes
    (run,) = pydantic_data_converter.payload_converter.from_payloads(completed.result.payloads, [AgentRunResult])
    tools = [m.tool_call_result for m in run.messages if m.tool_call_result is not None]
    first = tools[0]
    expected = {
        "confirm": lambda: not first.error and first.origin.extra["confirmation"]["action"] == "confirm",
        "reject": lambda: first.error and first.result.endswith("With user feedback: no"),
        "modify": lambda: first.origin.arguments == {"a": 5, "b": 5} and first.result == "10",
        "timeout": lambda: all(t.error and "No one answered" in t.result for t in tools),
    }
    assert expected[path]()

"""Replay committed histories of the live paths with today's code:

- ``live_watched``: a run with a tool call, its events read by a subscriber while it ran;
- ``live_streamed_retry``: ``stream_tokens=True`` with a stream broken mid-way, so the history holds
  the token Signals of two attempts and the retry.

Re-record after an intended change with ``RECORD_HITL_HISTORIES=1 .venv/bin/python -m pytest -q tests/live/test_live_replay.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agent import Agent, ChatMessage
from runtime.plugin import AgentPlugin
from tests import tools as t
from tests.support.hitl_helpers import call, calls
from workflows.agent_workflow import AgentWorkflow

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
PATHS = ("live_watched", "live_streamed_retry")
PUBLISH_SIGNAL = "__temporal_workflow_stream_publish"


def history_file(path: str) -> Path:
    return HISTORIES / f"{path}.json"


async def _record(path: str, client, worker: str, scripted, model: str, run_id: str) -> None:
    if path == "live_watched":
        scripted.script(model, [calls(call("add", id="a1", a=2, b=3)), {"text": "5"}])
        agent = Agent(model=model, tools=[t.add])
    else:
        scripted.script(
            model,
            [
                {"text": "a reply that breaks off", "chunk_chars": 3, "break_after": 4},
                {"text": "the whole reply", "pace": 0.05},
            ],
        )
        agent = Agent(model=model, stream_tokens=True)
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    kinds = [e.kind async for e in handle.events()]
    assert kinds[-1] == "run_ended"
    await handle.result()
    history_file(path).write_text((await handle.workflow.fetch_history()).to_json())


@pytest.mark.recorder  # collected only with RECORD_HITL_HISTORIES=1 (see tests/conftest.py)
@pytest.mark.parametrize("path", PATHS)
async def test_record_history(path, client, worker, scripted, model, run_id):
    await asyncio.wait_for(_record(path, client, worker, scripted, model, run_id), timeout=120)


@pytest.mark.parametrize("path", PATHS)
async def test_replay_history(path):
    history = WorkflowHistory.from_json(path, history_file(path).read_text())
    replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    types = [e.event_type for e in history.events]
    assert types[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    signals = [
        e.workflow_execution_signaled_event_attributes.signal_name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]
    if path == "live_streamed_retry":
        assert signals.count(PUBLISH_SIGNAL) >= 2
        assert types.count(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) == 1  # one started event, attempt 2
    else:
        assert PUBLISH_SIGNAL not in signals

"""Replay committed histories of sub-agent runs (``Agent.as_tool``) with today's code, the parent's
and the children's, so a later change that breaks such runs fails CI:

- ``approval``: a parent whose step calls two sub-agents at once, one of which waits for a person
  (the parent's history: two child runs started and completed; the child's: its confirmation);
- ``cancel``: the parent cancelled while its child waits (the parent's history: a child cancel
  requested with the reason; the child's: its confirmation closed by the cancel).

Re-record after an intended change with
``RECORD_HITL_HISTORIES=1 .venv/bin/python -m pytest -q tests/workflows/test_sub_agent_replay.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agent import ChatMessage, get_run
from runtime.plugin import AgentPlugin
from tests.support.sub_agents import script_team, team, wait_child_pending
from workflows.agent_workflow import AgentWorkflow

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
#: ``(scenario, whose history)``: the parent's, and the child that waited for a person.
RUNS = [(scenario, role) for scenario in ("approval", "cancel") for role in ("parent", "child")]


def history_file(scenario: str, role: str) -> Path:
    return HISTORIES / f"sub_agent_{scenario}_{role}.json"


def recorded_run_id(scenario: str, role: str) -> str:
    """The run id the recorder gave the run (a child's id derives from its parent's, so replay needs it)."""
    parent = f"sub-agent-{scenario}"
    return parent if role == "parent" else f"{parent}/r1"


async def _record(scenario: str, client, worker: str, scripted, model: str) -> None:
    run_id = recorded_run_id(scenario, "parent")
    lead, _, _ = team(model)
    script_team(scripted, model)
    handle = await lead.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    child = get_run(client, f"{run_id}/r1")
    (pending,) = await wait_child_pending(child)
    await get_run(client, f"{run_id}/s1").result()
    if scenario == "approval":
        await child.confirm(pending.tool_call_id, approver="ann")
    else:
        await handle.cancel(reason="recorded cancel")
    await handle.result()
    await child.result()
    for role, run in (("parent", handle), ("child", child)):
        history = await run.workflow.fetch_history()
        history_file(scenario, role).write_text(history.to_json())


@pytest.mark.recorder  # collected only with RECORD_HITL_HISTORIES=1 (see tests/conftest.py)
@pytest.mark.parametrize("scenario", ["approval", "cancel"])
async def test_record_history(scenario, client, worker, scripted, model):
    await asyncio.wait_for(_record(scenario, client, worker, scripted, model), timeout=120)


@pytest.mark.parametrize(("scenario", "role"), RUNS)
async def test_replay_history(scenario, role):
    history = WorkflowHistory.from_json(recorded_run_id(scenario, role), history_file(scenario, role).read_text())
    replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    types = [e.event_type for e in history.events]
    assert types[-1] == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    started = history.events[0].workflow_execution_started_event_attributes
    if role == "parent":
        # What makes it a parent's history: two children started in one step, each answered.
        assert types.count(EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED) == 2
        assert types.count(EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED) == 2
        assert not started.HasField("parent_workflow_execution")
        if scenario == "cancel":
            assert EventType.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED in types
    else:
        assert started.HasField("parent_workflow_execution")
        assert started.parent_workflow_execution.workflow_id == recorded_run_id(scenario, "parent")
        if scenario == "cancel":
            assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED in types

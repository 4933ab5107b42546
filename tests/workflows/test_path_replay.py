"""Replay committed histories of the workflow paths added with the structure, parity and
no-hang work, with today's code, so a later change that breaks such runs fails CI:

- ``ask_once_in_order``: AskOncePolicy asks a tool's identical calls in order (one request), with
  the pending-calls memo and the per-request decision limits;
- ``hook_error``: a hook raises and the run fails with HookError;
- ``model_gave_up``: a model call that kept failing ends the run after model_retry_timeout;
- ``offload_in_workflow``: a hook that reads results sits before the offload hook, so the offload
  hook writes through the store activity in its turn;
- ``lifecycle``: a hook with warm_up/close registered at two points (one object);
- ``compaction_offload``: ``ToolResultOffloadCompactor`` moves older results to a store through
  the ``store_tool_result`` activity it shares with the offloading family;
- ``audit``: ``AuditHook`` at ``before_tool`` and ``after_tool`` (its note kept in the run's
  ``AuditLedger`` slot) writes each step's records through ``write_audit_records``.

Re-record after an intended change with ``RECORD_HITL_HISTORIES=1 .venv/bin/pytest tests/workflows/test_path_replay.py``.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowHistory
from temporalio.worker import Replayer

from agent import Agent, ChatMessage
from hooks import FunctionHook
from hooks.audit import AuditHook, FileSystemAuditStore
from hooks.compaction import ApproximateTokenCounter, CompactionHook, ToolResultOffloadCompactor
from hooks.human_in_the_loop import AskOncePolicy, ConfirmationHook, DurableConfirmationStrategy
from hooks.tool_result_offloading import FileSystemToolResultStore, OffloadOverChars, ToolResultOffloadHook
from runtime.plugin import AgentPlugin
from tests import offload_support
from tests import tools as t
from tests.support.hitl_helpers import call, calls, wait_pending
from workflows.agent_workflow import AgentWorkflow

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
PATHS = (
    "ask_once_in_order",
    "hook_error",
    "model_gave_up",
    "offload_in_workflow",
    "lifecycle",
    "compaction_offload",
    "audit",
)
#: The activity each of these paths must have scheduled (what makes the history that path's).
PATH_ACTIVITY = {
    "offload_in_workflow": "store_tool_result",
    "compaction_offload": "store_tool_result",
    "audit": "write_audit_records",
}


def history_file(path: str) -> Path:
    return HISTORIES / f"path_{path}.json"


async def _record(path: str, client, worker: str, scripted, model: str, run_id: str, tmp_path: Path) -> None:
    go = [ChatMessage.from_user("go")]
    if path == "ask_once_in_order":
        scripted.script(model, [calls(call("add", id="a1", a=1, b=2), call("add", id="a2", a=1, b=2)), {"text": "3"}])
        hook = ConfirmationHook({"add": DurableConfirmationStrategy(AskOncePolicy())})
        handle = await Agent(model=model, tools=[t.add], hooks={"before_tool": [hook]}).start(
            client, go, run_id=run_id, task_queue=worker
        )
        (first,) = await wait_pending(handle)
        await handle.confirm(first.tool_call_id, approver="ann")
        await handle.result()
    elif path == "hook_error":
        scripted.script(model, [{"text": "never"}])
        agent = Agent(model=model, tools=[t.echo], hooks={"before_llm": [FunctionHook(t.raise_value_error)]})
        handle = await agent.start(client, go, run_id=run_id, task_queue=worker)
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    elif path == "model_gave_up":
        scripted.script(model, [{"error": {"status": 503, "message": "overloaded"}, "times": 1000}])
        agent = Agent(model=model, tools=[t.echo], model_retry_timeout=timedelta(seconds=2))
        handle = await agent.start(client, go, run_id=run_id, task_queue=worker)
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    elif path == "offload_in_workflow":
        scripted.script(model, [calls(call("big_text", id="b1", size=5000)), {"text": "done"}])
        offload = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"big_text": OffloadOverChars(100)})
        agent = Agent(model=model, tools=[t.big_text], hooks={"after_tool": [offload_support.redact_secrets, offload]})
        handle = await agent.start(client, go, run_id=run_id, task_queue=worker)
        await handle.result()
    elif path == "compaction_offload":
        scripted.script(model, [*[calls(call("big_text", size=2000))] * 4, {"text": "done"}])
        compaction = CompactionHook(
            ToolResultOffloadCompactor(FileSystemToolResultStore(tmp_path), min_tokens=100, preview_chars=50),
            context_window=3000,
            token_counter=ApproximateTokenCounter(),
        )
        agent = Agent(model=model, tools=[t.big_text], hooks={"before_llm": [compaction]})
        handle = await agent.start(client, go, run_id=run_id, task_queue=worker)
        await handle.result()
    elif path == "audit":
        scripted.script(model, [calls(call("add", id="a1", a=1, b=2), call("echo", id="e1", text="x")), {"text": "3"}])
        audit = AuditHook(FileSystemAuditStore(tmp_path))
        agent = Agent(model=model, tools=[t.add, t.echo], hooks={"before_tool": [audit], "after_tool": [audit]})
        handle = await agent.start(client, go, run_id=run_id, task_queue=worker)
        await handle.result()
    else:
        scripted.script(model, [calls(call("echo", text="x")), {"text": "done"}])
        probe = t.LifecycleProbe()
        agent = Agent(
            model=model,
            tools=[t.echo],
            hooks={"before_llm": [probe], "after_run": [probe]},
            state_schema={"trace": {"type": list}},
        )
        handle = await agent.start(client, go, run_id=run_id, task_queue=worker)
        await handle.result()
    history = await handle.workflow.fetch_history()
    history_file(path).write_text(history.to_json())


@pytest.mark.recorder  # collected only with RECORD_HITL_HISTORIES=1 (see tests/conftest.py)
@pytest.mark.parametrize("path", PATHS)
async def test_record_history(path, client, worker, scripted, model, run_id, tmp_path):
    await asyncio.wait_for(_record(path, client, worker, scripted, model, run_id, tmp_path), timeout=120)


@pytest.mark.parametrize("path", PATHS)
async def test_replay_history(path):
    history = WorkflowHistory.from_json(f"path-{path}", history_file(path).read_text())
    replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    types = [e.event_type for e in history.events]
    last = types[-1]
    if path in ("hook_error", "model_gave_up"):
        assert last == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED
        failure = history.events[-1].workflow_execution_failed_event_attributes.failure
        assert (
            failure.application_failure_info.type
            == {"hook_error": "HookError", "model_gave_up": "ModelCallFailed"}[path]
        )
    else:
        assert last == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED
    if path in PATH_ACTIVITY:
        scheduled = [
            e.activity_task_scheduled_event_attributes.activity_type.name
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
        ]
        assert PATH_ACTIVITY[path] in scheduled

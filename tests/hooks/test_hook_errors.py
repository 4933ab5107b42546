"""A hook's exception ends the run at once and names the hook; non-determinism keeps the task retrying."""

from __future__ import annotations

import asyncio
import json

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ApplicationError

from agent import Agent, ChatMessage, get_run
from hooks import FunctionHook
from tests import tools as t
from tests.agent.cli.test_cli import agent_cli
from tests.support.polling import eventually


async def event_types(handle) -> list[int]:
    return [e.event_type for e in (await handle.workflow.fetch_history()).events]


async def test_a_raising_hook_fails_the_run_with_its_name_point_step_and_error(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "never reached"}])
    agent = Agent(model=model, tools=[t.echo], hooks={"before_llm": [FunctionHook(t.raise_value_error)]})
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)

    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=60)
    error = failed.value.cause
    assert isinstance(error, ApplicationError) and error.type == "HookError" and error.non_retryable
    assert error.message == (
        "Hook tests.tools.raise_value_error failed at before_llm (step 0): ValueError: boom from a hook"
    )
    assert error.details[0] == {
        "hook": "tests.tools.raise_value_error",
        "hook_point": "before_llm",
        "step": 0,
        "error_type": "ValueError",
    }
    events = await event_types(handle)
    assert EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED not in events  # failed on its first task, no retry
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED in events
    assert scripted.requests(model) == []  # the model was never called


async def test_non_determinism_in_a_hook_retries_the_task_and_the_run_waits(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "never reached"}])
    agent = Agent(model=model, tools=[t.echo], hooks={"before_llm": [FunctionHook(t.read_the_wall_clock)]})
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    try:
        await eventually(
            lambda: event_types(handle),
            lambda types: EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED in types,
            message="the workflow task never failed",
        )
        description = await handle.workflow.describe()
        assert description.status == WorkflowExecutionStatus.RUNNING
        health = await get_run(client, run_id).health()
        assert health.workflow_task_attempts >= 1
        assert "datetime.datetime.now" in (health.workflow_task_error or "")
    finally:
        await handle.workflow.terminate("test over")


async def test_agent_status_shows_the_failure(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "hello"}])
    agent = Agent(model=model, tools=[t.echo], hooks={"after_run": [FunctionHook(t.raise_value_error)]})
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    with pytest.raises(WorkflowFailureError):
        await asyncio.wait_for(handle.result(), timeout=60)
    health = await handle.health()
    expected = "Hook tests.tools.raise_value_error failed at after_run (step 1): ValueError: boom from a hook"
    assert health.status == "FAILED" and health.failure == expected

    shown = await agent_cli("status", run_id)
    assert shown.returncode == 1, shown.stderr  # a failed run
    assert json.loads(shown.stdout)["health"]["failure"] == expected
    assert f"agent: run {run_id} failed: {expected}" in shown.stderr


async def test_a_retried_model_call_shows_its_attempt_and_last_error(client, worker, scripted, model, run_id):
    scripted.script(model, [{"error": {"status": 503, "message": "overloaded"}, "times": 1000}])
    agent = Agent(model=model, tools=[t.echo])
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    try:
        health = await eventually(
            handle.health,
            lambda health: health.retrying_activities and health.retrying_activities[0].last_error,
            message="the model call was never shown as retrying with its last error",
        )
        (retry,) = health.retrying_activities
        assert retry.activity_type == "chat_completion" and retry.attempt >= 2
        assert "HTTP 503" in retry.last_error and "overloaded" in retry.last_error
        assert health.stuck
        shown = await agent_cli("status", run_id)
        assert f"agent: run {run_id}: chat_completion is being retried (attempt" in shown.stderr
    finally:
        await handle.workflow.terminate("test over")

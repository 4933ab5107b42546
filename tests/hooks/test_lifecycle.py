"""Hooks' warm_up runs once per workflow run before the first point (again after continue-as-new);
close runs at the end, also when the run fails, as Haystack's hook lifecycle promises."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import WorkflowFailureError

from agent import Agent, ChatMessage
from tests import tools as t

TRACE = {"trace": {"type": list}}


async def test_warm_up_once_per_workflow_run_and_again_after_continue_as_new(client, worker, scripted, model, run_id):
    steps = 24
    scripted.script(
        model,
        [{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}], "times": steps - 1}, {"text": "done"}],
    )
    probe = t.LifecycleProbe()
    agent = Agent(
        model=model,
        tools=[t.echo],
        hooks={"before_llm": [probe], "after_run": [probe]},
        state_schema=TRACE,
        continue_as_new_after_events=100,
        max_agent_steps=steps + 1,
    )
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await asyncio.wait_for(handle.result(), timeout=120)
    assert result.continuations >= 1
    # one object at two points stays one object (as in Haystack), warmed up once in every workflow run of the chain
    assert set(result.state["trace"]) == {"warmed=1"} and len(result.state["trace"]) == steps + 1


async def test_close_runs_at_the_end_and_its_failure_is_reported(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "done"}])
    agent = Agent(
        model=model, tools=[t.echo], hooks={"before_llm": [t.LifecycleProbe(fail_on_close=True)]}, state_schema=TRACE
    )
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=60)
    assert failed.value.cause.message == (
        "Hook tests.tools.LifecycleProbe failed at close (step 1): RuntimeError: closing failed"
    )

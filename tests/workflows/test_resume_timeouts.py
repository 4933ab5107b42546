"""Runs resume within seconds: the workflow task timeout every run (and each continuation) gets."""

from __future__ import annotations

from agent import Agent, ChatMessage
from core.settings import DEFAULT_WORKFLOW_TASK_TIMEOUT
from tests import tools as t


async def test_runs_and_their_continuations_get_the_short_workflow_task_timeout(
    client, worker, scripted, model, run_id
):
    steps = 30
    scripted.script(
        model,
        [{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}], "times": steps - 1}, {"text": "done"}],
    )
    agent = Agent(model=model, tools=[t.echo], continue_as_new_after_events=100, max_agent_steps=steps + 1)
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await handle.result()
    assert result.continuations >= 1  # the last run of the chain is a continuation
    description = await handle.workflow.describe()
    timeout = description.raw_description.execution_config.default_workflow_task_timeout
    assert timeout.ToTimedelta() == DEFAULT_WORKFLOW_TASK_TIMEOUT
    first = client.get_workflow_handle(run_id, run_id=description.raw_description.workflow_execution_info.first_run_id)
    first_timeout = (await first.describe()).raw_description.execution_config.default_workflow_task_timeout
    assert first_timeout.ToTimedelta() == DEFAULT_WORKFLOW_TASK_TIMEOUT

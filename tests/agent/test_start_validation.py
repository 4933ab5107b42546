"""``Agent.start`` refuses bad input before anything reaches the server."""

from __future__ import annotations

import pytest

from agent import Agent, ChatMessage


async def test_hook_context_must_be_json(client):
    agent = Agent(model="m")
    with pytest.raises(ValueError, match="JSON-serialisable"):
        await agent.start(client, [ChatMessage.from_user("x")], run_id="never", hook_context={"client": object()})
    with pytest.raises(ValueError, match="not in the agent's state_schema"):
        await agent.start(client, [ChatMessage.from_user("x")], run_id="never", state={"nope": 1})


async def test_a_run_may_use_some_of_the_tools_and_its_own_model_settings(client, worker, scripted, model, run_id):
    from tests import tools as t

    scripted.script(model, [{"text": "hi"}])
    agent = Agent(model=model, tools=[t.add, t.echo], model_settings={"temperature": 0.5})
    with pytest.raises(ValueError, match="tools the agent does not have: \\['nope'\\]"):
        await agent.start(client, [ChatMessage.from_user("x")], run_id=run_id, task_queue=worker, tools=["nope"])
    handle = await agent.start(
        client,
        [ChatMessage.from_user("x")],
        run_id=run_id,
        task_queue=worker,
        tools=["echo"],
        generation_kwargs={"temperature": 0.0, "max_tokens": 5},
    )
    result = await handle.result()
    (request,) = scripted.requests(model)
    assert [tool["function"]["name"] for tool in request["tools"]] == ["echo"]
    assert request["temperature"] == 0.0 and request["max_tokens"] == 5
    assert result.tool_call_counts == {"echo": 0}

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

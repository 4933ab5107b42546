"""The Haystack reference's examples 1-4 (docs/from-haystack.md) run on the durable agent."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from agent import Agent, ChatMessage
from tests.support import reference_examples as ex
from worker import create_worker


@pytest.fixture
async def queue(client):
    name = f"reference-{uuid.uuid4().hex[:8]}"
    async with create_worker(client, tools=ex.TOOLS, task_queue=name, extra_activities=[ex.fetch_memories]):
        yield name


def calls(name: str, **arguments) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def run(client, queue, agent, run_id, text="go", **start):
    handle = await agent.start(client, [ChatMessage.from_user(text)], run_id=run_id, task_queue=queue, **start)
    return await asyncio.wait_for(handle.result(), timeout=60)


async def test_1_require_save_keeps_the_run_going_until_save(client, queue, scripted, model, run_id):
    scripted.script(model, [{"text": "sunny"}, calls("save", content="sunny"), {"text": "saved"}])
    agent = Agent(model=model, tools=[ex.weather_tool, ex.save], hooks={"on_exit": [ex.require_save]})
    result = await run(client, queue, agent, run_id)
    assert result.last_message.text == "saved"
    assert result.tool_call_counts == {"weather_tool": 0, "save": 1}
    assert "You must call `save` before finishing." in [m.text for m in result.messages]


async def test_2_three_hooks_at_three_points(client, queue, scripted, model, run_id):
    scripted.script(model, [{"text": "no search"}, calls("search", query="fusion"), {"text": "fusion news"}])
    agent = Agent(
        model=model,
        tools=[ex.search],
        hooks={"before_llm": [ex.build_context], "before_tool": [ex.audit_tool_calls], "on_exit": [ex.require_search]},
    )
    result = await run(client, queue, agent, run_id, "What are the latest developments in fusion energy?")
    assert result.last_message.text == "fusion news" and result.tool_call_counts == {"search": 1}
    first = result.messages[0]
    assert first.role.value == "system" and first.text.startswith("You are a research assistant. The current time is")
    assert scripted.requests(model)[0]["tools"][0]["function"]["parameters"]["properties"]["query"]["description"] == (
        "The search query"
    )


async def test_3_a_hook_that_grades_with_a_model(client, queue, scripted, model, run_id):
    judge = f"{model}-judge"
    scripted.script(model, [{"text": "half an answer"}, {"text": "the whole answer"}])
    scripted.script(judge, [{"text": "FAIL"}, {"text": "PASS"}])
    agent = Agent(model=model, hooks={"on_exit": [ex.GradeFinalAnswer(judge)]})
    result = await run(client, queue, agent, run_id)
    assert result.last_message.text == "the whole answer"
    assert len(scripted.requests(judge)) == 2
    assert result.hook_token_usage["total_tokens"] > 0  # the judge's tokens are counted apart


async def test_4_a_hook_that_awaits_its_own_activity(client, queue, scripted, model, run_id):
    scripted.script(model, [{"text": "ok"}])
    agent = Agent(model=model, hooks={"before_llm": [ex.recall_memories]})
    result = await run(client, queue, agent, run_id, hook_context={"user": "ann"})
    assert result.last_message.text == "ok"
    sent = [m["content"] for m in scripted.requests(model)[0]["messages"]]
    assert "What you know about the user: ann prefers short answers." in sent

"""Model errors are retried or fail the run clearly; bad tool calls become tool-error messages."""

from __future__ import annotations

import asyncio
import socket
import time
from datetime import timedelta

import openai
import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.model import ModelActivities, ModelCallInput
from agent import Agent, ChatMessage
from tests import tools as t


async def start(client, worker, run_id, agent):
    return await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)


async def test_429_then_success_completes(client, worker, scripted, model, run_id):
    scripted.script(model, [{"error": {"status": 429, "retry_after": 0.2}}, {"error": {"status": 503}}, {"text": "ok"}])
    result = await (await start(client, worker, run_id, Agent(model=model, tools=[t.add]))).result()
    assert result.last_message.text == "ok"
    assert len(scripted.requests(model)) == 3


async def test_400_fails_run_with_clear_message(client, worker, scripted, model, run_id):
    scripted.script(model, [{"error": {"status": 400, "message": "model does not support tools"}}, {"text": "never"}])
    handle = await start(client, worker, run_id, Agent(model=model, tools=[t.add]))
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    chain, cause = [], caught.value.cause
    while cause is not None:
        chain.append(cause)
        cause = getattr(cause, "cause", None)
    ours = [c for c in chain if getattr(c, "type", None) == "ModelClientError"]
    assert ours and ours[0].non_retryable
    assert "HTTP 400" in str(ours[0]) and "model does not support tools" in str(ours[0])
    assert len(scripted.requests(model)) == 1  # not retried


async def test_bad_tool_calls_become_tool_errors_and_run_continues(client, worker, scripted, model, run_id):
    scripted.script(
        model,
        [
            {
                "tool_calls": [
                    {"name": "add", "arguments": '{"a": 1, "b":'},  # malformed JSON
                    {"name": "no_such_tool", "arguments": {}},
                    {"name": "explode", "arguments": {"reason": "disk full"}},
                    {"name": "add", "arguments": {"a": "x", "b": 2}},  # fails the schema
                    {"name": "add", "arguments": {"a": 2, "b": 2}},
                ]
            },
            {"text": "recovered"},
        ],
    )
    agent = Agent(model=model, tools=[t.add, t.explode])
    result = await (await start(client, worker, run_id, agent)).result()
    assert result.last_message.text == "recovered"
    results = [m.tool_call_result for m in result.messages if m.role.value == "tool"]
    assert [r.error for r in results] == [True, True, True, True, False]
    assert "not a valid JSON object" in results[0].result
    assert "Unknown tool 'no_such_tool'" in results[1].result
    assert "boom: disk full" in results[2].result
    assert "Invalid arguments for tool 'add'" in results[3].result
    assert results[4].result == "4"
    # the model saw every error on the next call
    tool_messages = [m for m in scripted.requests(model)[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 5


async def test_a_model_that_keeps_failing_ends_the_run_after_the_retry_ceiling(client, worker, scripted, model, run_id):
    scripted.script(model, [{"error": {"status": 503, "message": "overloaded"}, "times": 1000}])
    agent = Agent(model=model, tools=[t.add], model_retry_timeout=timedelta(seconds=3))
    handle = await start(client, worker, run_id, agent)
    with pytest.raises(WorkflowFailureError) as caught:
        await asyncio.wait_for(handle.result(), timeout=60)
    error = caught.value.cause
    assert error.type == "ModelCallFailed" and error.non_retryable
    assert error.message.startswith("The model call was given up: it kept failing for 0:00:03 (model_retry_timeout).")
    assert "HTTP 503" in error.message and "overloaded" in error.message
    assert 2 <= len(scripted.requests(model)) < 1000  # retried, then given up


async def test_a_body_that_is_not_a_completion_is_named_clearly(client, worker, scripted, model, run_id):
    page = "<html><body>502 Bad Gateway</body></html>"
    scripted.script(model, [{"raw": {"status": 200, "content_type": "text/html", "body": page}, "times": 1000}])
    agent = Agent(model=model, tools=[t.add], model_retry_timeout=timedelta(seconds=2))
    handle = await start(client, worker, run_id, agent)
    with pytest.raises(WorkflowFailureError) as caught:
        await asyncio.wait_for(handle.result(), timeout=60)
    message = caught.value.cause.message
    assert "The model endpoint answered HTTP 200 with text/html that is not a chat completion" in message
    assert "<html><body>502 Bad Gateway" in message
    assert "'str' object has no attribute" not in message


@pytest.mark.parametrize(
    ("status", "said", "check"),
    [
        (401, "Incorrect API key provided: sk-fake.", "check OPENAI_API_KEY, and OPENAI_BASE_URL"),
        (403, "Project does not have access to model", "check OPENAI_API_KEY, and OPENAI_BASE_URL"),
        (404, "The model does not exist", "check the model name, and OPENAI_BASE_URL"),
    ],
)
async def test_a_refused_key_or_unknown_model_fails_the_run_at_once_naming_endpoint_model_and_remedy(
    client, worker, scripted, model, run_id, status, said, check
):
    scripted.script(model, [{"error": {"status": status, "message": said}, "times": 100}])
    started = time.monotonic()
    handle = await start(client, worker, run_id, Agent(model=model, tools=[t.add]))
    with pytest.raises(WorkflowFailureError) as caught:
        await asyncio.wait_for(handle.result(), timeout=30)
    elapsed = time.monotonic() - started
    error = caught.value.cause
    assert error.type == "ModelCallFailed" and error.non_retryable
    assert error.message.startswith("The model call was given up: retrying cannot fix it. Last error: ")
    assert f"The model endpoint {scripted.base_url} (from OPENAI_BASE_URL) answered HTTP {status}" in error.message
    assert f"for model {model!r}: {said}" in error.message
    assert check in error.message and "source` the env.sh" in error.message
    assert len(scripted.requests(model)) == 1
    events = (await handle.workflow.fetch_history()).events
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in events
        if e.HasField("activity_task_started_event_attributes")
    ]
    assert attempts == [1]
    assert elapsed < 10  # one attempt, no backoff (a retry would wait 0.5 s, then 1 s, ... for 30 min)


async def test_an_endpoint_that_cannot_be_reached_stays_retryable_and_is_named():
    with socket.socket() as probe:  # a loopback port nothing listens on: connections are refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/v1"
    activities = ModelActivities(
        client=openai.AsyncOpenAI(api_key="k", base_url=base_url, max_retries=0), conversations=None
    )
    request = ModelCallInput(model="gpt-x", messages=[ChatMessage.from_user("hi")])
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(activities.chat_completion, request)
    assert not caught.value.non_retryable and caught.value.type == "ModelTransientError"
    assert f"Could not reach the model endpoint {base_url} for model 'gpt-x': Connection error." in caught.value.message

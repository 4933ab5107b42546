"""Agent(stream_tokens=True) on the real dev server with the scripted model streaming: the reply
recorded in history is the one a non-streamed call records (a differential run), the text arrives
as token events, and a stream broken mid-way is retried as a whole behind a model_retry marker."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.api.enums.v1 import EventType

from activities.model import ModelCallOutput
from agent import Agent, ChatMessage, ReplyText, RunEvent
from tests import tools as t
from tests.support.hitl_helpers import call, calls

LONG_TEXT = "The quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps over the lazy dog."


async def model_outputs(client, handle) -> list[ModelCallOutput]:
    """The chat_completion results as recorded in the run's history."""
    converter = client.data_converter
    outputs = []
    async for event in handle.workflow.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            payloads = event.activity_task_completed_event_attributes.result.payloads
            value = (await converter.decode(payloads, [object]))[0]
            if isinstance(value, dict) and "message" in value and "usage" in value:
                outputs.append(ModelCallOutput.model_validate(value))
    return outputs


async def events_of(handle) -> list[RunEvent]:
    return [e async for e in handle.events()]


def script(*, text_pace: dict) -> list[dict]:
    return [
        {**calls(call("add", id="a1", a=2, b=3)), "text": "Adding.", **text_pace},
        {"text": LONG_TEXT, **text_pace},
        {"text": "capped", "finish_reason": "length", **text_pace},
    ]


async def run_once(client, worker, scripted, model, run_id, stream_tokens: bool):
    scripted.script(model, script(text_pace={"chunk_chars": 5}))
    agent = Agent(model=model, tools=[t.add], stream_tokens=stream_tokens, max_agent_steps=2)
    handle = await agent.start(client, [ChatMessage.from_user("add")], run_id=run_id, task_queue=worker)
    await handle.result()
    return handle


async def test_the_streamed_reply_recorded_in_history_is_the_non_streamed_one(client, worker, scripted, model, run_id):
    plain = await run_once(client, worker, scripted, model, run_id + "-plain", stream_tokens=False)
    assert [r.get("stream", False) for r in scripted.requests(model)] == [False, False]
    streamed = await run_once(client, worker, scripted, model, run_id + "-streamed", stream_tokens=True)

    plain_outputs, streamed_outputs = await model_outputs(client, plain), await model_outputs(client, streamed)
    assert len(plain_outputs) == len(streamed_outputs) == 2
    for a, b in zip(plain_outputs, streamed_outputs, strict=True):
        assert a.message == b.message  # text, tool calls, meta (model, finish reason, usage)
        assert a.usage == b.usage and a.usage["total_tokens"] > 0
    assert streamed_outputs[0].message.tool_calls[0].arguments == {"a": 2, "b": 3}
    assert streamed_outputs[1].message.text == LONG_TEXT
    requests = scripted.requests(model)
    assert [r.get("stream", False) for r in requests] == [True, True]
    assert requests[1]["stream_options"] == {"include_usage": True}

    plain_kinds = [e.kind for e in await events_of(plain)]
    streamed_events = await events_of(streamed)
    assert "token" not in plain_kinds
    tokens = [e for e in streamed_events if e.kind == "token"]
    assert "".join(e.data["text"] for e in tokens if e.step == 1) == LONG_TEXT
    assert "".join(e.data["text"] for e in tokens if e.step == 0) == "Adding."
    assert {e.data["attempt"] for e in tokens} == {1}
    kinds = [e.kind for e in streamed_events]
    # Every token of a step comes before that step's model_reply.
    assert kinds.index("token") > kinds.index("step_started") and kinds[kinds.index("model_reply") - 1] == "token"
    assert [k for k in kinds if k != "token"] == plain_kinds


async def test_a_stream_broken_mid_way_is_retried_as_a_whole_behind_a_model_retry_marker(
    client, worker, scripted, model, run_id
):
    first_attempt = "This answer breaks off half way and must not be mixed with the next one."
    scripted.script(
        model,
        [
            {"text": first_attempt, "chunk_chars": 4, "break_after": 8},
            {"text": LONG_TEXT, "chunk_chars": 4},
        ],
    )
    agent = Agent(model=model, stream_tokens=True)
    handle = await agent.start(client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=worker)
    result = await handle.result()
    events = await asyncio.wait_for(events_of(handle), timeout=60)

    assert result.last_message.text == LONG_TEXT
    kinds = [e.kind for e in events]
    retry = kinds.index("model_retry")
    assert events[retry].data == {"attempt": 2}
    before = "".join(e.data["text"] for e in events[:retry] if e.kind == "token")
    after = [e for e in events[retry:] if e.kind == "token"]
    assert before and first_attempt.startswith(before) and len(before) < len(first_attempt)
    assert "".join(e.data["text"] for e in after) == LONG_TEXT and {e.data["attempt"] for e in after} == {2}
    folded = ReplyText()
    for event in events:
        folded.add(event)
    assert folded.text(1, 0) == LONG_TEXT
    assert len(scripted.requests(model)) == 2


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_stream_tokens_must_be_a_bool(value):
    with pytest.raises(TypeError, match="stream_tokens must be True or False"):
        Agent(model="m", stream_tokens=value)


def test_stream_tokens_survives_to_dict_and_from_dict():
    agent = Agent(model="m", stream_tokens=True)
    assert agent.to_dict()["stream_tokens"] is True
    assert Agent.from_dict(agent.to_dict()).stream_tokens is True
    assert Agent.from_dict({**agent.to_dict(), "stream_tokens": False}).stream_tokens is False

"""Offloading keeps its promise during an S3 outage: a result over the policy's threshold is never
kept in the conversation because the store is down. The write is retried until the store is back;
after the hook's write_deadline the result becomes an error message instead.

The outage is a bucket that does not exist yet (the store answers NoSuchBucket, as a down store
answers errors); creating it ends the outage without disturbing the session's S3 server. What
reached the store is read from the S3 server's own request log (moto's), so the tests see every
write that failed during the outage and the one that succeeded after it."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import timedelta

import pytest

from agent import Agent, ChatMessage
from core.s3 import s3_client
from hooks.tool_result_offloading import OFFLOADED_META_KEY, OffloadOverChars, S3ToolResultStore, ToolResultOffloadHook
from tests import tools as t
from tests.support.polling import eventually
from tests.support.side_effects import worker_environment

SIZE = 5_000
#: moto's request log colours the lines of failed requests.
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def object_writes(stack, bucket: str) -> list[int]:
    """HTTP statuses of the object PUTs into ``bucket`` that moto's server logged, oldest first
    (404 while the bucket is missing); the bucket's own creation is not an object write."""
    log = ANSI_COLOUR.sub("", stack.s3.log_file.read_text())
    write = re.compile(rf'"PUT /{re.escape(bucket)}/\S+ HTTP/[0-9.]+" (\d{{3}})')
    return [int(m.group(1)) for m in write.finditer(log)]


def offloading_agent(model: str, bucket: str, policy, deadline: timedelta) -> Agent:
    hook = ToolResultOffloadHook(S3ToolResultStore(bucket), {"big_text": policy}, write_deadline=deadline)
    return Agent(model=model, tools=[t.big_text], hooks={"after_tool": [hook]})


def script(scripted, model) -> None:
    scripted.script(
        model, [{"tool_calls": [{"name": "big_text", "arguments": {"size": SIZE}, "id": "c1"}]}, {"text": "done"}]
    )


@pytest.mark.parametrize(
    "policy", [OffloadOverChars(100), t.OffloadLongResultsInTheWorkflow()], ids=["in-tool-activity", "in-workflow"]
)
async def test_a_write_during_an_outage_waits_for_the_store(client, worker, scripted, model, run_id, stack, policy):
    bucket = f"outage-{uuid.uuid4().hex[:8]}"
    script(scripted, model)
    agent = offloading_agent(model, bucket, policy, timedelta(minutes=5))
    with worker_environment(AGENT_S3_BUCKETS=bucket):  # the workers may write to it (core/side_effects.py)
        await run_through_outage(client, worker, run_id, stack, bucket, agent)


async def run_through_outage(client, worker, run_id, stack, bucket, agent) -> None:
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    first_write = await eventually(
        lambda: object_writes(stack, bucket), timeout=60, message="the run never tried to write its result"
    )
    assert first_write[0] == 404, f"the outage hit no write: {first_write}"
    await asyncio.to_thread(s3_client().create_bucket, Bucket=bucket)
    result = await asyncio.wait_for(handle.result(), timeout=60)

    writes = object_writes(stack, bucket)
    assert writes[-1] == 200 and set(writes[:-1]) == {404}, writes  # failed during the outage, then retried

    (tool_message,) = [m for m in result.messages if m.tool_call_result is not None]
    (reference,) = tool_message.meta[OFFLOADED_META_KEY]
    assert tool_message.tool_call_result.result.startswith(f"Tool result offloaded: {SIZE} characters at '{reference}'")
    stored = await asyncio.to_thread(s3_client().get_object, Bucket=bucket, Key=reference.split("/", 3)[3])
    assert len(stored["Body"].read()) == SIZE
    assert result.last_message.text == "done"


@pytest.mark.parametrize(
    "policy", [OffloadOverChars(100), t.OffloadLongResultsInTheWorkflow()], ids=["in-tool-activity", "in-workflow"]
)
async def test_after_the_deadline_the_result_becomes_an_error_not_inline(
    client, worker, scripted, model, run_id, stack, policy
):
    bucket = f"never-{uuid.uuid4().hex[:8]}"
    script(scripted, model)
    agent = offloading_agent(model, bucket, policy, timedelta(seconds=2))
    with worker_environment(AGENT_S3_BUCKETS=bucket):
        handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
        result = await asyncio.wait_for(handle.result(), timeout=60)
    writes = object_writes(stack, bucket)
    assert writes and set(writes) == {404}, writes  # it tried, and every try hit the outage

    (tool_message,) = [m for m in result.messages if m.tool_call_result is not None]
    text = tool_message.tool_call_result.result
    assert tool_message.tool_call_result.error
    assert text.startswith(f"The result of 'big_text' ({SIZE} characters) could not be stored")
    assert len(text) < 1_000 and t.big_text.function(SIZE)[:200] not in text  # not kept inline
    model_saw = scripted.requests(model)[1]["messages"][-1]["content"]
    assert model_saw == text

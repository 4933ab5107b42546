"""Encryption at rest on the real dev server and moto S3 (AGENT_PAYLOAD_KEYS, core/codec.py).

- A run's history, read by a plain Temporal client (no codec), holds none of the conversation's
  text, and neither do the objects it left in S3 (external storage, conversation segments).
- A worker without the run's key fails the workflow task (not the run) naming the key id; a
  worker with the key then finishes the run. A client without the key is refused the result.
- A run parked on an approval under key A finishes after worker and client move to ``B,A``.

Each test connects its own clients (the converter is built from the environment at connect) and
runs its own workers on its own task queue; keys are generated per test.
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import asynccontextmanager

import pytest
from temporalio.api.history.v1 import History
from temporalio.client import Client

from agent import Agent, ChatMessage, connect
from agent.client import get_run
from agent.run_history import read_history
from core.codec import MissingPayloadKeyError, new_payload_key
from core.s3 import payloads_bucket, s3_client
from runtime.worker import create_worker
from tests import tools as t
from tests.support.hitl_helpers import ask_all, call, calls, wait_pending
from tests.support.polling import eventually


def key(key_id: str) -> str:
    return f"{key_id}:{new_payload_key()}"


@asynccontextmanager
async def keyed(stack, monkeypatch: pytest.MonkeyPatch, keys: str | None, task_queue: str | None = None):
    """A client (and, given a task queue, a worker on it) of a process whose AGENT_PAYLOAD_KEYS is ``keys``."""
    if keys is None:
        monkeypatch.delenv("AGENT_PAYLOAD_KEYS", raising=False)
    else:
        monkeypatch.setenv("AGENT_PAYLOAD_KEYS", keys)
    client = await connect(stack.temporal.address, stack.temporal.namespace)
    if task_queue is None:
        yield client
        return
    async with create_worker(client, tools=[t.add, t.echo], task_queue=task_queue):
        yield client


def bucket_objects() -> dict[str, str]:
    listing = s3_client().get_paginator("list_objects_v2").paginate(Bucket=payloads_bucket())
    return {o["Key"]: o["ETag"] for page in listing for o in page.get("Contents", [])}


async def test_history_and_s3_objects_hold_no_plaintext(stack, scripted, model, run_id, monkeypatch):
    secret = f"SECRET-{uuid.uuid4().hex}"
    queue = f"enc-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("TEMPORAL_PAYLOAD_THRESHOLD_BYTES", "4096")  # the long prompt goes to S3
    scripted.script(model, [calls(call("echo", text=f"tool {secret}")), {"text": f"answer {secret}"}])
    before = await asyncio.to_thread(bucket_objects)
    prompt = f"user {secret} " + "padding " * 1000
    async with keyed(stack, monkeypatch, key("k1"), queue) as client:
        agent = Agent(model=model, tools=[t.echo])
        handle = await agent.start(client, [ChatMessage.from_user(prompt)], run_id=run_id, task_queue=queue)
        result = await handle.result()
        assert secret in result.last_message.text  # the run saw and said the text
        decoded = [item async for item in read_history(handle.workflow, client.data_converter)]
        assert any(item.tool_output and secret in str(item.tool_output.result) for item in decoded)

    plain = await Client.connect(stack.temporal.address, namespace=stack.temporal.namespace)  # no codec
    history = await plain.get_workflow_handle(run_id).fetch_history()
    raw = history.to_json()
    assert secret not in raw and secret.encode() not in History(events=history.events).SerializeToString()
    assert '"binary/encrypted"' in raw or "YmluYXJ5L2VuY3J5cHRlZA" in raw  # payloads are there, encrypted
    summaries = [e.user_metadata.summary for e in history.events if e.user_metadata.HasField("summary")]
    assert summaries and all(s.metadata["encoding"] == b"binary/encrypted" for s in summaries)  # activity summaries

    after = await asyncio.to_thread(bucket_objects)
    new = sorted(k for k in after if before.get(k) != after[k])
    assert any(k.startswith("conversations/") for k in new), new
    assert any(k.startswith("v0/") for k in new), new  # the prompt, over the threshold
    for object_key in new:
        body = await asyncio.to_thread(
            lambda k=object_key: s3_client().get_object(Bucket=payloads_bucket(), Key=k)["Body"].read()
        )
        assert secret.encode() not in body and b"padding" not in body, object_key


async def test_a_worker_without_the_key_stalls_the_run_until_one_with_it_finishes_it(
    stack, scripted, model, run_id, monkeypatch
):
    queue = f"enc-{uuid.uuid4().hex[:8]}"
    new, old = key("new"), key("old")
    scripted.script(model, [{"text": "done"}])
    async with keyed(stack, monkeypatch, new) as starter:
        handle = await Agent(model=model).start(starter, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=queue)

    async with keyed(stack, monkeypatch, old, queue):  # a worker that only has the old key
        async with keyed(stack, monkeypatch, f"{new},{old}") as operator:
            run = get_run(operator, run_id)
            health = await eventually(
                run.health,
                lambda h: h.workflow_task_attempts > 1 and h.workflow_task_error,
                message="the workflow task never failed",
            )
    assert health.status == "RUNNING"  # the task fails, not the run
    assert "encrypted under key id 'new'" in health.workflow_task_error
    assert "it has 'old'" in health.workflow_task_error and "AGENT_PAYLOAD_KEYS" in health.workflow_task_error
    assert health.failing_workflow_task.fix.startswith(f"give the workers of task queue {queue} the key")
    assert scripted.requests(model) == []

    async with keyed(stack, monkeypatch, f"{new},{old}", queue) as client:  # the key deployed
        result = await get_run(client, run_id).result()
    assert result.last_message.text == "done"

    async with keyed(stack, monkeypatch, old) as without:
        with pytest.raises(MissingPayloadKeyError, match="key id 'new'"):
            await get_run(without, run_id).result()
    del handle


async def test_a_run_parked_under_key_a_finishes_after_rotating_to_b_a(stack, scripted, model, run_id, monkeypatch):
    queue = f"enc-{uuid.uuid4().hex[:8]}"
    a, b = key("a"), key("b")
    scripted.script(model, [calls(call("add", a=2, b=3)), {"text": "five"}])
    agent = Agent(model=model, tools=[t.add], hooks={"before_tool": [ask_all()]})
    async with keyed(stack, monkeypatch, a, queue) as client_a:
        handle = await agent.start(client_a, [ChatMessage.from_user("2+3?")], run_id=run_id, task_queue=queue)
        (pending,) = await wait_pending(handle)
    plain = await Client.connect(stack.temporal.address, namespace=stack.temporal.namespace)  # no codec
    memo = (await plain.get_workflow_handle(run_id).describe()).raw_description.workflow_execution_info.memo
    assert memo.fields and all(p.metadata["encryption-key-id"] == b"a" for p in memo.fields.values())

    async with keyed(stack, monkeypatch, f"{b},{a}", queue) as client_ba:  # new worker and client
        run = get_run(client_ba, run_id)
        (still,) = await run.pending_confirmations()  # a Query the new worker answers from A's history
        assert still.tool_call_id == pending.tool_call_id
        await run.confirm(pending.tool_call_id, approver="ann")
        result = await run.result()
    assert result.last_message.text == "five"
    assert [m.tool_call_result.result for m in result.messages if m.tool_call_result] == ["5"]

    key_ids = {
        p.metadata["encryption-key-id"]
        for event in (await plain.get_workflow_handle(run_id).fetch_history()).events
        for p in _payloads(event)
    }
    assert key_ids == {b"a", b"b"}  # written under A before the rotation, under B after


def _payloads(event) -> list:
    """The payloads of the events these tests look at (inputs, results, Updates)."""
    found = []
    for field in (
        "workflow_execution_started_event_attributes",
        "activity_task_scheduled_event_attributes",
        "activity_task_completed_event_attributes",
        "workflow_execution_update_accepted_event_attributes",
        "workflow_execution_completed_event_attributes",
    ):
        if event.HasField(field):
            attrs = getattr(event, field)
            if field == "workflow_execution_update_accepted_event_attributes":
                found += attrs.accepted_request.input.args.payloads
            elif hasattr(attrs, "input"):
                found += attrs.input.payloads
            elif hasattr(attrs, "result"):
                found += attrs.result.payloads
    return [p for p in found if "encryption-key-id" in p.metadata]

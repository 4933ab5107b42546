"""after_tool hooks see tool results in registration order, offloading included, as in Haystack.

A redaction hook registered before ToolResultOffloadHook must see the raw result and the store
must only ever get the redacted text, so the offload hook then decides and writes in its own turn
(the store_tool_result activity). With nothing that reads results before it, the tool activity
writes the result itself, as before. Real dev server, moto S3, the scripted model.
"""

from __future__ import annotations

import asyncio
import os

from temporalio.client import WorkflowHandle

from activities.result_store import STORE_TOOL_RESULT_ACTIVITY
from agent import Agent, ChatMessage
from core.wire import INVOKE_TOOL_ACTIVITY
from hooks.tool_result_offloading import OFFLOADED_META_KEY, OffloadOverChars, S3ToolResultStore, ToolResultOffloadHook
from tests import tools as t
from tests.offload_support import REDACTED, SECRET, IgnoresToolResults, redact_secrets

BIG = f"token={SECRET}; " + "x" * 200  # over the threshold: offloaded
SMALL = f"short {SECRET}"  # under it: stays inline


def offload_hook() -> ToolResultOffloadHook:
    store = S3ToolResultStore(os.environ["TOOL_RESULTS_BUCKET"])
    return ToolResultOffloadHook(store, {"echo": OffloadOverChars(50)}, preview_chars=30)


async def run(client, queue, scripted, model, run_id, after_tool) -> tuple:
    scripted.script(
        model,
        [
            {
                "tool_calls": [
                    {"name": "echo", "arguments": {"text": BIG}, "id": "big"},
                    {"name": "echo", "arguments": {"text": SMALL}, "id": "small"},
                ]
            },
            {"text": "done"},
        ],
    )
    agent = Agent(model=model, tools=[t.echo], hooks={"after_tool": after_tool})
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=queue)
    result = await asyncio.wait_for(handle.result(), timeout=60)
    assert result.exit_reason == "text" and result.last_message.text == "done"
    big, small = (m for m in result.messages if m.tool_call_result is not None)
    return result, big, small, await scheduled_activities(handle.workflow)


async def scheduled_activities(handle: WorkflowHandle) -> list[str]:
    history = await handle.fetch_history()
    return [
        event.activity_task_scheduled_event_attributes.activity_type.name
        for event in history.events
        if event.HasField("activity_task_scheduled_event_attributes")
    ]


async def stored(run_id: str, reference: str) -> str:
    store = S3ToolResultStore(os.environ["TOOL_RESULTS_BUCKET"]).for_run(run_id)
    return await asyncio.to_thread(store.read, reference)


async def test_a_redaction_hook_before_the_offload_hook_redacts_what_is_stored(
    client, worker, scripted, model, run_id, stack
):
    result, big, small, activities = await run(
        client, worker, scripted, model, run_id, [redact_secrets, offload_hook()]
    )
    redacted = BIG.replace(SECRET, REDACTED)

    # The offload hook decided and wrote in its turn, after the redaction hook.
    assert activities.count(INVOKE_TOOL_ACTIVITY) == 2 and activities.count(STORE_TOOL_RESULT_ACTIVITY) == 1
    (reference,) = big.meta[OFFLOADED_META_KEY]
    assert await stored(run_id, reference) == redacted
    pointer = big.tool_call_result.result
    assert pointer.startswith(f"Tool result offloaded: {len(redacted)} characters at '{reference}'")
    assert pointer.endswith(f"Preview: {redacted[:30]}...") and REDACTED in pointer
    assert small.tool_call_result.result == SMALL.replace(SECRET, REDACTED) and not small.meta
    # The model's next request holds the redacted results only.
    tool_contents = [m["content"] for m in scripted.requests(model)[1]["messages"] if m["role"] == "tool"]
    assert tool_contents == [pointer, small.tool_call_result.result] and SECRET not in str(tool_contents)


async def test_a_redaction_hook_after_the_offload_hook_sees_only_the_pointer(
    client, worker, scripted, model, run_id, stack
):
    result, big, small, activities = await run(
        client, worker, scripted, model, run_id, [offload_hook(), redact_secrets]
    )

    # Nothing reads results before the offload hook: the tool activity wrote the result itself.
    assert activities.count(INVOKE_TOOL_ACTIVITY) == 2 and STORE_TOOL_RESULT_ACTIVITY not in activities
    (reference,) = big.meta[OFFLOADED_META_KEY]
    assert await stored(run_id, reference) == BIG  # stored as the tool returned it, as registered
    pointer = big.tool_call_result.result
    assert pointer.startswith(f"Tool result offloaded: {len(BIG)} characters at '{reference}'")
    assert pointer.endswith(f"Preview: {BIG[:30]}...".replace(SECRET, REDACTED))  # redacted after the fact
    assert small.tool_call_result.result == SMALL.replace(SECRET, REDACTED)


async def test_a_hook_that_declares_it_reads_no_results_keeps_the_tool_activity_path(
    client, worker, scripted, model, run_id, stack
):
    result, big, small, activities = await run(
        client, worker, scripted, model, run_id, [IgnoresToolResults(), offload_hook()]
    )

    assert STORE_TOOL_RESULT_ACTIVITY not in activities
    (reference,) = big.meta[OFFLOADED_META_KEY]
    assert await stored(run_id, reference) == BIG
    assert small.tool_call_result.result == SMALL

"""End to end: a 5 MB and a 20 MB tool result in one run, on the real Temporal dev server, moto S3
and the scripted model. The results go to the S3 tool-result store, the model sees pointers, the
agent pages a result back with read_tool_result, and the run's history stays under 1 MB."""

from __future__ import annotations

import os
import uuid

from temporalio.worker import Replayer

from agent import Agent, ChatMessage
from hooks.tool_result_offloading import (
    OFFLOADED_META_KEY,
    OffloadOverChars,
    S3ToolResultStore,
    ToolResultOffloadHook,
    read_tool_result,
)
from runtime.plugin import AgentPlugin
from tests.tools import big_text
from worker import create_worker
from workflows.agent_workflow import AgentWorkflow

FIVE_MB, TWENTY_MB = 5_000_000, 20_000_000


def big_text_content(size: int) -> str:
    return big_text.function(size)


async def test_multi_megabyte_results_are_offloaded_and_paged_back(client, scripted, model, run_id, stack):
    bucket = os.environ["TOOL_RESULTS_BUCKET"]
    store = S3ToolResultStore(bucket)
    reference_5 = f"s3://{bucket}/tool-results/{run_id}/step-0/big_text/c5.txt"
    reference_20 = f"s3://{bucket}/tool-results/{run_id}/step-0/big_text/c20.txt"
    scripted.script(
        model,
        [
            {
                "tool_calls": [
                    {"name": "big_text", "arguments": {"size": FIVE_MB}, "id": "c5"},
                    {"name": "big_text", "arguments": {"size": TWENTY_MB}, "id": "c20"},
                ]
            },
            {
                "tool_calls": [
                    {
                        "name": "read_tool_result",
                        "arguments": {"reference": reference_20, "start": 19_999_990},
                        "id": "r1",
                    },
                    {
                        "name": "read_tool_result",
                        "id": "r2",
                        "arguments": {"reference": reference_5, "start": 4096, "end": 4196},
                    },
                ]
            },
            {"text": "done"},
        ],
    )
    hook = ToolResultOffloadHook(store, {"big_text": OffloadOverChars(10_000)}, preview_chars=100)
    agent = Agent(model=model, tools=[big_text, read_tool_result], hooks={"after_tool": [hook]})
    queue = f"offload-{uuid.uuid4().hex[:8]}"
    async with create_worker(client, tools=[big_text, read_tool_result], task_queue=queue):
        handle = await agent.start(client, [ChatMessage.from_user("fetch")], run_id=run_id, task_queue=queue)
        result = await handle.result()
        history = await handle.workflow.fetch_history()

    assert result.exit_reason == "text" and result.last_message.text == "done"
    pointers = [m for m in result.messages if m.meta.get(OFFLOADED_META_KEY)]
    assert [m.meta[OFFLOADED_META_KEY] for m in pointers] == [[reference_5], [reference_20]]

    # The model's next request is small and holds both references (and the previews).
    requests = scripted.requests(model)
    assert len(requests) == 3
    second = str(requests[1]["messages"])
    assert len(second) < 10_000 and reference_5 in second and reference_20 in second
    assert big_text_content(100) in second

    # read_tool_result paged the stored results back.
    read_back = [
        m.tool_call_result.result
        for m in result.messages
        if m.tool_call_result and m.tool_call_result.origin.tool_name == "read_tool_result"
    ]
    assert read_back == [big_text_content(TWENTY_MB)[19_999_990:], big_text_content(FIVE_MB)[4096:4196]]

    # The full results are in S3, under the run's own prefix.
    assert store.for_run(run_id).read(reference_5) == big_text_content(FIVE_MB)
    head = stack.s3.client().head_object(Bucket=bucket, Key=reference_20.split("/", 3)[3])
    assert head["ContentLength"] == TWENTY_MB

    # Nothing big entered history: ExternalStorage moved the multi-MB payloads to S3.
    history_bytes = sum(event.ByteSize() for event in history.events)
    print(f"history: {len(history.events)} events, {history_bytes} bytes")
    assert history_bytes < 1_000_000

    # The recorded history replays deterministically (the hook's activity calls included).
    await Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()]).replay_workflow(history)

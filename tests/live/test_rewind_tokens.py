"""Token events belong to the execution whose model activity made them: rewinding a run while its
model streams leaves the terminated execution's activity running for a while, and its token
batches must not land in the new execution's stream (issue 30: the new run's events began with
``OLD-OLD-...`` then ``NEW-...``, both "attempt 1")."""

from __future__ import annotations

from temporalio.contrib.workflow_streams import PollInput, PollResult
from temporalio.contrib.workflow_streams._types import _decode_payload

from agent import Agent, ChatMessage
from agent.live import STREAM_POLL
from agent.operations.rewind import rewind
from core.events import RUN_EVENTS_TOPIC
from tests import tools as t
from tests.support.hitl_helpers import call, calls
from tests.support.polling import eventually

OLD, NEW = "OLD-" * 400, "NEW-" * 40


async def token_texts(handle) -> list[str]:
    """The token texts stored in the run's current execution now (one read of its stream)."""
    result = await handle.workflow.query(
        STREAM_POLL, PollInput(topics=[RUN_EVENTS_TOPIC], from_offset=0), result_type=PollResult
    )
    converter = handle.client.data_converter.payload_converter
    events = [converter.from_payload(_decode_payload(item.data)) for item in result.items]
    return [e["data"]["text"] for e in events if e["kind"] == "token"]


async def test_a_rewound_executions_tokens_do_not_reach_the_new_one(client, worker, scripted, model, run_id):
    scripted.script(
        model,
        [
            calls(call("add", id="a1", a=1, b=2)),
            # step 1, first time: a long slow stream, cut by the rewind (it goes on a while)
            {"text": OLD, "chunk_chars": 4, "pace": 0.02},
            # step 1 again, in the new execution: slow enough for the old stream to overlap it
            {"text": NEW, "chunk_chars": 4, "pace": 0.05},
        ],
    )
    agent = Agent(model=model, tools=[t.add], stream_tokens=True)
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    await eventually(
        lambda: token_texts(handle),
        until=lambda texts: sum("OLD" in text for text in texts) >= 2,
        timeout=30,
        message="the first stream's tokens",
    )

    done = await rewind(client, run_id, 1, "stream again")
    result = await handle.result()

    assert result.last_message.text == NEW
    texts = await token_texts(handle)
    assert "".join(texts) == NEW, f"execution {done.temporal_run_id} stored another's tokens: {texts[:3]}"

"""The AG-UI endpoint driven by the official client (npm ``@ag-ui/client``'s ``HttpAgent``), as a
frontend drives it: answers streamed token by token, turns on one thread, tool calls, approvals
as interrupts resumed with approve and reject, bad input, and a dropped stream picked up again."""

from __future__ import annotations

import uuid

from agent import get_run
from tests.agent.inbox.agui.support import drive, text_of, types
from tests.agent.inbox.support import IDENTITY_HEADER

ALICE = {IDENTITY_HEADER: "alice"}


def thread() -> str:
    return f"agui-{uuid.uuid4().hex[:10]}"


async def test_a_streamed_answer_then_a_second_turn_on_the_same_thread(
    client, scripted, model, agui_url, agui_client_dir
):
    # Paced, so that the answer leaves the model in several batches of tokens.
    scripted.script(
        model, [{"text": "Hello there, how can I help?", "pace": 0.05}, {"text": "Checkout runs 3 replicas."}]
    )
    run_id = thread()
    first, second = await drive(
        agui_client_dir,
        agui_url,
        run_id,
        [{"say": "hi", "messageId": "m-1"}, {"say": "how many replicas?", "messageId": "m-2"}],
        headers=ALICE,
    )
    assert "error" not in first, first
    assert types(first)[0] == "RUN_STARTED" and types(first)[-1] == "RUN_FINISHED"
    middle = types(first)[1:-1]
    assert middle[0] == "TEXT_MESSAGE_START" and middle[-1] == "TEXT_MESSAGE_END"
    assert set(middle[1:-1]) == {"TEXT_MESSAGE_CONTENT"} and len(middle) - 2 >= 2, middle
    assert text_of(first) == "Hello there, how can I help?"
    assert first["events"][0]["threadId"] == run_id
    assert first["messages"][-1] == {
        "id": f"{run_id}:1:0",
        "role": "assistant",
        "content": "Hello there, how can I help?",
    }
    assert text_of(second) == "Checkout runs 3 replicas."
    assert [m["id"] for m in second["messages"]] == ["m-1", f"{run_id}:1:0", "m-2", f"{run_id}:2:0"]
    # One durable session: the thread is the run, each message delivered once, by its sender.
    handle = get_run(client, run_id)
    status = await handle.status()
    assert status.turn == 2 and status.waiting_for_user
    received = [e async for e in _until_turn_end(handle, 2) if e.kind == "message_received"]
    assert [(e.data["message_id"], e.data["sender"]) for e in received] == [("m-1", "alice"), ("m-2", "alice")]


async def _until_turn_end(handle, turn):
    async for event in handle.events():
        yield event
        if event.kind == "turn_ended" and event.turn == turn:
            return

"""A run's live events on the real dev server (DESIGN.md "Live"): the kinds of a step with a tool,
resuming from an offset (nothing missed, nothing twice), a finished run's events, approvals and
messages, and the stream carried across continue-as-new."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from agent import Agent, ChatMessage, RunEvent
from tests import tools as t
from tests.support.hitl_helpers import ask_all, call, calls, wait_pending


async def collect(handle, from_offset: int = 0, until: int | None = None) -> list[RunEvent]:
    events = []
    async for event in handle.events(from_offset=from_offset):
        events.append(event)
        if until is not None and len(events) >= until:
            break
    return events


async def test_a_run_with_a_tool_call_publishes_its_events_in_order(client, worker, scripted, model, run_id):
    scripted.script(model, [calls(call("add", id="a1", a=2, b=3)), {"text": "5"}])
    agent = Agent(model=model, tools=[t.add])
    handle = await agent.start(client, [ChatMessage.from_user("add")], run_id=run_id, task_queue=worker)
    events = await asyncio.wait_for(collect(handle), timeout=60)

    assert [e.kind for e in events] == [
        "turn_started",
        "step_started",
        "model_reply",
        "tool_started",
        "tool_finished",
        "step_started",
        "model_reply",
        "turn_ended",
        "run_ended",
    ]
    assert [e.offset for e in events] == list(range(len(events)))
    assert [e.step for e in events] == [None, 0, 0, 0, 0, 1, 1, None, None]
    assert {e.turn for e in events} == {1}
    assert events[2].data["tool_calls"] == [{"id": "a1", "tool_name": "add", "arguments": {"a": 2, "b": 3}}]
    assert events[2].data["finish_reason"] == "tool_calls" and events[2].data["usage"]["total_tokens"] > 0
    assert events[3].data == {"tool_call_id": "a1", "tool_name": "add", "arguments": {"a": 2, "b": 3}}
    assert events[4].data["error"] is False and events[4].data["result_preview"] == "5"
    assert events[6].data["text"] == "5"
    assert events[7].data == {"exit_reason": "text", "step_count": 2}
    assert events[8].data == {"exit_reason": "text"}


async def test_resuming_from_the_next_offset_misses_nothing_and_repeats_nothing(
    client, worker, scripted, model, run_id
):
    scripted.script(
        model, [calls(call("add", id="a1", a=1, b=1)), calls(call("add", id="a2", a=2, b=2)), {"text": "ok"}]
    )
    agent = Agent(model=model, tools=[t.add])
    handle = await agent.start(client, [ChatMessage.from_user("add")], run_id=run_id, task_queue=worker)
    seen: list[RunEvent] = []
    offset = 0
    while not seen or seen[-1].kind != "run_ended":  # a new subscription after every 3 events
        batch = await asyncio.wait_for(collect(handle, from_offset=offset, until=3), timeout=60)
        seen.extend(batch)
        offset = batch[-1].offset + 1
    whole = await collect(handle)  # the finished run, read again from the start

    assert [e.offset for e in seen] == list(range(len(seen)))
    assert seen == whole
    assert [e.kind for e in whole].count("tool_finished") == 2


async def test_approvals_and_decisions_are_events(client, worker, scripted, model, run_id):
    scripted.script(model, [calls(call("add", id="a1", a=1, b=2)), {"text": "3"}])
    agent = Agent(model=model, tools=[t.add], hooks={"before_tool": [ask_all()]})
    handle = await agent.start(client, [ChatMessage.from_user("add")], run_id=run_id, task_queue=worker)
    await wait_pending(handle, 1)
    await handle.confirm("a1", approver="ann")
    events = await asyncio.wait_for(collect(handle), timeout=60)

    by_kind = {e.kind: e for e in events}
    assert by_kind["approval_requested"].data == {
        "tool_call_id": "a1",
        "tool_name": "add",
        "arguments": {"a": 1, "b": 2},
    }
    assert by_kind["decision"].data == {
        "tool_call_id": "a1",
        "tool_name": "add",
        "action": "confirm",
        "approver": "ann",
        "feedback": None,
        "via": "update",
    }
    kinds = [e.kind for e in events]
    assert kinds.index("approval_requested") < kinds.index("decision") < kinds.index("tool_started")


async def test_messages_are_events_and_the_stream_survives_continue_as_new(client, worker, scripted, model, run_id):
    turns = 12  # about 12 history events a turn: past the 100-event threshold
    scripted.script(model, [{"text": f"answer {i}"} for i in range(1, turns + 1)])
    agent = Agent(model=model, continue_as_new_after_events=100)
    handle = await agent.start(
        client, [ChatMessage.from_user("q1")], run_id=run_id, task_queue=worker, wait_for_user=timedelta(minutes=5)
    )
    await handle.wait_turn(1)
    for n in range(2, turns + 1):
        await handle.send_message(f"q{n}", sender="ann")
        await handle.wait_turn(n)
    await handle.cancel("done")
    events = await asyncio.wait_for(collect(handle), timeout=60)

    assert (await handle.result()).continuations >= 1
    assert [e.offset for e in events] == list(range(len(events)))
    assert [e.data["text"] for e in events if e.kind == "model_reply"] == [f"answer {i}" for i in range(1, turns + 1)]
    received = [e for e in events if e.kind == "message_received"]
    assert [(e.data["text"], e.data["sender"], e.data["turn"]) for e in received] == [
        (f"q{n}", "ann", n) for n in range(2, turns + 1)
    ]
    assert [e.turn for e in events if e.kind == "turn_started"] == list(range(1, turns + 1))
    assert events[-1].kind == "run_ended" and events[-1].data == {"exit_reason": "cancelled"}

"""The model activity's input names the stored conversation and carries only new messages,
so history grows by what a step adds; hooks that rewrite earlier messages still reach the model."""

from __future__ import annotations

import uuid

from temporalio.api.enums.v1 import EventType

from activities.conversation import ConversationStore
from agent import Agent, ChatMessage, ToolCall
from tests import tools as t
from workflows.stored_conversation import StoredConversation


def test_stored_conversation_sends_only_the_tail_and_falls_back_on_rewrites():
    m = [ChatMessage.from_system("s"), ChatMessage.from_user("u")]
    conversation = StoredConversation()
    assert conversation.request(m) == (None, m)
    reply = ChatMessage.from_assistant(tool_calls=[ToolCall(tool_name="x", id="1")])
    conversation.record(m, reply, "h1")
    tool = ChatMessage.from_tool("r", origin=reply.tool_calls[0])
    assert conversation.request([*m, reply, tool]) == ("h1", [tool])
    reply2 = ChatMessage.from_assistant("done")
    conversation.record([*m, reply, tool], reply2, "h2")
    # an equal (not identical) copy still counts as stored
    copy = [x.model_copy() for x in [*m, reply, tool, reply2]]
    assert conversation.request(copy) == ("h2", [])
    # a rewrite of the tool result moves back to the last boundary before it
    rewritten = [*m, reply, ChatMessage.from_tool("[pruned]", origin=reply.tool_calls[0]), reply2]
    assert conversation.request(rewritten) == ("h1", rewritten[3:])
    # a rewrite of the first message: nothing stored matches, send everything
    assert conversation.request([ChatMessage.from_system("other"), *rewritten[1:]])[0] is None
    # a worker without a store answers with no head: back to whole conversations
    conversation.record(rewritten, reply2, None)
    assert conversation.request(rewritten) == (None, rewritten)


def model_inputs(history) -> list[int]:
    """Sizes (bytes) of the chat_completion activity inputs, in order."""
    return [
        e.activity_task_scheduled_event_attributes.input.ByteSize()
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "chat_completion"
    ]


async def test_model_inputs_stay_flat_and_model_sees_whole_conversation(client, worker, scripted, model, run_id):
    steps = 8
    scripted.script(
        model, [{"tool_calls": [{"name": "big_text", "arguments": {"size": 3000}}], "times": steps}, {"text": "done"}]
    )
    agent = Agent(model=model, tools=[t.big_text], max_agent_steps=steps + 1)
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await handle.result()
    assert result.step_count == steps + 1
    sizes = model_inputs(await handle.workflow.fetch_history())
    assert len(sizes) == steps + 1
    # from the second call on, each input carries one 3 KB tool result, not the whole conversation
    assert max(sizes[1:]) < 6000, sizes
    assert max(sizes[1:]) - min(sizes[1:]) < 200, sizes
    last_request = scripted.requests(model)[-1]["messages"]
    assert sum(1 for m in last_request if m["role"] == "tool") == steps
    assert last_request[0] == {"role": "user", "content": "go"}


async def test_rewritten_history_reaches_the_model(client, worker, scripted, model, run_id):
    scripted.script(
        model,
        [{"tool_calls": [{"name": "echo", "arguments": {"text": f"r{i}"}}], "times": 1} for i in range(5)]
        + [{"text": "done"}],
    )
    agent = Agent(model=model, tools=[t.echo], hooks={"before_llm": [t.prune_first_tool_result]}, max_agent_steps=8)
    result = await (await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)).result()
    assert result.exit_reason == "text"
    requests = scripted.requests(model)
    tool_texts = [[m["content"] for m in r["messages"] if m["role"] == "tool"] for r in requests]
    assert tool_texts[2] == ["r0", "r1"]
    assert tool_texts[3] == ["[pruned]", "r1", "r2"]
    assert tool_texts[5] == ["[pruned]", "r1", "r2", "r3", "r4"]


async def test_store_answers_a_head_it_wrote_from_memory_and_another_worker_from_s3(stack):
    """``cached`` (memory only, what the model activity asks first) knows what this process wrote;
    a second store, as another worker holds, misses in memory and loads the same chain from S3."""
    store = ConversationStore.from_env()
    assert store is not None, "the dev stack configures a payloads bucket"
    first = [ChatMessage.from_user(f"u-{uuid.uuid4().hex}"), ChatMessage.from_assistant("a")]
    head1 = await store.extend(None, [], first)
    second = [ChatMessage.from_user("again"), ChatMessage.from_assistant("b")]
    head2 = await store.extend(head1, first, second)
    assert store.cached(head2) == first + second
    assert store.cached(head1) == first
    assert store.cached("0" * 64) is None

    other = ConversationStore.from_env()
    assert other.cached(head2) is None
    assert await other.load(head2) == first + second
    assert other.cached(head2) == first + second  # load remembers it

"""CompactionHook: validation, trigger arithmetic from the context_tokens anchor, re-anchoring,
chained hooks (pruning then sliding window), async compactors and serialisation."""

from __future__ import annotations

import pytest

from agent import Agent, ChatMessage
from core.state import State
from core.tools import ToolSpec
from hooks.compaction import (
    ApproximateTokenCounter,
    CompactionHook,
    SlidingWindowCompactor,
    TiktokenTokenCounter,
    ToolResultPruningCompactor,
)
from tests.hooks.compaction.test_compaction_compactors import BIG, CountingCounter, Scripted, task_conversation
from tests.support.compaction_support import step

COUNTER = ApproximateTokenCounter()
TOOLS = [ToolSpec(name="search", description="Search the web for a query.")]


def state_for(messages, context_tokens=0, tools=None) -> State:
    data = {"messages": list(messages), "context_tokens": context_tokens, "tools": tools or [], "step_count": 3}
    return State(data=data)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"context_window": 0},
        {"context_window": -5},
        {"context_window": 100, "compact_at": 0.5, "compact_to": 0.5},
        {"context_window": 100, "compact_at": 0.4, "compact_to": 0.5},
        {"context_window": 100, "compact_at": 1.1, "compact_to": 0.5},
        {"context_window": 100, "compact_at": 0.7, "compact_to": 0.0},
        {"context_window": 100, "compact_at": 0.7, "compact_to": -0.1},
    ],
)
def test_validation(kwargs):
    with pytest.raises(ValueError):
        CompactionHook(SlidingWindowCompactor(), **kwargs)


def test_edge_values_accepted_and_before_llm_only():
    hook = CompactionHook(SlidingWindowCompactor(), context_window=1, compact_at=1.0, compact_to=0.01)
    assert hook.allowed_hook_points == ("before_llm",)
    assert isinstance(hook.token_counter, ApproximateTokenCounter)
    Agent(model="m", hooks={"before_llm": [hook]})
    with pytest.raises(ValueError, match="before_llm"):
        Agent(model="m", hooks={"after_tool": [hook]})


def test_trigger_uses_anchor_plus_messages_since_last_reply():
    messages = task_conversation(3)  # ends with a tool result after the last assistant message
    tail = COUNTER.count(messages[-1:])
    anchor = 10_000
    size = anchor + tail
    at = 0.7
    window_just_triggering = int(size / at)  # size >= window * at
    hook = CompactionHook(SlidingWindowCompactor(), context_window=window_just_triggering, compact_at=at)
    assert hook.target_tokens(messages, anchor) is not None
    # one token more of window and the same conversation stays under the trigger
    hook = CompactionHook(SlidingWindowCompactor(), context_window=window_just_triggering + 2, compact_at=at)
    assert hook.target_tokens(messages, anchor) is None


def test_target_is_compact_to_of_window_minus_overhead():
    messages = task_conversation(3)
    anchor = COUNTER.count(messages[:-1]) + 500  # the provider saw 500 tokens more than the messages: overhead
    hook = CompactionHook(
        SlidingWindowCompactor(), context_window=5000, compact_at=0.5, compact_to=0.25, token_counter=COUNTER
    )
    target, overhead = hook.target_tokens(messages, anchor)
    estimated = anchor + COUNTER.count(messages[-1:])
    assert overhead == estimated - COUNTER.count(messages)
    assert target == int(5000 * 0.25) - overhead


def test_without_anchor_counts_everything_including_tool_schemas():
    messages = task_conversation(2)
    with_tools = COUNTER.count(messages, TOOLS)
    assert with_tools > COUNTER.count(messages)
    hook = CompactionHook(SlidingWindowCompactor(), context_window=with_tools, compact_at=1.0, compact_to=0.5)
    overhead = with_tools - COUNTER.count(messages)
    assert hook.target_tokens(messages, 0, TOOLS) == (int(with_tools * 0.5) - overhead, overhead)
    assert hook.target_tokens(messages, 0) is None  # the tools are what tips it over


def test_decision_counts_only_messages_since_the_last_reply():
    messages = task_conversation(200)
    counter = CountingCounter()
    hook = CompactionHook(SlidingWindowCompactor(), context_window=10**9, token_counter=counter)
    state = state_for(messages, context_tokens=123_456)
    hook.run(state)
    assert counter.calls == [1]  # just the trailing tool result
    assert state.data["messages"] == messages


def test_compacts_replaces_messages_and_reanchors_context_tokens():
    messages = task_conversation(6)
    overhead = 300
    anchor = COUNTER.count(messages[:-1]) + overhead
    window = anchor  # far over 0.7
    hook = CompactionHook(SlidingWindowCompactor(), context_window=window, compact_at=0.7, compact_to=0.4)
    state = state_for(messages, context_tokens=anchor)
    hook.run(state)
    compacted = state.data["messages"]
    assert len(compacted) < len(messages)  # replaced, not appended
    assert compacted[0] == messages[0] and compacted[-1] == messages[-1]
    last_assistant = max(i for i, m in enumerate(compacted) if m.role.value == "assistant")
    expected_overhead = anchor + COUNTER.count(messages[-1:]) - COUNTER.count(messages)
    assert state.data["context_tokens"] == COUNTER.count(compacted[: last_assistant + 1]) + expected_overhead
    assert COUNTER.count(compacted) <= int(window * 0.4) - expected_overhead + COUNTER.count(compacted[-2:])


def test_absent_anchor_stays_absent_after_compaction():
    messages = task_conversation(6)
    hook = CompactionHook(SlidingWindowCompactor(), context_window=1000)
    state = state_for(messages, context_tokens=0)
    hook.run(state)
    assert len(state.data["messages"]) < len(messages)
    assert state.data["context_tokens"] == 0


def test_declining_compactor_leaves_state_alone():
    messages = [ChatMessage.from_user("task"), *step("only", BIG)]
    hook = CompactionHook(SlidingWindowCompactor(), context_window=100)
    state = state_for(messages, context_tokens=5000)
    hook.run(state)
    assert state.data["messages"] == messages and state.data["context_tokens"] == 5000


def chained(window):
    return [
        CompactionHook(ToolResultPruningCompactor(), context_window=window, compact_at=0.7, compact_to=0.4),
        CompactionHook(SlidingWindowCompactor(), context_window=window, compact_at=0.7, compact_to=0.4),
    ]


def test_chained_pruning_is_enough_so_sliding_window_does_not_fire():
    messages = task_conversation(8)  # big results: pruning alone frees plenty
    anchor = COUNTER.count(messages[:-1]) + 50
    state = state_for(messages, context_tokens=anchor)
    for hook in chained(window=int(anchor * 1.2)):
        hook.run(state)
    out = state.data["messages"]
    assert len(out) == len(messages)  # nothing removed, results pruned in place
    assert sum(m.meta.get("context_compaction", {}).get("strategy") == "tool_result_pruning" for m in out) >= 1
    assert not any(m.meta.get("context_compaction", {}).get("strategy") == "sliding_window" for m in out)


def test_chained_pruning_not_enough_then_sliding_window_fires():
    messages = [ChatMessage.from_system("s"), ChatMessage.from_user("task")]
    for i in range(20):
        origin = step(f"c{i}", "")[0]
        messages += [
            ChatMessage.from_assistant("reasoning " * 1200, tool_calls=origin.tool_calls),
            ChatMessage.from_tool(BIG, origin.tool_call),
        ]
    anchor = COUNTER.count(messages[:-1]) + 50
    state = state_for(messages, context_tokens=anchor)
    for hook in chained(window=anchor):
        hook.run(state)
    strategies = [m.meta.get("context_compaction", {}).get("strategy") for m in state.data["messages"]]
    assert "sliding_window" in strategies and "tool_result_pruning" in strategies
    assert len(state.data["messages"]) < len(messages)


async def test_run_async_awaits_async_compactor():
    messages = task_conversation(6)
    summariser = Scripted(replies=["gist"])
    hook = CompactionHook(summariser, context_window=COUNTER.count(messages), compact_at=0.7, compact_to=0.4)
    state = state_for(messages, context_tokens=COUNTER.count(messages[:-1]))
    await hook.run_async(state)
    assert summariser.prompts
    assert state.data["messages"][2].text == "<conversation_summary>\ngist\n</conversation_summary>"


def test_round_trip_through_agent_spec():
    hook = CompactionHook(
        ToolResultPruningCompactor(min_tokens=50),
        context_window=128_000,
        compact_at=0.8,
        compact_to=0.5,
        token_counter=TiktokenTokenCounter("cl100k_base"),
    )
    agent = Agent(model="m", hooks={"before_llm": [hook]})
    again = Agent.from_dict(agent.to_dict()).hooks["before_llm"][0]
    assert isinstance(again, CompactionHook)
    assert again.to_dict() == hook.to_dict()
    assert again.token_counter.encoding == "cl100k_base" and again.compactor.min_tokens == 50
    compactor_type = again.to_dict()["init_parameters"]["compactor"]["type"]
    assert compactor_type == "hooks.compaction.tool_result_pruning.ToolResultPruningCompactor"

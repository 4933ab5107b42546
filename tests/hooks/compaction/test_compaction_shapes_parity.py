"""Differential tests against haystack-ai 3.4.1 for issue 36's compaction rows: the
``ApproximateTokenCounter`` constructor and dict, and ``SummarizationCompactor`` outside a run
(Haystack's works with a local generator; ours says it needs a workflow instead of quietly doing
nothing)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from haystack import component
from haystack.components.agents.state.state import State as HState
from haystack.dataclasses import ChatMessage as HMessage
from haystack.hooks.compaction import CompactionHook as HCompactionHook
from haystack.hooks.compaction import SummarizationCompactor as HSummarizer
from haystack.token_counters import ApproximateTokenCounter as HApproximate

from core.messages import ChatMessage, ToolCall
from core.serialization import object_from_dict
from core.state import State
from hooks.compaction import ApproximateTokenCounter, CompactionHook, SummarizationCompactor
from tests.support.compaction_support import random_conversation, to_haystack

pytestmark = pytest.mark.filterwarnings("ignore:.*experimental component")


def ours_type(data: dict[str, Any]) -> dict[str, Any]:
    """A Haystack dict naming this project's class of the same module path (``haystack.`` dropped)."""
    text = json.dumps(data).replace(
        '"haystack.token_counters.approximate_counter.', '"hooks.compaction.token_counters.'
    )
    return json.loads(text.replace('"haystack.hooks.', '"hooks.'))


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"chars_per_token": 3.0}, {"tokens_per_image": 10}, {"tokens_per_file": 7, "chars_per_token": 2.5}],
)
def test_approximate_counter_takes_haystacks_arguments_and_gives_its_dict(kwargs: dict[str, Any]) -> None:
    ours, theirs = ApproximateTokenCounter(**kwargs), HApproximate(**kwargs)
    assert ours.to_dict()["init_parameters"] == theirs.to_dict()["init_parameters"]
    assert len(ours.to_dict()["init_parameters"]) == 3
    rebuilt = object_from_dict(ours_type(theirs.to_dict()))  # a Haystack dict loads here
    assert isinstance(rebuilt, ApproximateTokenCounter) and rebuilt.to_dict() == ours.to_dict()
    for seed in range(5):
        messages = random_conversation(seed)
        # text-only messages: the per-image and per-file charges never apply, in either library
        assert ours.count(messages) == theirs.count(to_haystack(messages))


def test_approximate_counter_refuses_what_haystacks_refuses() -> None:
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match="chars_per_token") as mine:
            ApproximateTokenCounter(chars_per_token=bad)
        with pytest.raises(ValueError, match="chars_per_token") as theirs:
            HApproximate(chars_per_token=bad)
        assert str(mine.value) == str(theirs.value)


def test_a_compaction_hook_with_haystacks_counter_dict_round_trips() -> None:
    hook = CompactionHook(
        compactor=SummarizationCompactor(model="m"),
        context_window=1000,
        token_counter=ApproximateTokenCounter(tokens_per_image=10),
    )
    again = CompactionHook.from_dict(json.loads(json.dumps(hook.to_dict())))
    assert again.to_dict() == hook.to_dict()
    assert again.token_counter.tokens_per_image == 10


@component
class LocalGenerator:
    """A Haystack chat generator that answers every summary request in this process."""

    @component.output_types(replies=list[HMessage])
    def run(self, messages: list[HMessage], **kwargs: Any) -> dict[str, list[HMessage]]:
        return {"replies": [HMessage.from_assistant("the gist")]}


def long_conversation() -> list[ChatMessage]:
    messages = [ChatMessage.from_system("s"), ChatMessage.from_user("old task")]
    for i in range(4):
        call = ToolCall(tool_name="search", arguments={"q": str(i)}, id=f"c{i}")
        messages += [ChatMessage.from_assistant(tool_calls=[call]), ChatMessage.from_tool("r" * 400, origin=call)]
    return messages + [ChatMessage.from_user("new task")]


async def test_outside_a_run_haystacks_summariser_works_and_ours_says_it_needs_a_workflow() -> None:
    messages = long_conversation()
    theirs = HSummarizer(chat_generator=LocalGenerator())
    counter = HApproximate()
    compacted = theirs.compact(to_haystack(messages), counter.count(to_haystack(messages)) // 3, counter)
    assert compacted is not None  # Haystack summarises locally

    ours = SummarizationCompactor(model="m")  # raise_on_failure=False: still not a quiet None
    ours_counter = ApproximateTokenCounter()
    target = ours_counter.count(messages) // 3
    with pytest.raises(RuntimeError, match="needs an AgentWorkflow run") as sync_refusal:
        ours.compact(messages, target, ours_counter)
    with pytest.raises(RuntimeError, match="needs an AgentWorkflow run"):
        await ours.compact_async(messages, target, ours_counter)
    assert "SlidingWindowCompactor" in str(sync_refusal.value)  # says what works locally


async def test_a_local_compaction_hook_run_with_the_summariser_raises_instead_of_doing_nothing() -> None:
    messages = long_conversation()
    their_hook = HCompactionHook(compactor=HSummarizer(chat_generator=LocalGenerator()), context_window=400)
    their_state = HState(schema={}, data={"messages": to_haystack(messages)})
    their_hook.run(their_state)
    assert len(their_state.data["messages"]) < len(messages)

    hook = CompactionHook(compactor=SummarizationCompactor(model="m"), context_window=400)
    state = State(data={"messages": list(messages)})
    with pytest.raises(RuntimeError, match="needs an AgentWorkflow run"):
        hook.run(state)
    with pytest.raises(RuntimeError, match="needs an AgentWorkflow run"):
        await hook.run_async(state)
    assert state.data["messages"] == messages  # nothing half-done

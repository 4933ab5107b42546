"""Parity with Haystack 3.4's compaction API beyond the three built-in compactors.

- ``Compactor`` is a base class with Haystack's defaults (``compact_async`` calls ``compact``,
  ``to_dict``/``from_dict`` by import path, lifecycle methods that do nothing), and
  ``CompactionHook`` also takes a duck-typed compactor;
- lifecycle (``warm_up``/``close`` and their async variants) reaches the compactor, the token
  counter and the summariser's chat generator;
- ``SummarizationCompactor(chat_generator=ChatGeneratorSpec(...))``, its validation, and the old
  serialised form (``model``/``model_settings``) that recorded histories carry;
- ``ToolResultOffloadCompactor`` keeps what Haystack 3.4.1's keeps, on seeded random conversations;
- ``TiktokenCounter`` counts as ``TiktokenTokenCounter`` (and as Haystack's).
"""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from haystack.dataclasses import ChatMessage as HMessage
from haystack.hooks.compaction import ToolResultOffloadCompactor as HOffload
from haystack.hooks.compaction import tool_result_offloading as h_offload_module
from haystack.token_counters import TiktokenCounter as HTiktoken
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, RetryState, TimeoutError, TimeoutType

from activities.model import ModelCallInput, ModelCallOutput
from core.messages import ChatMessage, ToolCall
from core.serialization import object_from_dict
from core.state import State
from core.tool_records import OFFLOADED_META_KEY, pointer_text
from hooks.compaction import (
    ApproximateTokenCounter,
    ChatGeneratorSpec,
    CompactionHook,
    Compactor,
    SlidingWindowCompactor,
    SummarizationCompactor,
    TiktokenCounter,
    TiktokenTokenCounter,
    ToolResultOffloadCompactor,
    ToolResultPruningCompactor,
)
from hooks.compaction import summarization as summarization_module
from hooks.compaction import tool_result_offload as offload_module
from hooks.compaction.summarization import DEFAULT_SUMMARY_INSTRUCTION, is_summary
from hooks.protocol import Closes, WarmsUp
from hooks.tool_result_offloading import FileSystemToolResultStore
from tests.hooks.compaction.test_compaction_haystack_equivalence import FRACTIONS, SEEDS, counters
from tests.support.compaction_support import assert_pairs_intact, keys, random_conversation, step, to_haystack

pytestmark = pytest.mark.filterwarnings("ignore:.*experimental component")

COUNTER = ApproximateTokenCounter()
HISTORIES = Path(__file__).resolve().parents[2] / "histories"


def over_trigger_state(messages: list[ChatMessage]) -> State:
    return State(data={"messages": list(messages), "context_tokens": 0, "tools": [], "step_count": 2})


def long_conversation() -> list[ChatMessage]:
    messages = [ChatMessage.from_system("sys"), ChatMessage.from_user("task")]
    for i in range(6):
        messages += step(f"c{i}", "result line\n" * 80)
    return messages


# -- custom compactors -----------------------------------------------------------------------------------------


class KeepLastStep(Compactor):
    """A custom compactor as Haystack's docs describe one: only ``compact`` (no arguments, no to_dict)."""

    def compact(self, messages, target_tokens, token_counter):
        return SlidingWindowCompactor(min_keep_steps=1, omission_note=None).compact(
            messages, target_tokens, token_counter
        )


class DuckTyped:
    """Not a Compactor subclass, and no compact_async: the hook must fall back to compact."""

    def __init__(self) -> None:
        self.calls = 0

    def compact(self, messages, target_tokens, token_counter):
        self.calls += 1
        return KeepLastStep().compact(messages, target_tokens, token_counter)

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.DuckTyped", "init_parameters": {}}


class SyncCompactAsync(DuckTyped):
    """Duck-typed with a compact_async that is a plain function returning the list."""

    def compact_async(self, messages, target_tokens, token_counter):
        return self.compact(messages, target_tokens, token_counter)


class WithSettings(Compactor):
    def __init__(self, keep: int = 1) -> None:
        self.keep = keep

    def compact(self, messages, target_tokens, token_counter):
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.WithSettings", "init_parameters": {"keep": self.keep}}


class AsyncOnly(Compactor):
    async def compact_async(self, messages, target_tokens, token_counter):
        return None


async def test_custom_compactor_with_only_compact_compacts_through_run_async():
    messages = long_conversation()
    hook = CompactionHook(KeepLastStep(), context_window=COUNTER.count(messages), compact_at=0.7, compact_to=0.3)
    state = over_trigger_state(messages)
    await hook.run_async(state)
    compacted = state.data["messages"]
    assert len(compacted) < len(messages)
    assert compacted[:2] == messages[:2] and compacted[-2:] == messages[-2:]
    assert_pairs_intact(compacted)
    # the default compact_async is compact
    assert await KeepLastStep().compact_async(messages, 100, COUNTER) == KeepLastStep().compact(messages, 100, COUNTER)


@pytest.mark.parametrize("compactor_class", [DuckTyped, SyncCompactAsync])
async def test_duck_typed_compactor_compacts_through_run_async(compactor_class):
    messages = long_conversation()
    compactor = compactor_class()
    hook = CompactionHook(compactor, context_window=COUNTER.count(messages), compact_at=0.7, compact_to=0.3)
    state = over_trigger_state(messages)
    await hook.run_async(state)
    assert compactor.calls == 1
    assert len(state.data["messages"]) < len(messages)
    # and through run too
    state = over_trigger_state(messages)
    hook.run(state)
    assert compactor.calls == 2 and len(state.data["messages"]) < len(messages)


def test_async_only_compactor_says_so_on_the_sync_path():
    with pytest.raises(NotImplementedError, match="compact_async"):
        AsyncOnly().compact(long_conversation(), 0, COUNTER)


def test_default_to_dict_and_from_dict_round_trip_a_no_argument_compactor():
    data = KeepLastStep().to_dict()
    assert data == {"type": f"{__name__}.KeepLastStep", "init_parameters": {}}
    again = object_from_dict(data)
    assert isinstance(again, KeepLastStep) and again is not None
    assert KeepLastStep.from_dict(data).to_dict() == data
    # inside a CompactionHook, as it travels in the workflow input
    hook = CompactionHook(KeepLastStep(), context_window=1000)
    rebuilt = CompactionHook.from_dict(json.loads(json.dumps(hook.to_dict())))
    assert isinstance(rebuilt.compactor, KeepLastStep)
    assert rebuilt.to_dict() == hook.to_dict()
    # a compactor with settings overrides to_dict; the default from_dict passes them back
    assert object_from_dict(WithSettings(keep=3).to_dict()).keep == 3


def test_builtin_compactors_are_compactors():
    for compactor in (
        SlidingWindowCompactor(),
        ToolResultPruningCompactor(),
        SummarizationCompactor(model="m"),
        ToolResultOffloadCompactor(FileSystemToolResultStore("/tmp/unused")),
    ):
        assert isinstance(compactor, Compactor)


# -- lifecycle -------------------------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []


class SyncLifecycle(Compactor):
    """Overrides only the sync lifecycle: the default async variants must reach it."""

    def __init__(self, recorder: Recorder | None = None) -> None:
        self.recorder = recorder or Recorder()

    def compact(self, messages, target_tokens, token_counter):
        return None

    def warm_up(self) -> None:
        self.recorder.calls.append("warm_up")

    def close(self) -> None:
        self.recorder.calls.append("close")


class AsyncLifecycle:
    """Duck-typed with both variants: the async ones win on the async path."""

    def __init__(self) -> None:
        self.recorder = Recorder()

    def compact(self, messages, target_tokens, token_counter):
        return None

    def warm_up(self) -> None:
        self.recorder.calls.append("warm_up")

    async def warm_up_async(self) -> None:
        await asyncio.sleep(0)
        self.recorder.calls.append("warm_up_async")

    def close(self) -> None:
        self.recorder.calls.append("close")

    async def close_async(self) -> None:
        self.recorder.calls.append("close_async")


class NoLifecycle:
    def compact(self, messages, target_tokens, token_counter):
        return None


class CountingWarmUp(ApproximateTokenCounter):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def warm_up(self) -> None:
        self.calls.append("warm_up")

    def close(self) -> None:
        self.calls.append("close")


async def test_hook_lifecycle_reaches_compactor_and_token_counter():
    counter = CountingWarmUp()
    sync = SyncLifecycle()
    hook = CompactionHook(sync, context_window=100, token_counter=counter)
    assert isinstance(hook, WarmsUp) and isinstance(hook, Closes)  # what the run loop checks
    hook.warm_up()
    hook.close()
    assert sync.recorder.calls == ["warm_up", "close"] and counter.calls == ["warm_up", "close"]
    await hook.warm_up_async()
    await hook.close_async()
    assert sync.recorder.calls == ["warm_up", "close"] * 2 and counter.calls == ["warm_up", "close"] * 2

    duck = AsyncLifecycle()
    hook = CompactionHook(duck, context_window=100)
    await hook.warm_up_async()
    await hook.close_async()
    hook.warm_up()
    hook.close()
    assert duck.recorder.calls == ["warm_up_async", "close_async", "warm_up", "close"]

    # parts without lifecycle methods are skipped on every path
    hook = CompactionHook(NoLifecycle(), context_window=100)
    hook.warm_up()
    hook.close()
    await hook.warm_up_async()
    await hook.close_async()


async def test_default_lifecycle_does_nothing_and_tiktoken_counter_loads_on_warm_up():
    compactor = KeepLastStep()
    compactor.warm_up()
    compactor.close()
    await compactor.warm_up_async()
    await compactor.close_async()
    hook = CompactionHook(SlidingWindowCompactor(), context_window=100, token_counter=TiktokenCounter("cl100k_base"))
    await hook.warm_up_async()
    from hooks.compaction.encodings import _cache

    assert "cl100k_base" in _cache


class RecordingSpec(ChatGeneratorSpec):
    """A chat generator spec with lifecycle, to see the summariser delegate to it."""

    calls: list[str] = []

    def warm_up(self) -> None:
        RecordingSpec.calls.append("warm_up")

    def close(self) -> None:
        RecordingSpec.calls.append("close")

    async def close_async(self) -> None:
        RecordingSpec.calls.append("close_async")


async def test_summariser_lifecycle_delegates_to_its_chat_generator():
    RecordingSpec.calls = []
    summariser = SummarizationCompactor(chat_generator=RecordingSpec("m"))
    hook = CompactionHook(summariser, context_window=100)
    hook.warm_up()
    await hook.warm_up_async()  # no warm_up_async on the spec: its warm_up
    hook.close()
    await hook.close_async()
    assert RecordingSpec.calls == ["warm_up", "warm_up", "close", "close_async"]
    # a plain spec has no lifecycle: nothing to do, nothing raised
    plain = SummarizationCompactor(model="m")
    plain.warm_up()
    plain.close()
    await plain.warm_up_async()
    await plain.close_async()
    # and the subclass travels by its import path
    again = SummarizationCompactor.from_dict(summariser.to_dict())
    assert type(again.chat_generator) is RecordingSpec


# -- the summariser's chat generator ---------------------------------------------------------------------------


def test_chat_generator_spec_round_trip():
    spec = ChatGeneratorSpec(
        "gpt-4o-mini", generation_kwargs={"temperature": 0.2, "max_tokens": 300, "extra_body": {"top_k": 5}}
    )
    data = json.loads(json.dumps(spec.to_dict()))
    assert data == {
        "type": "hooks.compaction.chat_generator.ChatGeneratorSpec",
        "init_parameters": {
            "model": "gpt-4o-mini",
            "generation_kwargs": {"temperature": 0.2, "max_tokens": 300, "extra_body": {"top_k": 5}},
            "endpoint": None,
        },
    }
    assert ChatGeneratorSpec.from_dict(data) == spec == object_from_dict(data)
    with_endpoint = ChatGeneratorSpec("small", endpoint="SUMMARY_2")
    assert ChatGeneratorSpec.from_dict(with_endpoint.to_dict()) == with_endpoint
    assert with_endpoint != ChatGeneratorSpec("small")
    assert "SUMMARY_2" in repr(with_endpoint)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": ""}, "model"),
        ({"model": "  "}, "model"),
        ({"model": None}, "model"),
        ({"model": "m", "generation_kwargs": {"messages": []}}, "messages"),
        ({"model": "m", "generation_kwargs": {"model": "other"}}, "model"),
        ({"model": "m", "generation_kwargs": {"tools": []}}, "tools"),
        ({"model": "m", "generation_kwargs": {"stream": True}}, "stream"),
        ({"model": "m", "generation_kwargs": {"timeout": 30}}, "timeout.*OPENAI_TIMEOUT_SECONDS"),
        ({"model": "m", "generation_kwargs": {"extra_headers": {"x": "y"}}}, "extra_headers"),
        ({"model": "m", "generation_kwargs": {"extra_query": {"x": "y"}}}, "extra_query"),
        ({"model": "m", "generation_kwargs": {"extra_body": ["top_k"]}}, "extra_body"),
        ({"model": "m", "generation_kwargs": {"extra_body": {"messages": []}}}, "`extra_body` may not set messages"),
        ({"model": "m", "generation_kwargs": {"temperature": object()}}, "JSON"),
        ({"model": "m", "generation_kwargs": {"temperature": float("nan")}}, "JSON"),
        ({"model": "m", "generation_kwargs": [("temperature", 0.1)]}, "dict"),
        ({"model": "m", "endpoint": "summary"}, "upper case"),
        ({"model": "m", "endpoint": ""}, "endpoint"),
        ({"model": "m", "endpoint": "SUMMARY_"}, "endpoint"),
        ({"model": "m", "endpoint": "A__B"}, "endpoint"),
        ({"model": "m", "endpoint": "1ST"}, "endpoint"),
        ({"model": "m", "endpoint": "https://example.com"}, "endpoint"),
        ({"model": "m", "endpoint": "X" * 65}, "endpoint"),
        ({"model": "m", "endpoint": 3}, "endpoint"),
    ],
)
def test_chat_generator_spec_validation(kwargs, match):
    model = kwargs.pop("model")
    with pytest.raises(ValueError, match=match):
        ChatGeneratorSpec(model, **kwargs)


def test_chat_generator_request_uses_existing_fields():
    spec = ChatGeneratorSpec("summarizer", generation_kwargs={"temperature": 0.1, "response_format": {"type": "text"}})
    request = spec.request([ChatMessage.from_user("hi")])
    assert isinstance(request, ModelCallInput)
    assert (request.model, request.settings, request.purpose, request.tools) == (
        "summarizer",
        {"temperature": 0.1, "response_format": {"type": "text"}},
        "hook",
        [],
    )
    request.settings["response_format"]["type"] = "json"  # the request holds a copy
    assert spec.generation_kwargs["response_format"] == {"type": "text"}


def test_extra_body_is_merged_into_the_body_as_the_sdk_does():
    """The activity posts ``settings`` as the body; Haystack-style ``extra_body`` entries land at its top level."""
    spec = ChatGeneratorSpec(
        "m", generation_kwargs={"temperature": 0.1, "top_k": 3, "extra_body": {"top_k": 5, "repetition_penalty": 1.1}}
    )
    assert spec.request([]).settings == {"temperature": 0.1, "top_k": 5, "repetition_penalty": 1.1}
    assert spec.to_dict()["init_parameters"]["generation_kwargs"]["extra_body"] == {
        "top_k": 5,
        "repetition_penalty": 1.1,
    }


def test_rebuilt_specs_are_checked_as_new_ones():
    """``from_dict`` checks what it rebuilds as the constructor does, and a round trip keeps the spec."""
    compactor = SummarizationCompactor(model="summaries", model_settings={"top_k": 2})
    again = object_from_dict(json.loads(json.dumps(compactor.to_dict())))
    assert again.chat_generator == compactor.chat_generator
    refused = {"timeout": 30, "stream": False, "top_k": 2}
    with pytest.raises(ValueError, match="stream"):
        object_from_dict(
            {
                "type": "hooks.compaction.summarization.SummarizationCompactor",
                "init_parameters": {"model": "summaries", "model_settings": refused},
            }
        )
    with pytest.raises(ValueError, match="endpoint"):
        ChatGeneratorSpec.from_dict({"type": "x", "init_parameters": {"model": "m", "endpoint": "bad name"}})


def test_endpoint_reaches_the_request():
    spec = ChatGeneratorSpec("summarizer", endpoint="SUMMARY")
    assert spec.request([ChatMessage.from_user("hi")]).endpoint == "SUMMARY"
    assert SummarizationCompactor(chat_generator=spec).chat_generator.endpoint == "SUMMARY"


def test_summariser_accepts_a_spec_a_model_shortcut_or_a_serialised_spec():
    spec = ChatGeneratorSpec("small", generation_kwargs={"max_tokens": 200})
    by_spec = SummarizationCompactor(chat_generator=spec, min_keep_steps=2)
    by_model = SummarizationCompactor(model="small", model_settings={"max_tokens": 200}, min_keep_steps=2)
    by_dict = SummarizationCompactor(chat_generator=spec.to_dict(), min_keep_steps=2)
    positional = SummarizationCompactor("small", min_keep_steps=2)
    assert by_spec.to_dict() == by_model.to_dict() == by_dict.to_dict()
    assert positional.chat_generator == ChatGeneratorSpec("small")
    assert by_spec.model == "small" and by_spec.model_settings == {"max_tokens": 200}
    data = json.loads(json.dumps(by_spec.to_dict()))
    assert data["init_parameters"]["chat_generator"] == spec.to_dict()
    assert "model" not in data["init_parameters"]
    again = SummarizationCompactor.from_dict(data)
    assert again.to_dict() == data and again.chat_generator == spec


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((), {}, "chat_generator"),
        ((ChatGeneratorSpec("a"),), {"model": "b"}, "not both"),
        (("a",), {"model": "b"}, "not both"),
        ((ChatGeneratorSpec("a"),), {"model_settings": {"max_tokens": 5}}, "generation_kwargs"),
        ((), {"model": ""}, "model"),
        ((), {"model": "m", "model_settings": {"messages": []}}, "messages"),
        ((object(),), {}, "ChatGeneratorSpec"),
        (({"type": "hooks.compaction.sliding_window.SlidingWindowCompactor", "init_parameters": {}},), {}, "Spec"),
    ],
)
def test_summariser_refuses_bad_generator_arguments(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        SummarizationCompactor(*args, **kwargs)


def test_summariser_from_dict_takes_the_model_shortcut():
    shortcut = {
        "type": "hooks.compaction.summarization.SummarizationCompactor",
        "init_parameters": {
            "model": "summaries",
            "min_keep_steps": 1,
            "approximate_summary_tokens": 20,
            "summary_instruction": DEFAULT_SUMMARY_INSTRUCTION,
            "raise_on_failure": False,
            "model_settings": {"max_tokens": 50},
        },
    }
    compactor = object_from_dict(shortcut)
    assert compactor.chat_generator == ChatGeneratorSpec("summaries", generation_kwargs={"max_tokens": 50})
    assert compactor.approximate_summary_tokens == 20
    assert compactor.chat_generator.request([]).settings == {"max_tokens": 50}


@pytest.mark.parametrize("history", ["compaction_summarization", "compaction_continue_as_new"])
def test_committed_histories_agent_specs_build(history):
    """The worker rebuilds the summariser the recorded workflow inputs name."""
    from core.spec import AgentSpec

    data = json.loads((HISTORIES / f"{history}.json").read_text())
    for recorded in data["histories"]:
        attributes = recorded["events"][0]["workflowExecutionStartedEventAttributes"]
        run_input = json.loads(base64.b64decode(attributes["input"]["payloads"][0]["data"]))
        hooks = AgentSpec.from_dict(run_input["agent"]).hooks["before_llm"]
        summariser = hooks[-1].compactor
        assert isinstance(summariser, SummarizationCompactor)
        assert summariser.model.endswith("-summaries") and summariser.model_settings == {}


async def test_summaries_go_through_the_model_activity_with_the_spec(monkeypatch):
    """summarize() -> hooks.context.call_model_from_hook -> activities.model.call_model, with the spec's fields."""
    import hooks.context as context

    sent: list[ModelCallInput] = []

    async def fake_call_model(request: ModelCallInput) -> ModelCallOutput:
        sent.append(request)
        usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
        return ModelCallOutput(message=ChatMessage.from_assistant("- the gist"), usage=usage)

    monkeypatch.setattr(context, "call_model", fake_call_model)
    # summarize() refuses outside a workflow; here only the call path is under test
    monkeypatch.setattr(summarization_module, "workflow", SimpleNamespace(in_workflow=lambda: True))
    spec = ChatGeneratorSpec("summary-model", generation_kwargs={"temperature": 0.3, "max_tokens": 99})
    compactor = SummarizationCompactor(chat_generator=spec, approximate_summary_tokens=5)
    messages = [ChatMessage.from_system("s"), ChatMessage.from_user("old task")]
    messages += step("a", "result\n" * 100) + [ChatMessage.from_user("new task")] + step("b", "x")
    out = await compactor.compact_async(messages, COUNTER.count(messages) // 3, COUNTER)
    assert out is not None and any(is_summary(m) for m in out)
    assert sent and all(r.model == "summary-model" for r in sent)
    assert all(r.settings == {"temperature": 0.3, "max_tokens": 99} and r.purpose == "hook" for r in sent)
    assert all(r.tools == [] for r in sent)


# -- ToolResultOffloadCompactor against Haystack 3.4.1 ---------------------------------------------------------


class FakeStore:
    """A store both sides write to: references are numbered in write order, so equal logic gives equal text."""

    def __init__(self, fail_at: set[int] | None = None) -> None:
        self.writes: list[tuple[str, str]] = []
        self.fail_at = fail_at or set()
        self.attempts = 0

    def write(self, *, key: str, content: str) -> str:
        self.attempts += 1
        if self.attempts in self.fail_at:
            raise OSError("disk full")
        self.writes.append((key, content))
        return f"store://r{len(self.writes):03d}"

    def read(self, reference: str) -> str:
        return self.writes[int(reference.rsplit("r", 1)[1]) - 1][1]

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.FakeStore", "init_parameters": {}}


def ours_worded_offloaded_message(message, *, content_blocks, store, key_prefix, preview_chars, additional_meta=None):
    """Haystack's ``_offloaded_message`` with our pointer wording (``pointer_text``); the choice of what to
    offload, the thresholds, the order and the stopping point stay Haystack's."""
    result = message.tool_call_result
    (block,) = content_blocks
    try:
        reference = store.write(key=f"{key_prefix}.txt", content=block.text)
    except Exception:
        return None
    return HMessage.from_tool(
        tool_result=pointer_text(reference, block.text, preview_chars),
        origin=result.origin,
        error=result.error,
        meta={**message.meta, **(additional_meta or {}), OFFLOADED_META_KEY: [reference]},
    )


def full_keys(messages):
    """``keys`` plus the offload meta (the references written)."""
    if messages is None:
        return None
    return [(*keys([m])[0], str(m.meta.get(OFFLOADED_META_KEY))) for m in messages]


OFFLOAD_SETTINGS = [{}, {"min_keep_steps": 2, "min_tokens": 10}, {"min_tokens": 0, "preview_chars": 0}]


@pytest.mark.parametrize("kind", ["approximate", "tiktoken"])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("settings", OFFLOAD_SETTINGS)
async def test_offload_keeps_what_haystack_keeps(monkeypatch, seed, kind, settings):
    monkeypatch.setattr(h_offload_module, "_offloaded_message", ours_worded_offloaded_message)
    messages = random_conversation(seed)
    our_counter, their_counter = counters(kind)
    total = our_counter.count(messages)
    for fraction in FRACTIONS:
        target = int(total * fraction)
        their_store = FakeStore()
        theirs = HOffload(store=their_store, **settings).compact(to_haystack(messages), target, their_counter)
        for run in ("compact", "compact_async"):
            our_store = FakeStore()
            compactor = ToolResultOffloadCompactor(our_store, **settings)
            if run == "compact":
                ours = compactor.compact(list(messages), target, our_counter)
            else:
                ours = await compactor.compact_async(list(messages), target, our_counter)
            assert full_keys(ours) == full_keys(theirs), (seed, fraction, run)
            assert [content for _, content in our_store.writes] == [content for _, content in their_store.writes]
            if ours is not None:
                assert_pairs_intact(ours)
                assert [m.meta for m in ours] == [m.meta for m in theirs]


@pytest.mark.parametrize("seed", SEEDS)
async def test_offload_with_failing_writes_keeps_what_haystack_keeps(monkeypatch, seed):
    monkeypatch.setattr(h_offload_module, "_offloaded_message", ours_worded_offloaded_message)
    messages = random_conversation(seed)
    our_counter, their_counter = counters("approximate")
    target = int(our_counter.count(messages) * 0.2)
    for fail_at in ({1}, {2, 3}, set(range(1, 100))):
        theirs = HOffload(store=FakeStore(fail_at), min_tokens=10).compact(to_haystack(messages), target, their_counter)
        ours = ToolResultOffloadCompactor(FakeStore(fail_at), min_tokens=10).compact(messages, target, our_counter)
        assert full_keys(ours) == full_keys(theirs), (seed, fail_at)


@pytest.mark.parametrize("seed", SEEDS)
def test_offload_with_haystacks_own_wording_offloads_the_same_results(seed):
    """Unpatched Haystack, target 0 (everything eligible goes): the same results are offloaded, with the
    same compaction meta; only the pointer's wording differs."""
    messages = random_conversation(seed)
    our_counter, their_counter = counters("approximate")
    ours = ToolResultOffloadCompactor(FakeStore()).compact(messages, 0, our_counter)
    theirs = HOffload(store=FakeStore()).compact(to_haystack(messages), 0, their_counter)
    if theirs is None:
        assert ours is None
        return
    offloaded = [i for i, m in enumerate(theirs) if "context_compaction" in m.meta]
    assert [i for i, m in enumerate(ours) if "context_compaction" in m.meta] == offloaded
    assert [ours[i].meta["context_compaction"] for i in offloaded] == [
        theirs[i].meta["context_compaction"] for i in offloaded
    ]
    assert all(ours[i].text is None and "Tool result offloaded" in ours[i].tool_call_result.result for i in offloaded)


@pytest.mark.parametrize("preview_chars", [0, 7, 200])
def test_offload_boundaries_match_haystack(monkeypatch, preview_chars):
    """A sweep of result sizes and thresholds hits the exact boundaries: a result of exactly ``min_tokens``
    tokens, and a pointer that saves exactly nothing."""
    monkeypatch.setattr(h_offload_module, "_offloaded_message", ours_worded_offloaded_message)
    our_counter, their_counter = counters("approximate")
    equal_seen = 0
    for size in range(0, 700, 3):
        messages = [ChatMessage.from_user("task"), *step("a", "y" * size), *step("b", "z")]
        tokens = our_counter.count(messages[2:3])
        for min_tokens in {0, max(tokens - 1, 0), tokens, tokens + 1}:
            settings = {"min_tokens": min_tokens, "preview_chars": preview_chars}
            our_store, their_store = FakeStore(), FakeStore()
            ours = ToolResultOffloadCompactor(our_store, **settings).compact(messages, 0, our_counter)
            theirs = HOffload(store=their_store, **settings).compact(to_haystack(messages), 0, their_counter)
            assert full_keys(ours) == full_keys(theirs), (size, min_tokens)
            assert [c for _, c in our_store.writes] == [c for _, c in their_store.writes], (size, min_tokens)
        pointer = pointer_text("store://r001", "y" * size, preview_chars)
        equal_seen += our_counter.count([ChatMessage.from_tool(pointer, messages[1].tool_calls[0])]) == tokens
    assert equal_seen  # some size made the pointer cost exactly what the result did


@pytest.mark.parametrize("seed", SEEDS)
def test_offload_after_pruning_matches_haystack(monkeypatch, seed):
    """Results another compactor rewrote (``meta["context_compaction"]``) are left alone, as in Haystack."""
    from haystack.hooks.compaction import ToolResultPruningCompactor as HPruning

    monkeypatch.setattr(h_offload_module, "_offloaded_message", ours_worded_offloaded_message)
    messages = random_conversation(seed)
    our_counter, their_counter = counters("approximate")
    pruned = ToolResultPruningCompactor(min_tokens=30).compact(
        messages, int(our_counter.count(messages) * 0.6), our_counter
    )
    h_pruned = HPruning(min_tokens=30).compact(
        to_haystack(messages), int(our_counter.count(messages) * 0.6), their_counter
    )
    assert keys(pruned) == keys(h_pruned)
    pruned, h_pruned = pruned or messages, h_pruned or to_haystack(messages)
    assert any("context_compaction" in m.meta for m in pruned) or pruned is messages
    ours = ToolResultOffloadCompactor(FakeStore(), min_tokens=0).compact(pruned, 0, our_counter)
    theirs = HOffload(store=FakeStore(), min_tokens=0).compact(h_pruned, 0, their_counter)
    assert full_keys(ours) == full_keys(theirs)


def test_offload_leaves_a_message_with_several_results_alone():
    """One pointer stands for one result: a message carrying two (not one our run loop writes) is left
    whole, so no result loses its call."""
    from core.messages import ChatRole, ToolCallResult

    calls = [ToolCall(tool_name="search", arguments={}, id=i) for i in ("a", "b")]
    both = ChatMessage(
        role=ChatRole.TOOL, tool_call_results=[ToolCallResult(result="r" * 2000, origin=c) for c in calls]
    )
    messages = [ChatMessage.from_user("t"), ChatMessage.from_assistant(tool_calls=calls), both, *step("c", "z")]
    assert ToolResultOffloadCompactor(FakeStore(), min_tokens=0).compact(messages, 0, COUNTER) is None


def test_offload_round_trip_and_validation(tmp_path):
    store = FileSystemToolResultStore(tmp_path)
    compactor = ToolResultOffloadCompactor(
        store, min_keep_steps=2, min_tokens=5, preview_chars=10, write_deadline=timedelta(seconds=30)
    )
    data = json.loads(json.dumps(compactor.to_dict()))
    assert data["init_parameters"]["store"] == store.to_dict()
    again = object_from_dict(data)
    assert isinstance(again, ToolResultOffloadCompactor) and again.to_dict() == data
    assert again.write_deadline == timedelta(seconds=30)
    hook = CompactionHook(compactor, context_window=1000)
    assert CompactionHook.from_dict(json.loads(json.dumps(hook.to_dict()))).to_dict() == hook.to_dict()
    for kwargs, match in [
        ({"min_keep_steps": 0}, "min_keep_steps"),
        ({"min_tokens": -1}, "min_tokens"),
        ({"preview_chars": -1}, "preview_chars"),
        ({"write_deadline": timedelta(milliseconds=10)}, "write_deadline"),
        ({"write_deadline": 30}, "write_deadline"),
    ]:
        with pytest.raises(ValueError, match=match):
            ToolResultOffloadCompactor(store, **kwargs)
    with pytest.raises(ValueError, match="write"):
        ToolResultOffloadCompactor(object())


def test_offload_writes_to_the_store_and_the_pointer_reads_back(tmp_path):
    store = FileSystemToolResultStore(tmp_path)
    messages = long_conversation()
    out = ToolResultOffloadCompactor(store, min_tokens=10).compact(messages, 0, COUNTER)
    offloaded = [m for m in out if m.meta.get(OFFLOADED_META_KEY)]
    assert len(offloaded) == 5  # all but the newest step's result
    for message in offloaded:
        (reference,) = message.meta[OFFLOADED_META_KEY]
        original = next(
            m for m in messages if m.tool_call_result and m.tool_call_result.origin == message.tool_call_result.origin
        )
        assert store.read(reference) == original.tool_call_result.result
        assert f"at '{reference}'" in message.tool_call_result.result
        assert "/compacted/step-0/search/" in reference
    # already offloaded results are never offloaded again
    assert ToolResultOffloadCompactor(store, min_tokens=10).compact(out, 0, COUNTER) is None


# -- ToolResultOffloadCompactor's workflow path (the store activity), with workflow calls stubbed ------------


class FakeWorkflow:
    """Stands in for the temporalio.workflow calls the compactor makes, and the store activity."""

    def __init__(self, monkeypatch, outcomes: dict[int, BaseException] | None = None) -> None:
        self.requests: list[Any] = []
        self.outcomes = outcomes or {}
        self.store = FakeStore()
        self.uuids = 0
        monkeypatch.setattr(workflow, "in_workflow", lambda: True)
        monkeypatch.setattr(workflow, "info", lambda: type("Info", (), {"workflow_id": "run-7"})())
        monkeypatch.setattr(workflow, "uuid4", self.uuid4)
        monkeypatch.setattr(workflow, "instance", lambda: None)  # a workflow without a run context
        monkeypatch.setattr(offload_module, "store_result", self.store_result)
        monkeypatch.setattr(offload_module, "run_logger", lambda name: __import__("logging").getLogger(name))

    def uuid4(self) -> uuid.UUID:
        self.uuids += 1
        return uuid.UUID(int=self.uuids)

    async def store_result(self, request, deadline, summary=None):
        self.requests.append((request, deadline))
        outcome = self.outcomes.get(len(self.requests))
        if outcome is not None:
            raise outcome
        return self.store.write(key=request.key, content=request.content)


def activity_error(cause: BaseException) -> ActivityError:
    error = ActivityError(
        "store_tool_result failed",
        scheduled_event_id=1,
        started_event_id=2,
        identity="worker",
        activity_type="store_tool_result",
        activity_id="1",
        retry_state=RetryState.NON_RETRYABLE_FAILURE,
    )
    error.__cause__ = cause
    return error


async def test_in_a_workflow_writes_go_through_the_store_activity(monkeypatch, tmp_path):
    fake = FakeWorkflow(monkeypatch)
    store = FileSystemToolResultStore(tmp_path)
    compactor = ToolResultOffloadCompactor(store, min_tokens=10, write_deadline=timedelta(seconds=20))
    with pytest.raises(RuntimeError, match="compact_async"):
        compactor.compact(long_conversation(), 0, COUNTER)
    out = await compactor.compact_async(long_conversation(), 0, COUNTER)
    assert len(fake.requests) == 5 and sum(bool(m.meta.get(OFFLOADED_META_KEY)) for m in out) == 5
    request, deadline = fake.requests[0]
    assert deadline == timedelta(seconds=20)
    assert request.store == store.for_run("run-7").to_dict()  # scoped to the run, as read_tool_result reads
    assert request.key == f"compacted/step-0/search/c0-{uuid.UUID(int=1).hex[:12]}.txt"
    assert len({r.key for r, _ in fake.requests}) == 5


async def test_in_a_workflow_a_refused_key_skips_one_result_and_an_outage_stops_writing(monkeypatch):
    refused = activity_error(ApplicationError("bad key", type="NonRetryableStoreError", non_retryable=True))
    fake = FakeWorkflow(monkeypatch, outcomes={1: refused})
    out = await ToolResultOffloadCompactor(FakeStore(), min_tokens=10).compact_async(long_conversation(), 0, COUNTER)
    assert len(fake.requests) == 5  # the first was refused; the four others written
    assert [bool(m.meta.get(OFFLOADED_META_KEY)) for m in out if m.tool_call_result] == [False] + [True] * 4 + [False]

    outage = activity_error(TimeoutError("deadline", type=TimeoutType.SCHEDULE_TO_CLOSE, last_heartbeat_details=[]))
    fake = FakeWorkflow(monkeypatch, outcomes={2: outage})
    out = await ToolResultOffloadCompactor(FakeStore(), min_tokens=10).compact_async(long_conversation(), 0, COUNTER)
    assert len(fake.requests) == 2  # no write after the store kept failing until the deadline
    assert [bool(m.meta.get(OFFLOADED_META_KEY)) for m in out if m.tool_call_result] == [True] + [False] * 5

    fake = FakeWorkflow(monkeypatch, outcomes={1: outage})
    assert (
        await ToolResultOffloadCompactor(FakeStore(), min_tokens=10).compact_async(long_conversation(), 0, COUNTER)
        is None
    )


@pytest.mark.parametrize("seed", SEEDS[:6])
async def test_the_workflow_path_keeps_what_haystack_keeps(monkeypatch, seed):
    monkeypatch.setattr(h_offload_module, "_offloaded_message", ours_worded_offloaded_message)
    messages = random_conversation(seed)
    our_counter, their_counter = counters("approximate")
    total = our_counter.count(messages)
    for fraction in FRACTIONS:
        target = int(total * fraction)
        fake = FakeWorkflow(monkeypatch)
        ours = await ToolResultOffloadCompactor(FakeStore(), min_tokens=20).compact_async(messages, target, our_counter)
        theirs = HOffload(store=FakeStore(), min_tokens=20).compact(to_haystack(messages), target, their_counter)
        assert full_keys(ours) == full_keys(theirs), (seed, fraction)
        assert len(fake.store.writes) == (0 if ours is None else len(fake.requests))


# -- TiktokenCounter -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_tiktoken_counter_counts_as_tiktoken_token_counter_and_haystack(seed, encoding):
    from hooks.compaction.encodings import load_encoding

    messages = random_conversation(seed)
    theirs = HTiktoken(encoding=encoding)
    theirs._encoder = load_encoding(encoding)
    ours = TiktokenCounter(encoding)
    assert ours.count(messages) == TiktokenTokenCounter(encoding).count(messages) == theirs.count(to_haystack(messages))
    assert ours.count_text("hello world") == TiktokenTokenCounter(encoding).count_text("hello world")
    assert ours.count([]) == 0


def test_tiktoken_counter_has_haystacks_constructor():
    counter = TiktokenCounter()
    assert (counter.encoding, counter.tokens_per_image, counter.tokens_per_file) == ("o200k_base", 85, 1000)
    counter = TiktokenCounter(encoding="cl100k_base", tokens_per_image=100, tokens_per_file=5)
    data = json.loads(json.dumps(counter.to_dict()))
    assert data == {
        "type": "hooks.compaction.token_counters.TiktokenCounter",
        "init_parameters": {"encoding": "cl100k_base", "tokens_per_image": 100, "tokens_per_file": 5},
    }
    again = object_from_dict(data)
    assert isinstance(again, TiktokenCounter) and again.to_dict() == data
    assert isinstance(again, TiktokenTokenCounter)
    assert "tokens_per_image=100" in repr(again)
    with pytest.raises(ValueError, match="encoding"):
        TiktokenCounter("p50k_base")
    with pytest.raises(ValueError, match="tokens_per_image"):
        TiktokenCounter(tokens_per_image=-1)
    with pytest.raises(ValueError, match="tokens_per_file"):
        TiktokenCounter(tokens_per_file=1.5)

"""On the same conversation, target and token counter, our compactors keep exactly the messages
Haystack 3.x's keep (haystack-ai is installed for these tests only)."""

from __future__ import annotations

import pytest
from haystack.dataclasses import ChatMessage as HMessage
from haystack.hooks.compaction import CompactionHook as HCompactionHook
from haystack.hooks.compaction import SlidingWindowCompactor as HSlidingWindow
from haystack.hooks.compaction import SummarizationCompactor as HSummarization
from haystack.hooks.compaction import ToolResultPruningCompactor as HPruning
from haystack.token_counters import ApproximateTokenCounter as HApproximate
from haystack.token_counters import TiktokenCounter as HTiktoken
from haystack.token_counters.utils import _rendered_conversation, _rendered_tools

from core.messages import ChatMessage
from core.tools import ToolSpec
from hooks.compaction import (
    ApproximateTokenCounter,
    CompactionHook,
    SlidingWindowCompactor,
    SummarizationCompactor,
    TiktokenTokenCounter,
    ToolResultPruningCompactor,
)
from hooks.compaction.encodings import load_encoding
from hooks.compaction.rendering import render_conversation, render_tools
from hooks.compaction.summarization import summary_transcript
from tests.support.compaction_support import from_haystack, keys, random_conversation, to_haystack

pytestmark = pytest.mark.filterwarnings("ignore:.*experimental component")

SEEDS = range(12)
FRACTIONS = (0.95, 0.7, 0.5, 0.3, 0.15, 0.05, 0.0)
PRUNING_SETTINGS = [
    {},
    {"min_keep_steps": 2, "min_tokens": 10},
    {"min_tokens": 0, "placeholder": "[pruned {tool_name} {x}]"},
]
SUMMARY_SETTINGS = [{}, {"min_keep_steps": 0, "approximate_summary_tokens": 50}, {"min_keep_steps": 3}]


def counters(kind: str):
    if kind == "approximate":
        return ApproximateTokenCounter(chars_per_token=4.0), HApproximate(chars_per_token=4.0)
    theirs = HTiktoken(encoding="o200k_base")
    theirs._encoder = load_encoding("o200k_base")  # offline: hand Haystack's counter our locally built encoding
    return TiktokenTokenCounter("o200k_base"), theirs


@pytest.mark.parametrize("seed", SEEDS)
def test_rendering_and_counts_match(seed):
    ours = random_conversation(seed)
    theirs = to_haystack(ours)
    assert render_conversation(ours) == _rendered_conversation(theirs)
    assert render_conversation(ours, include_tool_call_ids=True) == _rendered_conversation(
        theirs, include_tool_call_ids=True
    )
    for kind in ("approximate", "tiktoken"):
        our_counter, their_counter = counters(kind)
        assert our_counter.count(ours) == their_counter.count(theirs)


def test_tool_schema_rendering_matches():
    from tests.support.compaction_support import haystack_tools

    specs = [
        ToolSpec(
            name="search",
            description="Search the web.",
            parameters={"type": "object", "properties": {"q": {"type": "string"}}},
        ),
        ToolSpec(name="read", description="Read a file."),
    ]
    assert render_tools(specs) == _rendered_tools(haystack_tools(specs))
    assert render_tools([s.model_dump() for s in specs]) == render_tools(specs)


def run_both(ours_compactor, theirs_compactor, kind, messages, fraction):
    our_counter, their_counter = counters(kind)
    total = our_counter.count(messages)
    target = int(total * fraction)
    theirs_in = to_haystack(messages)
    ours_out = ours_compactor.compact(list(messages), target, our_counter)
    theirs_out = theirs_compactor.compact(theirs_in, target, their_counter)
    return ours_out, theirs_out


@pytest.mark.parametrize("kind", ["approximate", "tiktoken"])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("min_keep_steps", [0, 1, 2])
def test_sliding_window_keeps_what_haystack_keeps(seed, kind, min_keep_steps):
    messages = random_conversation(seed)
    for note in (SlidingWindowCompactor().omission_note, None, "[{num_removed} gone {json: 1}]"):
        for fraction in FRACTIONS:
            ours = SlidingWindowCompactor(min_keep_steps=min_keep_steps, omission_note=note)
            theirs = HSlidingWindow(min_keep_steps=min_keep_steps, omission_note=note)
            ours_out, theirs_out = run_both(ours, theirs, kind, messages, fraction)
            assert keys(ours_out) == keys(theirs_out), (seed, fraction, note)


@pytest.mark.parametrize("seed", SEEDS)
def test_sliding_window_repeated_compaction_matches(seed):
    """Compact, continue the conversation, compact again: earlier notes are folded the same way."""
    messages = random_conversation(seed, turns=3)
    counter, h_counter = counters("approximate")
    ours, theirs = SlidingWindowCompactor(), HSlidingWindow()
    h_messages = to_haystack(messages)
    extra = random_conversation(seed + 100, turns=2)[1:]
    for round_ in range(4):
        target = int(counter.count(messages) * 0.4)
        ours_out = ours.compact(messages, target, counter)
        theirs_out = theirs.compact(h_messages, target, h_counter)
        assert keys(ours_out) == keys(theirs_out), round_
        messages = (ours_out or messages) + extra[round_ * 3 : round_ * 3 + 3]
        h_messages = (theirs_out or h_messages) + to_haystack(extra[round_ * 3 : round_ * 3 + 3])


@pytest.mark.parametrize("kind", ["approximate", "tiktoken"])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("settings", PRUNING_SETTINGS)
def test_pruning_keeps_what_haystack_keeps(seed, kind, settings):
    messages = random_conversation(seed)
    for fraction in FRACTIONS:
        ours_out, theirs_out = run_both(
            ToolResultPruningCompactor(**settings), HPruning(**settings), kind, messages, fraction
        )
        assert keys(ours_out) == keys(theirs_out), (seed, fraction)
        if ours_out is not None:
            assert [m.meta for m in ours_out] == [m.meta for m in theirs_out]


class ScriptedSummaries:
    """The same deterministic 'model' for both sides: the summary depends only on the transcript."""

    def __init__(self, size: int = 20, fail_at: int | None = None) -> None:
        self.size = size
        self.fail_at = fail_at
        self.transcripts: list[str] = []

    def text(self, transcript: str) -> str:
        self.transcripts.append(transcript)
        if self.fail_at is not None and len(self.transcripts) == self.fail_at:
            raise RuntimeError("model unavailable")
        return f"summary #{len(self.transcripts)} of {len(transcript)} chars " + "x" * self.size


class HaystackGenerator:
    def __init__(self, summaries: ScriptedSummaries) -> None:
        self.summaries = summaries

    def run(self, messages):
        return {"replies": [HMessage.from_assistant(self.summaries.text(messages[-1].text))]}


class OurSummarizer(SummarizationCompactor):
    """Ours, with the model activity replaced by the same scripted summaries (no workflow in these tests)."""

    def __init__(self, summaries: ScriptedSummaries, **kwargs) -> None:
        super().__init__(model="scripted", **kwargs)
        self.summaries = summaries

    async def summarize(self, prompt):
        return self.summaries.text(prompt[-1].text)


@pytest.mark.parametrize("kind", ["approximate", "tiktoken"])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("settings", SUMMARY_SETTINGS)
async def test_summarization_keeps_what_haystack_keeps(seed, kind, settings):
    messages = random_conversation(seed, turns=5)
    our_counter, their_counter = counters(kind)
    total = our_counter.count(messages)
    for fraction in FRACTIONS:
        target = int(total * fraction)
        our_model, their_model = ScriptedSummaries(), ScriptedSummaries()
        ours = await OurSummarizer(our_model, **settings).compact_async(list(messages), target, our_counter)
        theirs = HSummarization(chat_generator=HaystackGenerator(their_model), **settings).compact(
            to_haystack(messages), target, their_counter
        )
        assert keys(ours) == keys(theirs), (seed, fraction)
        # the model was asked to summarise the same transcripts
        assert our_model.transcripts == their_model.transcripts


@pytest.mark.parametrize("seed", SEEDS[:6])
async def test_summarization_partial_failure_matches(seed):
    messages = random_conversation(seed, turns=5)
    counter, h_counter = counters("approximate")
    target = int(counter.count(messages) * 0.1)
    for fail_at, size in ((2, 20), (1, 20), (None, 200_000)):
        our_model, their_model = ScriptedSummaries(size, fail_at), ScriptedSummaries(size, fail_at)
        ours = await OurSummarizer(our_model).compact_async(list(messages), target, counter)
        theirs = HSummarization(chat_generator=HaystackGenerator(their_model)).compact(
            to_haystack(messages), target, h_counter
        )
        assert keys(ours) == keys(theirs), (seed, fail_at, size)


@pytest.mark.parametrize("seed", SEEDS)
def test_summary_planning_matches_on_compacted_conversations(seed):
    """Plans over conversations that already hold summaries (all four tiers get exercised)."""
    messages = random_conversation(seed, turns=4)
    counter, h_counter = counters("approximate")
    summaries = ScriptedSummaries()
    ours = OurSummarizer(summaries, min_keep_steps=1, approximate_summary_tokens=10)
    theirs = HSummarization(
        chat_generator=HaystackGenerator(ScriptedSummaries()), min_keep_steps=1, approximate_summary_tokens=10
    )
    for _ in range(30):
        target = int(counter.count(messages) * 0.6)
        plan = ours.plan(messages, target, counter)
        assert plan == theirs._next_summary(to_haystack(messages), target, h_counter)
        if plan is None:
            break
        prompt = ours.prompt(messages, plan)
        assert prompt[-1].text == theirs._prompt(to_haystack(messages), plan)[-1].text
        assert summary_transcript([messages[i] for i in plan]) in prompt[-1].text
        messages, _ = ours.apply_summary(messages, plan, "s", counter.count(messages) + 10**6, counter)
    assert plan is None  # reached the floor


@pytest.mark.parametrize("kind", ["approximate", "tiktoken"])
@pytest.mark.parametrize("seed", SEEDS)
def test_hook_target_arithmetic_matches(seed, kind):
    from tests.support.compaction_support import haystack_tools

    messages = random_conversation(seed)
    specs = [ToolSpec(name="search", description="Search.", parameters={"type": "object", "properties": {}})]
    our_counter, their_counter = counters(kind)
    total = our_counter.count(messages, specs)
    for context_tokens in (0, total // 2, total, total * 2):
        for window in (total // 2, total, total * 2, total * 4):
            ours = CompactionHook(SlidingWindowCompactor(), context_window=max(window, 1), token_counter=our_counter)
            theirs = HCompactionHook(HSlidingWindow(), context_window=max(window, 1), token_counter=their_counter)
            assert ours.target_tokens(messages, context_tokens, specs) == theirs._target_tokens(
                to_haystack(messages), context_tokens, haystack_tools(specs)
            )


def test_round_trip_conversion_is_lossless():
    messages = random_conversation(3)
    assert from_haystack(to_haystack(messages)) == messages
    assert isinstance(messages[0], ChatMessage)


@pytest.mark.parametrize("seed", range(4))
def test_every_target_gives_the_same_result(seed):
    """A sweep of every target hits the exact-fit boundaries (a group that fits with no token to spare)."""
    messages = random_conversation(seed, turns=3, max_steps=3, result_lines=(1, 3, 10, 30))
    counter, h_counter = counters("approximate")
    h_messages = to_haystack(messages)
    pairs = [
        (SlidingWindowCompactor(min_keep_steps=0), HSlidingWindow(min_keep_steps=0)),
        (SlidingWindowCompactor(min_keep_steps=1), HSlidingWindow(min_keep_steps=1)),
        (ToolResultPruningCompactor(min_tokens=0), HPruning(min_tokens=0)),
    ]
    for target in range(0, counter.count(messages) + 2):
        for ours, theirs in pairs:
            assert keys(ours.compact(messages, target, counter)) == keys(theirs.compact(h_messages, target, h_counter))

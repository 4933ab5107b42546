"""Each compactor's rules: None unless smaller, a new list, tool calls kept with their results; and
what each strategy keeps, prunes or summarises (the summariser's tiers and floor)."""

from __future__ import annotations

import pytest

from core.messages import ChatMessage
from hooks.compaction import (
    ApproximateTokenCounter,
    SlidingWindowCompactor,
    SummarizationCompactor,
    ToolResultPruningCompactor,
)
from hooks.compaction.summarization import SummaryError, is_summary
from tests.support.compaction_support import assert_pairs_intact, parallel_step, random_conversation, step

COUNTER = ApproximateTokenCounter()
BIG = "lorem ipsum " * 400  # ~1,200 tokens
SMALL = "ok"


class CountingCounter(ApproximateTokenCounter):
    """Records how many messages each count call measured."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def count(self, messages, tools=None):
        self.calls.append(len(messages))
        return super().count(messages, tools)


def task_conversation(n_steps: int, result: str = BIG) -> list[ChatMessage]:
    messages = [ChatMessage.from_system("Be brief."), ChatMessage.from_user("Do the task.")]
    for i in range(n_steps):
        messages += step(f"c{i}", result)
    return messages


def history_conversation(n_turns: int) -> list[ChatMessage]:
    messages = [ChatMessage.from_system("Be brief.")]
    for t in range(n_turns):
        messages += [ChatMessage.from_user(f"question {t}"), *step(f"h{t}", BIG)]
        messages.append(ChatMessage.from_assistant(f"answer {t}"))
    return [*messages, ChatMessage.from_user("current task")]


ALL_SYNC = [SlidingWindowCompactor(), ToolResultPruningCompactor(), SlidingWindowCompactor(omission_note=None)]


# --- the three rules, for every compactor ---------------------------------------------------------------------


@pytest.mark.parametrize("compactor", ALL_SYNC, ids=lambda c: type(c).__name__)
def test_returns_none_when_already_under_target(compactor):
    messages = task_conversation(3)
    assert compactor.compact(messages, COUNTER.count(messages), COUNTER) is None
    assert compactor.compact(messages, COUNTER.count(messages) + 1000, COUNTER) is None


@pytest.mark.parametrize("compactor", ALL_SYNC, ids=lambda c: type(c).__name__)
@pytest.mark.parametrize("seed", range(8))
def test_result_is_new_smaller_list_and_input_untouched(compactor, seed):
    messages = random_conversation(seed)
    snapshot = list(messages)
    before = COUNTER.count(messages)
    for fraction in (0.8, 0.5, 0.2, 0.0):
        out = compactor.compact(messages, int(before * fraction), COUNTER)
        assert messages == snapshot  # rule 2: the caller's list is left alone
        if out is not None:
            assert out is not messages
            assert COUNTER.count(out) < before  # rule 1
            assert_pairs_intact(out)  # rule 3


@pytest.mark.parametrize("seed", range(8))
async def test_summariser_keeps_rules(seed):
    messages = random_conversation(seed, turns=5)
    snapshot = list(messages)
    before = COUNTER.count(messages)
    out = await Scripted().compact_async(messages, int(before * 0.3), COUNTER)
    assert messages == snapshot
    assert out is not None and out is not messages and COUNTER.count(out) < before
    assert_pairs_intact(out)


# --- sliding window -------------------------------------------------------------------------------------------


def test_sliding_window_drops_oldest_steps_keeps_anchor_and_newest_step():
    messages = task_conversation(5)
    out = SlidingWindowCompactor().compact(messages, COUNTER.count(messages[:2] + messages[-4:]) + 5, COUNTER)
    assert out[0].text == "Be brief." and out[1].text == "Do the task."
    note = out[2]
    assert note.role.value == "user" and "6 earlier messages" in note.text
    assert note.meta["context_compaction"] == {"strategy": "sliding_window", "removed_messages": 6, "kept_messages": 6}
    assert [m.tool_call.id for m in out[3:] if m.tool_calls] == ["c3", "c4"]


def test_sliding_window_min_keep_steps_overrides_target():
    messages = task_conversation(4)
    for keep in (0, 1, 3):
        out = SlidingWindowCompactor(min_keep_steps=keep, omission_note=None).compact(messages, 0, COUNTER)
        assert len([m for m in out if m.tool_calls]) == keep
        assert out[:2] == messages[:2]


def test_sliding_window_drops_history_before_task_steps_and_puts_note_after_instructions():
    messages = history_conversation(3)
    target = COUNTER.count(messages) - 10
    out = SlidingWindowCompactor().compact(messages, target, COUNTER)
    # the oldest complete turn went; the note is right after the system prompt; the task anchor stays
    assert out[1].meta["context_compaction"]["removed_messages"] == 4
    assert [m.text for m in out if m.role.value == "user" and "context_compaction" not in m.meta] == [
        "question 1",
        "question 2",
        "current task",
    ]


def test_sliding_window_folds_previous_note_and_declines_to_swap_notes():
    messages = task_conversation(5)
    compactor = SlidingWindowCompactor()
    first = compactor.compact(messages, 3000, COUNTER)
    assert sum("context_compaction" in m.meta for m in first) == 1
    # again at a target that keeps the same steps: only the old note would go, so it declines
    assert compactor.compact(first, COUNTER.count(first) - 1, COUNTER) is None
    second = compactor.compact(first + step("c9", BIG), 3000, COUNTER)
    notes = [m for m in second if "context_compaction" in m.meta]
    assert len(notes) == 1 and notes[0].meta["context_compaction"]["removed_messages"] == 3  # 2 msgs + old note


def test_sliding_window_keeps_parallel_results_with_their_call():
    messages = [ChatMessage.from_user("go"), *parallel_step(["a", "b", "c"], BIG), *parallel_step(["d", "e"], BIG)]
    out = SlidingWindowCompactor(omission_note=None).compact(messages, 10, COUNTER)
    assert [m.tool_call_result.origin.id for m in out if m.tool_call_results] == ["d", "e"]
    assert_pairs_intact(out)


def test_sliding_window_note_placeholder_uses_replace_not_format():
    messages = task_conversation(3)
    out = SlidingWindowCompactor(omission_note='{"removed": {num_removed}}').compact(messages, 10, COUNTER)
    assert out[2].text == '{"removed": 4}'


def test_sliding_window_validation():
    with pytest.raises(ValueError, match="min_keep_steps"):
        SlidingWindowCompactor(min_keep_steps=-1)


# --- tool result pruning --------------------------------------------------------------------------------------


def test_pruning_prunes_oldest_first_and_stops_at_target():
    messages = task_conversation(4)
    one_result = COUNTER.count([messages[3]])
    out = ToolResultPruningCompactor().compact(messages, COUNTER.count(messages) - one_result // 2, COUNTER)
    results = [m for m in out if m.tool_call_results]
    assert results[0].tool_call_result.result.startswith("[Tool result removed")
    assert "search" in results[0].tool_call_result.result
    assert [r.tool_call_result.result for r in results[1:]] == [BIG] * 3  # stopped once under target
    assert results[0].meta["context_compaction"]["strategy"] == "tool_result_pruning"
    assert results[0].tool_call_result.origin == messages[3].tool_call_result.origin
    assert len(out) == len(messages)


def test_pruning_never_touches_newest_steps_small_offloaded_or_already_pruned():
    messages = task_conversation(1, SMALL) + task_conversation(1)[2:]
    offloaded_origin = messages[-2].tool_call
    messages[-1] = ChatMessage.from_tool(BIG, offloaded_origin, meta={"tool_result_offloaded": True})
    messages += step("new1", BIG) + step("new2", BIG)
    out = ToolResultPruningCompactor(min_keep_steps=2).compact(messages, 0, COUNTER)
    assert out is None  # small result, offloaded result, and the two newest steps: nothing prunable
    once = ToolResultPruningCompactor(min_keep_steps=1).compact(messages, 0, COUNTER)
    assert [m.tool_call_result.origin.id for m in once if "context_compaction" in m.meta] == ["new1"]
    assert ToolResultPruningCompactor(min_keep_steps=1).compact(once, 0, COUNTER) is None


def test_pruning_keeps_error_flag_and_skips_placeholder_bigger_than_result():
    origin = step("x", BIG)[0].tool_call
    messages = [
        ChatMessage.from_user("go"),
        ChatMessage.from_assistant(tool_calls=[origin]),
        ChatMessage.from_tool(BIG, origin, error=True),
        *step("y", BIG),
    ]
    out = ToolResultPruningCompactor().compact(messages, 0, COUNTER)
    assert out[2].tool_call_result.error is True
    huge = ToolResultPruningCompactor(placeholder="p" * 10_000, min_tokens=0)
    assert huge.compact(messages, 0, COUNTER) is None


def test_pruning_keeps_a_running_total_instead_of_recounting():
    messages = task_conversation(30)
    counter = CountingCounter()
    ToolResultPruningCompactor().compact(messages, 0, counter)
    # one count of the whole conversation, then single-message counts (original and placeholder) only
    assert counter.calls[0] == len(messages)
    assert all(n == 1 for n in counter.calls[1:])
    assert len(counter.calls) == 1 + 2 * 29


def test_pruning_validation():
    with pytest.raises(ValueError, match="min_keep_steps"):
        ToolResultPruningCompactor(min_keep_steps=0)
    with pytest.raises(ValueError, match="min_tokens"):
        ToolResultPruningCompactor(min_tokens=-1)


# --- summarisation --------------------------------------------------------------------------------------------


class Scripted(SummarizationCompactor):
    """Our summariser with its model activity replaced by scripted replies (no workflow here)."""

    def __init__(self, replies=None, **kwargs):
        super().__init__(model="scripted", **kwargs)
        self.replies = list(replies or [])
        self.prompts = []

    async def summarize(self, prompt):
        self.prompts.append(prompt)
        if self.replies:
            reply = self.replies.pop(0)
            if isinstance(reply, Exception):
                raise reply
            return reply
        return "short summary"


def test_summary_tiers_in_order():
    c = Scripted(min_keep_steps=1, approximate_summary_tokens=5)
    messages = history_conversation(3) + step("t0", BIG) + step("t1", BIG) + step("t2", BIG)
    # tier 1: historical turns first, the fewest oldest that reach the target
    plan = c.plan(messages, COUNTER.count(messages) - 100, COUNTER)
    assert plan == [1, 2, 3, 4]
    # after every turn is summarised twice over, tier 2 combines historical summaries (at least two)
    m = c.apply_summary(messages, [1, 2, 3, 4], "s1", 10**9, COUNTER)[0]
    m = c.apply_summary(m, [2, 3, 4, 5], "s2", 10**9, COUNTER)[0]
    m = c.apply_summary(m, [3, 4, 5, 6], "s3", 10**9, COUNTER)[0]
    assert [is_summary(x) for x in m[1:4]] == [True, True, True]
    assert c.plan(m, COUNTER.count(m) - 1, COUNTER) == [1, 2]
    m = c.apply_summary(m, [1, 2, 3], "h", 10**9, COUNTER)[0]
    # tier 3: current-task steps, keeping the newest min_keep_steps
    task = m.index(next(x for x in m if x.text == "current task"))
    plan = c.plan(m, 0, COUNTER)
    assert plan == list(range(task + 1, task + 5))  # t0 and t1, not t2
    m = c.apply_summary(m, plan[:2], "t-a", 10**9, COUNTER)[0]
    m = c.apply_summary(m, [task + 2, task + 3], "t-b", 10**9, COUNTER)[0]
    # tier 4: no step may go, so the task's summaries are combined
    assert c.plan(m, 0, COUNTER) == [task + 1, task + 2]
    m = c.apply_summary(m, [task + 1, task + 2], "t", 10**9, COUNTER)[0]
    # the floor: system, one historical summary, the task, one task summary, the newest step
    assert c.plan(m, 0, COUNTER) is None
    assert [x.role.value for x in m] == ["system", "user", "user", "user", "assistant", "tool"]
    assert [is_summary(x) for x in m] == [False, True, False, True, False, False]


async def test_summariser_floor_returns_none_however_small_the_target():
    messages = [ChatMessage.from_system("s"), ChatMessage.from_user("task"), *step("only", BIG)]
    c = Scripted()
    assert await c.compact_async(messages, 0, COUNTER) is None
    assert c.prompts == []


async def test_summary_message_shape_and_prompt():
    messages = task_conversation(4)
    c = Scripted(replies=["  the gist  "])
    out = await c.compact_async(messages, COUNTER.count(messages) - 100, COUNTER)
    summary = out[2]
    assert summary.role.value == "user"
    assert summary.text == "<conversation_summary>\nthe gist\n</conversation_summary>"
    assert summary.meta["context_compaction"] == {"strategy": "summarization", "summarized_messages": 2}
    system, user = c.prompts[0]
    assert system.role.value == "system" and system.text == c.summary_instruction
    assert user.text.startswith("<conversation_to_summarize>\n[assistant -> tool_call id=c0] search(")
    assert "[tool:search id=c0] lorem" in user.text


async def test_summariser_failure_keeps_successful_part_or_raises():
    messages = history_conversation(4) + step("t0", BIG) + step("t1", BIG)
    ok_then_fail = Scripted(replies=["first", RuntimeError("model down")])
    out = await ok_then_fail.compact_async(messages, 0, COUNTER)
    assert out is not None and sum(is_summary(m) for m in out) == 1
    assert len(ok_then_fail.prompts) == 2
    # a summary that does not shrink the conversation counts as a failure
    too_long = Scripted(replies=["x" * 10**6])
    assert await too_long.compact_async(messages, 0, COUNTER) is None
    empty = Scripted(replies=["   "], raise_on_failure=True)
    with pytest.raises(SummaryError, match="no text"):
        await empty.compact_async(messages, 0, COUNTER)
    with pytest.raises(RuntimeError, match="model down"):
        await Scripted(replies=[RuntimeError("model down")], raise_on_failure=True).compact_async(messages, 0, COUNTER)


async def test_summariser_outside_workflow_says_it_needs_one():
    # the real model call needs a workflow: outside one both paths say so, whatever raise_on_failure says
    messages = task_conversation(4)
    for raise_on_failure in (False, True):
        with pytest.raises(RuntimeError, match="needs an AgentWorkflow run"):
            await SummarizationCompactor(model="m", raise_on_failure=raise_on_failure).compact_async(
                messages, 0, COUNTER
            )
    with pytest.raises(RuntimeError, match="needs an AgentWorkflow run"):
        SummarizationCompactor(model="m").compact(messages, 0, COUNTER)


def test_summariser_validation_and_round_trip():
    with pytest.raises(ValueError, match="min_keep_steps"):
        SummarizationCompactor(model="m", min_keep_steps=-1)
    with pytest.raises(ValueError, match="approximate_summary_tokens"):
        SummarizationCompactor(model="m", approximate_summary_tokens=0)
    with pytest.raises(ValueError, match="model"):
        SummarizationCompactor(model="")
    c = SummarizationCompactor(model="m", min_keep_steps=2, raise_on_failure=True, model_settings={"max_tokens": 300})
    again = SummarizationCompactor.from_dict(c.to_dict())
    assert again.to_dict() == c.to_dict() and again.model_settings == {"max_tokens": 300}


@pytest.mark.parametrize(
    "compactor",
    [
        SlidingWindowCompactor(min_keep_steps=3, omission_note=None),
        ToolResultPruningCompactor(min_keep_steps=2, min_tokens=5, placeholder="p", skip_meta_keys=("a", "b")),
    ],
    ids=lambda c: type(c).__name__,
)
def test_compactor_round_trip(compactor):
    from core.serialization import object_from_dict

    data = compactor.to_dict()
    again = object_from_dict(data)
    assert type(again) is type(compactor) and again.to_dict() == data
    assert again.__dict__ == compactor.__dict__

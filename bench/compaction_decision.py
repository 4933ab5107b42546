"""Benchmark: CompactionHook's per-step decision cost on a 200k-token conversation.

The decision (is the conversation over ``compact_at`` of the window?) runs before every model call.
It reads the ``context_tokens`` anchor the run loop records from the last reply and counts only
the messages appended since, so it must not grow with the conversation. Target: <= 1 ms.

Printed side by side, measured in this run: the decision with the anchor (no compaction needed),
the same decision with no anchor (a full recount, what it would cost without one), and one
tiktoken encode of the whole conversation, as ratios.

Run: ``.venv/bin/python -m bench.compaction_decision``
"""

from __future__ import annotations

import random
import statistics
import time

from core.messages import ChatMessage, ToolCall
from core.state import State
from core.tools import ToolSpec
from hooks.compaction import (
    ApproximateTokenCounter,
    CompactionHook,
    SlidingWindowCompactor,
    TiktokenTokenCounter,
)
from hooks.compaction.encodings import load_encoding
from hooks.compaction.rendering import render_conversation

TARGET_TOKENS = 200_000
WORDS = (
    "agent",
    "durable",
    "workflow",
    "result",
    "file",
    "path",
    "error",
    "value",
    "the",
    "of",
    "and",
    "to",
    "parse",
    "config",
    "retry",
    "timeout",
    "server",
    "request",
    "2024",
    "0x1f",
    "id=42",
    "{json}",
    "ok",
)


def conversation(counter: TiktokenTokenCounter) -> list[ChatMessage]:
    rng = random.Random(7)
    messages = [ChatMessage.from_system("You are a careful agent."), ChatMessage.from_user("Audit the repository.")]
    tokens = counter.count(messages)
    step = 0
    while tokens < TARGET_TOKENS:
        call = ToolCall(tool_name="read_file", arguments={"path": f"src/module_{step}.py"}, id=f"call_{step}")
        result = " ".join(rng.choice(WORDS) for _ in range(rng.randint(200, 1200)))
        new = [ChatMessage.from_assistant(tool_calls=[call]), ChatMessage.from_tool(result, call)]
        messages += new
        tokens += counter.count(new)
        step += 1
    return messages


def median_seconds(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    tiktoken_counter = TiktokenTokenCounter("o200k_base")
    load_encoding("o200k_base")  # loaded once per worker process, at start-up
    messages = conversation(tiktoken_counter)
    text = render_conversation(messages)
    encoding = load_encoding("o200k_base")
    total = len(encoding.encode_ordinary(text))
    tools = [ToolSpec(name="read_file", description="Read a file.")]
    overhead = 40
    anchor = tiktoken_counter.count(messages[:-1]) + overhead  # what the provider reported for the last reply

    encode_s = median_seconds(lambda: encoding.encode_ordinary(text), 5)
    print(f"conversation: {len(messages)} messages, {total} tokens (o200k_base), {len(text)} characters")
    print(f"one tiktoken encode of the whole conversation: {encode_s * 1e3:.2f} ms (median of 5)")
    print()
    print(f"{'decision (no compaction needed)':58} {'median':>10} {'vs encode':>10}")
    counters = (("TiktokenTokenCounter", tiktoken_counter), ("ApproximateTokenCounter", ApproximateTokenCounter()))
    cases = (("anchor + new messages", anchor, 2000), ("no anchor: full recount", 0, 5))
    for name, counter in counters:
        hook = CompactionHook(SlidingWindowCompactor(), context_window=400_000, token_counter=counter)
        for label, context_tokens, repeat in cases:
            state = State(data={"messages": messages, "context_tokens": context_tokens, "tools": tools})
            seconds = median_seconds(lambda h=hook, s=state: h.run(s), repeat)
            assert state.data["messages"] is messages  # nothing was compacted
            print(f"{name + ', ' + label:58} {seconds * 1e3:8.4f} ms {seconds / encode_s:10.5f}")
    hook = CompactionHook(SlidingWindowCompactor(), context_window=400_000, token_counter=tiktoken_counter)
    state = State(data={"messages": messages, "context_tokens": anchor, "tools": tools})
    decision_s = median_seconds(lambda: hook.run(state), 2000)
    verdict = "meets" if decision_s <= 1e-3 else "MISSES"
    print()
    print(
        f"anchored tiktoken decision: {decision_s * 1e3:.4f} ms, {encode_s / decision_s:.0f}x cheaper than one "
        f"full encode; {verdict} the 1 ms target on this machine"
    )


if __name__ == "__main__":
    main()

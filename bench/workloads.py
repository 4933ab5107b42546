"""What the benchmarks run: their tools and the long run's agent (the long-run test uses the same
agent, imported from here, so the bench measures what CI checks)."""

from __future__ import annotations

from agent import Agent, tool
from hooks.compaction import (
    ApproximateTokenCounter,
    CompactionHook,
    SlidingWindowCompactor,
    ToolResultPruningCompactor,
)

#: The long run's context window (tokens): small, so compaction fires every few steps.
CONTEXT_WINDOW = 2_000
#: The long run's steps.
STEPS = 1_000


@tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@tool
def big_text(size: int) -> str:
    """Return ``size`` characters of text."""
    return ("0123456789abcdef" * (size // 16 + 1))[:size]


BENCH_TOOLS = [echo, big_text]


def long_run_agent(model: str, steps: int = STEPS) -> Agent:
    """The agent of the long run: one echo step after another, compacted before the model sees 70% of the window.

    Old tool results are pruned first; the sliding window then drops old steps. Both count with
    ``ApproximateTokenCounter`` (no tokenizer: the decision stays cheap).
    """
    counter = ApproximateTokenCounter()
    compaction = [
        CompactionHook(
            ToolResultPruningCompactor(min_keep_steps=3, min_tokens=20),
            context_window=CONTEXT_WINDOW,
            token_counter=counter,
        ),
        CompactionHook(SlidingWindowCompactor(min_keep_steps=2), context_window=CONTEXT_WINDOW, token_counter=counter),
    ]
    return Agent(
        model=model,
        tools=[echo],
        system_prompt="You echo text, one step at a time.",
        hooks={"before_llm": compaction},
        max_agent_steps=steps + 10,
    )


def long_run_script(steps: int = STEPS) -> list[dict]:
    """The scripted model's replies for the long run: ``steps - 1`` echo calls, then a text answer."""
    return [{"tool_calls": [{"name": "echo", "arguments": {"text": "x" * 200}}], "times": steps - 1}, {"text": "done"}]

"""Tools the test worker holds, and module-level hooks the tests register (hooks travel by
import path, so they must live in an importable module)."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
from pathlib import Path

from core.messages import ChatMessage
from core.state import State, replace_values
from core.tools import current_tool_context, tool
from hooks import hook


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


@tool
def finish(answer: str) -> str:
    """Submit the final answer (used as an exit condition)."""
    return f"final: {answer}"


@tool
async def record(label: str, seconds: float = 0.0) -> str:
    """Sleep, then append one line (label, idempotency key, attempt) to $SIDE_EFFECTS_FILE."""
    context = current_tool_context()
    path = Path(os.environ.get("SIDE_EFFECTS_FILE", "side-effects.jsonl"))
    started = path.with_suffix(".started")
    with started.open("a") as f:
        f.write(json.dumps({"label": label, "key": context.idempotency_key, "attempt": context.attempt}) + "\n")
    await asyncio.sleep(seconds)
    with path.open("a") as f:
        f.write(json.dumps({"label": label, "key": context.idempotency_key, "attempt": context.attempt}) + "\n")
    return f"recorded {label}"


@tool
def big_text(size: int) -> str:
    """Return `size` characters of text."""
    return ("0123456789abcdef" * (size // 16 + 1))[:size]


TEST_TOOLS = [add, echo, explode, finish, record, big_text]


# -- hooks that record the order they ran in, in a state_schema key "trace" ------------------


def _trace(state: State, point: str) -> None:
    state.set("trace", [f"{point}@{state.data['step_count']}"])


@hook
def trace_before_run(state: State) -> None:
    _trace(state, "before_run")


@hook
def trace_before_llm(state: State) -> None:
    _trace(state, "before_llm")


@hook
def trace_before_tool(state: State) -> None:
    _trace(state, "before_tool")


@hook
def trace_after_tool(state: State) -> None:
    _trace(state, "after_tool")


@hook
def trace_on_exit(state: State) -> None:
    _trace(state, "on_exit")


@hook
def trace_after_run(state: State) -> None:
    _trace(state, "after_run")


@hook
def remove_all_tool_calls(state: State) -> None:
    """before_tool: drop the pending tool calls (the model's message keeps only its text)."""
    messages = state.get("messages")
    last = messages[-1]
    messages[-1] = last.with_updates(tool_calls=[])
    state.set("messages", messages, handler_override=replace_values)


@hook
def double_add_arguments(state: State) -> None:
    """before_tool: rewrite every `add` call to add 100 to `a`."""
    messages = state.get("messages")
    last = messages[-1]
    calls = [
        c.model_copy(update={"arguments": {**c.arguments, "a": c.arguments["a"] + 100}}) if c.tool_name == "add" else c
        for c in last.tool_calls
    ]
    messages[-1] = last.with_updates(tool_calls=calls)
    state.set("messages", messages, handler_override=replace_values)


@hook
def continue_once(state: State) -> None:
    """on_exit: keep a text-only run going once, with a nudge."""
    if state.data.get("nudged", 0) == 0:
        state.set("nudged", 1)
        state.set("messages", [ChatMessage.from_user("Keep going.")])
        state.set("continue_run", True)


@hook
def always_continue(state: State) -> None:
    """on_exit: keep going forever (bounded only by max_agent_steps or stop_run)."""
    state.set("continue_run", True)


@hook
def stop_at_step_two(state: State) -> None:
    """before_llm: stop the run before the third model call."""
    if state.data["step_count"] >= 2:
        state.set("stop_run", "custom_stop")


@hook
def stop_in_after_tool(state: State) -> None:
    """after_tool: request a stop in the same step a tool exit condition fires."""
    state.set("stop_run", "custom_stop")


@hook
async def async_marker(state: State) -> None:
    """An async hook (awaited in the workflow)."""
    await _noop()
    state.set("trace", ["async_marker"])


async def _noop() -> None:
    return None


@hook
def prune_first_tool_result(state: State) -> None:
    """before_llm: from step 3 on, replace the first tool result's text (as compaction would)."""
    if state.data["step_count"] < 3:
        return
    messages = state.get("messages")
    for index, message in enumerate(messages):
        if message.tool_call_result is not None:
            if message.tool_call_result.result != "[pruned]":
                messages[index] = ChatMessage.from_tool("[pruned]", origin=message.tool_call_result.origin)
                state.set("messages", messages, handler_override=replace_values)
            return


def raise_value_error(state: State) -> None:
    """A hook with a bug: it raises (the run must end, naming it)."""
    raise ValueError("boom from a hook")


def read_the_wall_clock(state: State) -> None:
    """A hook that breaks determinism: the sandbox refuses ``datetime.now()``, so the workflow task retries."""
    state.set("hook_context", {"now": datetime.datetime.now().isoformat()})


class OffloadLongResultsInTheWorkflow:
    """An offload policy that reads State, so ToolResultOffloadHook decides (and writes) in the
    workflow, in its turn, instead of inside the tool activity."""

    decides_without_state = False

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        return len(result) > 100 and state is not None

    def to_dict(self) -> dict:
        return {"type": "tests.tools.OffloadLongResultsInTheWorkflow", "init_parameters": {}}

    @classmethod
    def from_dict(cls, data: dict) -> OffloadLongResultsInTheWorkflow:
        return cls()


class LifecycleProbe:
    """A hook with warm_up/close (the run loop calls them once per workflow run); ``run`` records
    how many times it was warmed up, ``close`` can be told to fail."""

    def __init__(self, fail_on_close: bool = False) -> None:
        self.fail_on_close = fail_on_close
        self.warmed = 0

    def warm_up(self) -> None:
        self.warmed += 1

    def run(self, state: State) -> None:
        state.set("trace", [f"warmed={self.warmed}"])

    def close(self) -> None:
        if self.fail_on_close:
            raise RuntimeError("closing failed")

    def to_dict(self) -> dict:
        return {"type": "tests.tools.LifecycleProbe", "init_parameters": {"fail_on_close": self.fail_on_close}}

    @classmethod
    def from_dict(cls, data: dict) -> LifecycleProbe:
        return cls(**data["init_parameters"])

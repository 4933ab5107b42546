"""ToolResultOffloadHook's decisions, driven directly (plan/apply, and run() with a real store).

The workflow path (run_async awaiting the store_tool_result activity) shares plan() and apply()
and is exercised end to end against the real Temporal server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent import Agent, ChatMessage, State, ToolCall
from core.serialization import default_to_dict, object_from_dict
from hooks.tool_result_offloading import (
    OFFLOADED_META_KEY,
    RESULT_STORE_CONTEXT_KEY,
    AlwaysOffload,
    FileSystemToolResultStore,
    NeverOffload,
    OffloadOverChars,
    OffloadPolicyBase,
    ToolResultOffloadHook,
)
from hooks.tool_result_offloading.hooks import result_key


class OffloadWhenStepAtLeast(OffloadPolicyBase):
    """A custom, state-aware policy (module level, so it serialises by import path)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def should_offload(self, tool_name: str, result: str, state: State) -> bool:
        return state.data.get("step_count", 0) >= self.step

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, step=self.step)


def call(name: str, call_id: str | None) -> ToolCall:
    return ToolCall(tool_name=name, arguments={}, id=call_id)


def step_state(
    results: list[tuple[str, str | None, str, bool]],
    history: list[ChatMessage] | None = None,
    step: int = 3,
    hook_context: dict[str, Any] | None = None,
) -> State:
    """A State whose messages end with one assistant turn and its tool results (name, id, text, error)."""
    calls = [call(name, call_id) for name, call_id, _, _ in results]
    messages = [*(history or []), ChatMessage.from_user("go"), ChatMessage.from_assistant(tool_calls=calls)]
    messages += [
        ChatMessage.from_tool(text, origin=c, error=err) for c, (_, _, text, err) in zip(calls, results, strict=True)
    ]
    return State(data={"messages": messages, "step_count": step, "hook_context": hook_context or {}})


def offloaded(state: State) -> dict[str, str]:
    """tool call id (or name) -> reference, for the offloaded messages."""
    out = {}
    for m in state.messages:
        if m.meta.get(OFFLOADED_META_KEY):
            out[m.tool_call_result.origin.id or m.tool_call_result.origin.tool_name] = m.meta[OFFLOADED_META_KEY][0]
    return out


def test_routing_most_specific_key_wins(tmp_path: Path) -> None:
    hook = ToolResultOffloadHook(
        FileSystemToolResultStore(tmp_path),
        {"a": NeverOffload(), ("a", "b"): AlwaysOffload(), "*": OffloadOverChars(10)},
    )
    assert isinstance(hook.policy_for("a"), NeverOffload)
    assert isinstance(hook.policy_for("b"), AlwaysOffload)
    assert isinstance(hook.policy_for("zzz"), OffloadOverChars)
    state = step_state(
        [("a", "1", "x" * 100, False), ("b", "2", "y", False), ("c", "3", "z" * 10, False), ("c", "4", "z" * 11, False)]
    )
    hook.run(state)
    assert set(offloaded(state)) == {"2", "4"}  # a opted out; c offloads only strictly over 10


def test_no_matching_key_means_no_offload(tmp_path: Path) -> None:
    hook = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"other": AlwaysOffload()})
    state = step_state([("a", "1", "x" * 10_000, False)])
    before = state.messages
    hook.run(state)
    assert state.messages == before and not list(tmp_path.iterdir())


def test_errors_and_empty_results_stay_in_context(tmp_path: Path) -> None:
    hook = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"*": AlwaysOffload()})
    rejection = "Tool call rejected by user: no"
    state = step_state(
        [("a", "1", "boom " * 100, True), ("b", "2", rejection, True), ("c", "3", "", False), ("d", "4", "fine", False)]
    )
    hook.run(state)
    assert set(offloaded(state)) == {"4"}
    results = [m.tool_call_result for m in state.messages if m.tool_call_result]
    assert results[0].result == "boom " * 100 and results[1].result == rejection and results[0].error


def test_each_result_offloaded_at_most_once(tmp_path: Path) -> None:
    hook = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"*": AlwaysOffload()}, preview_chars=5)
    state = step_state([("a", "1", "x" * 50, False)])
    hook.run(state)
    first = state.messages
    assert hook.plan(state) == []  # the pointer is itself a tool result, but it is marked
    hook.run(state)
    ToolResultOffloadHook(FileSystemToolResultStore(tmp_path / "second"), {"*": AlwaysOffload()}).run(state)
    assert state.messages == first
    assert not (tmp_path / "second").exists()


def test_only_the_trailing_block_is_considered(tmp_path: Path) -> None:
    old_call = call("a", "old")
    history = [ChatMessage.from_assistant(tool_calls=[old_call]), ChatMessage.from_tool("o" * 500, origin=old_call)]
    hook = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"*": AlwaysOffload()})
    state = step_state([("a", "new", "n" * 500, False)], history=history)
    hook.run(state)
    assert set(offloaded(state)) == {"new"}
    assert state.messages[1].tool_call_result.result == "o" * 500
    # Last message not a tool result: nothing is fresh.
    state.set("messages", [ChatMessage.from_assistant("done")])
    assert hook.plan(state) == []


def test_per_run_store_from_hook_context_wins(tmp_path: Path) -> None:
    default_root, run_root = tmp_path / "default", tmp_path / "per-run"
    hook = ToolResultOffloadHook(FileSystemToolResultStore(default_root), {"*": AlwaysOffload()})
    state = step_state(
        [("a", "1", "payload", False)],
        hook_context={RESULT_STORE_CONTEXT_KEY: FileSystemToolResultStore(run_root).to_dict()},
    )
    hook.run(state)
    reference = offloaded(state)["1"]
    assert Path(reference).is_relative_to(run_root) and Path(reference).read_text() == "payload"
    assert not default_root.exists()
    # Inside a workflow the store is scoped to the run id (workflow id): root/<run id>/key.
    scoped = hook.resolve_store(state, run_id="run-7")
    assert scoped.to_dict()["init_parameters"] == {"root": str(run_root), "run_id": "run-7"}


def test_id_less_parallel_calls_never_collide(tmp_path: Path) -> None:
    hook = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"*": AlwaysOffload()})
    # Two id-less calls of one tool, plus ids chosen to look like the fallback and like separators.
    state = step_state(
        [
            ("fetch", None, "first", False),
            ("fetch", None, "second", False),
            ("fetch", "@0", "third", False),
            ("fetch_x", "y", "fourth", False),
            ("fetch", "x_y", "fifth", False),
        ]
    )
    tasks = hook.plan(state)
    assert len({t.key for t in tasks}) == 5
    hook.run(state)
    texts = [Path(m.meta[OFFLOADED_META_KEY][0]).read_text() for m in state.messages if m.meta.get(OFFLOADED_META_KEY)]
    assert texts == ["first", "second", "third", "fourth", "fifth"]
    assert result_key(1, "a_b", "c", 0) != result_key(1, "a", "b_c", 0)
    assert result_key(1, "a", None, 0) != result_key(2, "a", None, 0)


def test_pointer_names_reference_and_carries_preview(tmp_path: Path) -> None:
    hook = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"*": AlwaysOffload()}, preview_chars=7)
    content = "ABCDEFGHIJ" * 1000
    state = step_state([("a", "1", content, False), ("b", "2", "short", False)])
    hook.run(state)
    long_msg, short_msg = state.messages[-2], state.messages[-1]
    reference = long_msg.meta[OFFLOADED_META_KEY][0]
    text = long_msg.tool_call_result.result
    assert reference in text and "Preview: ABCDEFG..." in text and "ABCDEFGH" not in text
    assert f"{len(content)} characters" in text and len(text) < 400
    assert short_msg.tool_call_result.result.endswith("Preview: short")  # not cut, no ellipsis
    assert long_msg.tool_call_result.origin == call("a", "1") and not long_msg.tool_call_result.error
    assert Path(reference).read_text() == content


def test_zero_preview(tmp_path: Path) -> None:
    hook = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"*": AlwaysOffload()}, preview_chars=0)
    state = step_state([("a", "1", "secret", False)])
    hook.run(state)
    assert "secret" not in state.messages[-1].tool_call_result.result


def test_custom_policy_sees_state(tmp_path: Path) -> None:
    hook = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"*": OffloadWhenStepAtLeast(5)})
    assert hook.plan(step_state([("a", "1", "x", False)], step=4)) == []
    assert len(hook.plan(step_state([("a", "1", "x", False)], step=5))) == 1


def test_serialisation_round_trip(tmp_path: Path) -> None:
    hook = ToolResultOffloadHook(
        FileSystemToolResultStore(tmp_path),
        {"a": NeverOffload(), ("b", "c"): OffloadOverChars(42), "*": OffloadWhenStepAtLeast(2)},
        preview_chars=17,
    )
    data = hook.to_dict()
    assert data["init_parameters"]["offload_strategies"]['["b", "c"]']["init_parameters"] == {"threshold": 42}
    rebuilt = object_from_dict(data)
    assert rebuilt.to_dict() == data
    assert isinstance(rebuilt.policy_for("c"), OffloadOverChars) and rebuilt.policy_for("c").threshold == 42
    assert rebuilt.preview_chars == 17


def test_only_allowed_after_tool(tmp_path: Path) -> None:
    hook = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"*": AlwaysOffload()})
    Agent(model="m", hooks={"after_tool": [hook]})
    with pytest.raises(ValueError, match="only supports: after_tool"):
        Agent(model="m", hooks={"before_tool": [hook]})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"offload_strategies": {"*": "always"}},
        {"offload_strategies": {(): AlwaysOffload()}},
        {"offload_strategies": {"": AlwaysOffload()}},
        {"offload_strategies": {"*": AlwaysOffload()}, "preview_chars": 1.5},
        {"offload_strategies": [AlwaysOffload()]},
    ],
)
def test_bad_construction_is_a_value_error(tmp_path: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), **kwargs)


def test_over_chars_threshold_validation() -> None:
    with pytest.raises(ValueError, match="must be a number"):
        OffloadOverChars("10")
    assert OffloadOverChars(-1).should_offload("t", "", State())  # as in Haystack: len("") > -1
    assert not OffloadOverChars(3).should_offload("t", "abc", State())
    assert OffloadOverChars(3).should_offload("t", "abcd", State())

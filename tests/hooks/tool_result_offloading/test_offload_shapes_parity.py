"""Differential tests against haystack-ai 3.4.1 for issue 36's offloading rows: a Haystack
``to_dict`` loads here, ``OffloadOverChars`` thresholds, a missing file, the empty root, a failed
write in a local run, and the store keys (which differ on purpose: Haystack's can collide)."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest
from haystack.components.agents.state.state import State as HState
from haystack.dataclasses import ChatMessage as HMessage
from haystack.dataclasses import ToolCall as HCall
from haystack.hooks.tool_result_offloading import AlwaysOffload as HAlways
from haystack.hooks.tool_result_offloading import FileSystemToolResultStore as HFileSystemStore
from haystack.hooks.tool_result_offloading import OffloadOverChars as HOverChars
from haystack.hooks.tool_result_offloading import ToolResultOffloadHook as HOffloadHook

from core.messages import ChatMessage, ToolCall
from core.serialization import object_from_dict
from core.state import State
from core.tool_records import OFFLOADED_META_KEY
from hooks.tool_result_offloading import (
    AlwaysOffload,
    FileSystemToolResultStore,
    OffloadOverChars,
    ToolResultNotFoundError,
    ToolResultOffloadHook,
    ToolResultStoreError,
)


def ours_type(data: dict[str, Any]) -> dict[str, Any]:
    """A Haystack dict naming this project's classes (same module paths without ``haystack.``)."""
    return json.loads(json.dumps(data).replace('"haystack.hooks.', '"hooks.'))


def step_of(results: list[tuple[str, str | None, str]]) -> tuple[list[ChatMessage], list[HMessage]]:
    """One step's conversation, ours and Haystack's: (tool, call id, result) per call."""
    calls = [ToolCall(tool_name=tool, arguments={}, id=call_id) for tool, call_id, _ in results]
    h_calls = [HCall(tool_name=tool, arguments={}, id=call_id) for tool, call_id, _ in results]
    ours = [ChatMessage.from_user("go"), ChatMessage.from_assistant(tool_calls=calls)]
    ours += [ChatMessage.from_tool(text, origin=call) for call, (_, _, text) in zip(calls, results, strict=True)]
    theirs = [HMessage.from_user("go"), HMessage.from_assistant(tool_calls=h_calls)]
    theirs += [HMessage.from_tool(text, origin=call) for call, (_, _, text) in zip(h_calls, results, strict=True)]
    return ours, theirs


# -- a Haystack to_dict loads here -------------------------------------------------------------


def test_haystacks_hook_dict_loads_here_with_defaults_for_what_it_lacks(tmp_path: Path) -> None:
    theirs = HOffloadHook(
        HFileSystemStore(tmp_path), {"search": HAlways(), ("a", "b"): HOverChars(40), "*": HOverChars(8000)}
    )
    data = ours_type(theirs.to_dict())
    assert "write_deadline_seconds" not in data["init_parameters"]
    hook = ToolResultOffloadHook.from_dict(data)
    assert hook.write_deadline.total_seconds() == 600 and hook.preview_chars == theirs.preview_chars
    assert hook.policy_for("b") == OffloadOverChars(40) and hook.policy_for("zzz") == OffloadOverChars(8000)
    assert hook.store.root == tmp_path
    # Haystack's from_dict and ours: a missing optional key takes its default...
    del data["init_parameters"]["preview_chars"]
    assert ToolResultOffloadHook.from_dict(data).preview_chars == 200
    h_data = theirs.to_dict()
    del h_data["init_parameters"]["preview_chars"]
    assert HOffloadHook.from_dict(h_data).preview_chars == 200
    # ...and a missing required one is the constructor's TypeError in both
    h_data = theirs.to_dict()  # Haystack's from_dict rebuilds the nested objects in place
    del h_data["init_parameters"]["store"]
    with pytest.raises(TypeError, match="store"):
        HOffloadHook.from_dict(h_data)
    del data["init_parameters"]["store"]
    with pytest.raises(TypeError, match="store"):
        ToolResultOffloadHook.from_dict(data)


def test_our_dict_keeps_haystacks_keys_and_adds_the_write_deadline(tmp_path: Path) -> None:
    ours = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"*": OffloadOverChars(10)}).to_dict()
    theirs = HOffloadHook(HFileSystemStore(tmp_path), {"*": HOverChars(10)}).to_dict()
    assert set(theirs["init_parameters"]) <= set(ours["init_parameters"])
    assert set(ours["init_parameters"]) - set(theirs["init_parameters"]) == {"write_deadline_seconds"}


# -- OffloadOverChars --------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_any_numeric_threshold_decides_as_haystacks(seed: int) -> None:
    rng = random.Random(seed)
    threshold = rng.choice([-5, -1, 0, 1, 3, 7.5, 0.5, 100, rng.randint(-10, 50), rng.uniform(-3, 30)])
    ours, theirs = OffloadOverChars(threshold), HOverChars(threshold)
    assert ours.to_dict()["init_parameters"] == theirs.to_dict()["init_parameters"]
    assert object_from_dict(ours_type(theirs.to_dict())) == ours
    for _ in range(20):
        text = "x" * rng.randint(0, 40)
        assert ours.should_offload("t", text, State()) == theirs.should_offload("t", text, HState(schema={}))


def test_a_threshold_that_is_not_a_number_fails_when_built_here_and_at_the_first_result_there() -> None:
    theirs = HOverChars("10")  # accepted...
    with pytest.raises(TypeError):
        theirs.should_offload("t", "abc", HState(schema={}))  # ...and fails mid-run
    with pytest.raises(ValueError, match="must be a number"):
        OffloadOverChars("10")


# -- FileSystemToolResultStore -----------------------------------------------------------------


def test_reading_a_missing_file_is_a_file_not_found_error_in_both(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(FileNotFoundError):
        HFileSystemStore(tmp_path).read(missing)
    with pytest.raises(FileNotFoundError) as ours:
        FileSystemToolResultStore(tmp_path).read(missing)
    assert isinstance(ours.value, ToolResultStoreError) and isinstance(ours.value, ToolResultNotFoundError)


def test_an_empty_root_is_the_current_directory_in_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    theirs, ours = HFileSystemStore(""), FileSystemToolResultStore("")
    assert ours.to_dict()["init_parameters"]["root"] == theirs.to_dict()["init_parameters"]["root"] == "."
    their_ref = theirs.write(key="a.txt", content="theirs")
    our_ref = ours.write(key="b.txt", content="ours")
    assert Path(their_ref).parent == Path(our_ref).parent == tmp_path.resolve()
    assert ours.read(our_ref) == "ours" and theirs.read(their_ref) == "theirs"


# -- a failed write in a local run ---------------------------------------------------------------


class BrokenStore(FileSystemToolResultStore):
    def write(self, *, key: str, content: str) -> str:
        raise OSError("disk full")


class HBrokenStore(HFileSystemStore):
    def write(self, *, key: str, content: str | bytes) -> str:
        raise OSError("disk full")


def test_a_failed_write_in_a_local_run_leaves_the_result_in_context_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ours_messages, their_messages = step_of([("search", "c1", "big result " * 20)])
    state = State(data={"messages": list(ours_messages), "step_count": 1})
    their_state = HState(schema={}, data={"messages": list(their_messages), "step_count": 1})
    with caplog.at_level(logging.WARNING):
        HOffloadHook(HBrokenStore(tmp_path), {"*": HAlways()}).run(their_state)
        their_warnings = len(caplog.records)
        ToolResultOffloadHook(BrokenStore(tmp_path), {"*": AlwaysOffload()}).run(state)
    assert [m.text for m in their_state.data["messages"]] == [m.text for m in their_messages]
    assert state.data["messages"] == ours_messages  # kept, not replaced by an error
    ours_warnings = caplog.records[their_warnings:]
    assert their_warnings == 1 and len(ours_warnings) == 1
    assert "leaving the result in context" in ours_warnings[0].getMessage()
    assert "disk full" in ours_warnings[0].getMessage()


# -- store keys: Haystack's flat names can collide, ours cannot ----------------------------------


def test_two_results_haystack_writes_to_one_key_get_two_keys_here(tmp_path: Path) -> None:
    results = [("a_b", "c", "first result"), ("a", "b_c", "second result"), ("x", None, "id-less")]
    ours_messages, their_messages = step_of(results)
    their_state = HState(schema={}, data={"messages": list(their_messages), "step_count": 2})
    HOffloadHook(HFileSystemStore(tmp_path / "theirs"), {"*": HAlways()}).run(their_state)
    their_refs = [m.meta[OFFLOADED_META_KEY][0] for m in their_state.data["messages"][2:]]
    assert [Path(r).name for r in their_refs] == ["2_a_b_c.txt", "2_a_b_c.txt", "2_x_call2.txt"]
    assert HFileSystemStore(tmp_path / "theirs").read(their_refs[0]) == "second result"  # the first is lost

    store = FileSystemToolResultStore(tmp_path / "ours")
    state = State(data={"messages": list(ours_messages), "step_count": 2})
    ToolResultOffloadHook(store, {"*": AlwaysOffload()}).run(state)
    our_refs = [m.meta[OFFLOADED_META_KEY][0] for m in state.data["messages"][2:]]
    assert [Path(r).relative_to(store.root.resolve()).as_posix() for r in our_refs] == [
        "step-2/a_b/c.txt",
        "step-2/a/b_c.txt",
        "step-2/x/@2.txt",
    ]
    assert [store.read(r) for r in our_refs] == ["first result", "second result", "id-less"]

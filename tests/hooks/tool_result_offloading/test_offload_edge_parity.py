"""Differential tests against haystack-ai 3.4.1 for the tool-result offloading edge cases: store keys
that stay inside the root but are not plain relative paths, and ``preview_chars=-1``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from haystack.components.agents.state.state import State as HState
from haystack.dataclasses import ChatMessage as HMessage
from haystack.dataclasses import ToolCall as HCall
from haystack.hooks.tool_result_offloading import AlwaysOffload as HAlways
from haystack.hooks.tool_result_offloading import FileSystemToolResultStore as HFileSystemStore
from haystack.hooks.tool_result_offloading import ToolResultOffloadHook as HOffloadHook

from core.messages import ChatMessage, ToolCall
from core.state import State
from hooks.tool_result_offloading import AlwaysOffload, FileSystemToolResultStore, ToolResultOffloadHook

# Relative to the root unless absolute; "<root>" stands for the root directory itself.
INSIDE = ["sub/../inside.txt", "./dot.txt", "a//b.txt", "<root>/abs/inside.txt", "plain.txt", "a\\b.txt"]
OUTSIDE = ["../escape.txt", "sub/../../escape.txt", "<parent>/escape.txt", "/etc/passwd-copy"]


def key_for(key: str, root: Path) -> str:
    return key.replace("<root>", str(root.resolve())).replace("<parent>", str(root.resolve().parent))


@pytest.mark.parametrize("key", INSIDE)
def test_keys_that_resolve_inside_the_root_are_written_where_haystack_writes_them(tmp_path: Path, key: str) -> None:
    theirs_root, ours_root = tmp_path / "theirs", tmp_path / "ours"
    theirs = HFileSystemStore(theirs_root).write(key=key_for(key, theirs_root), content="héllo")
    ours = FileSystemToolResultStore(ours_root).write(key=key_for(key, ours_root), content="héllo")
    assert Path(ours).relative_to(ours_root.resolve()) == Path(theirs).relative_to(theirs_root.resolve())
    assert Path(ours).read_text(encoding="utf-8") == Path(theirs).read_text(encoding="utf-8") == "héllo"
    assert FileSystemToolResultStore(ours_root).read(ours) == HFileSystemStore(theirs_root).read(theirs)


@pytest.mark.parametrize("key", OUTSIDE)
def test_keys_that_resolve_outside_the_root_are_a_value_error_in_both(tmp_path: Path, key: str) -> None:
    root = tmp_path / "root"
    with pytest.raises(ValueError, match="resolves outside the store root") as theirs:
        HFileSystemStore(root).write(key=key_for(key, root), content="x")
    with pytest.raises(ValueError, match="resolves outside the store root") as ours:
        FileSystemToolResultStore(root).write(key=key_for(key, root), content="x")
    assert str(ours.value) == str(theirs.value)
    assert not (tmp_path / "escape.txt").exists()


def test_a_key_naming_the_root_itself_fails_in_both(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(IsADirectoryError):  # Haystack tries to write the directory as a file
        HFileSystemStore(root).write(key=".", content="x")
    with pytest.raises(ValueError, match="names the store root"):
        FileSystemToolResultStore(root).write(key=".", content="x")


def test_a_run_scoped_store_keeps_each_run_in_its_directory(tmp_path: Path) -> None:
    store = FileSystemToolResultStore(tmp_path, run_id="run-1")
    assert Path(store.write(key="./a.txt", content="x")) == (tmp_path / "run-1" / "a.txt").resolve()
    with pytest.raises(ValueError, match="outside the store root"):
        store.write(key=str(tmp_path / "run-2" / "a.txt"), content="x")


# -- preview_chars=-1 on the same results ------------------------------------------------------

RESULTS = ["", "x", "abc", "a" * 50, "line one\nline two"]
POINTER = {
    "ours": re.compile(
        r"Tool result offloaded: (\d+) characters at '.*?'\. Read it with .*? Preview: (.*)\Z", re.DOTALL
    ),
    "theirs": re.compile(r"Tool result offloaded to text \((\d+) characters\) at '.*?'\. Preview: (.*)\Z", re.DOTALL),
}


def previews(kind: str, messages) -> list[tuple[int, str] | str]:
    out: list[tuple[int, str] | str] = []
    for message in messages:
        result = message.tool_call_result
        if result is None:
            continue
        match = POINTER[kind].match(result.result)
        out.append((int(match[1]), match[2]) if match else result.result)
    return out


@pytest.mark.parametrize("preview_chars", [-1, -3, 0, 2])
def test_preview_chars_cuts_the_preview_as_haystack_does(tmp_path: Path, preview_chars: int) -> None:
    calls = [ToolCall(tool_name="search", arguments={"q": i}, id=f"c{i}") for i in range(len(RESULTS))]
    ours = [ChatMessage.from_user("go"), ChatMessage.from_assistant(tool_calls=calls)] + [
        ChatMessage.from_tool(text, origin=call) for text, call in zip(RESULTS, calls, strict=True)
    ]
    h_calls = [HCall(tool_name=c.tool_name, arguments=dict(c.arguments), id=c.id) for c in calls]
    theirs = [HMessage.from_user("go"), HMessage.from_assistant(tool_calls=h_calls)] + [
        HMessage.from_tool(text, origin=call) for text, call in zip(RESULTS, h_calls, strict=True)
    ]
    our_state = State(data={"messages": ours, "step_count": 0})
    their_state = HState(schema={}, data={"messages": theirs, "step_count": 0})
    ToolResultOffloadHook(
        FileSystemToolResultStore(tmp_path / "o"), {"*": AlwaysOffload()}, preview_chars=preview_chars
    ).run(our_state)
    HOffloadHook(HFileSystemStore(tmp_path / "t"), {"*": HAlways()}, preview_chars=preview_chars).run(their_state)
    mine, haystack = previews("ours", our_state.data["messages"]), previews("theirs", their_state.data["messages"])
    assert mine == haystack
    if preview_chars == -1:
        assert (3, "ab...") in mine and (1, "...") in mine  # all but the last character, then "..."


def test_preview_chars_must_be_an_integer_here(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="preview_chars must be an integer"):
        ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"*": AlwaysOffload()}, preview_chars=1.5)

"""``module:attr`` specs of ``python worker.py --tools`` and ``agent dev --agent``: what each may
name, where modules are found, and the error for each way a spec can be wrong."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.dev.reloading_worker import changed_files, python_files_snapshot
from runtime.tool_loading import ToolSpecError, load_tools

MODULE = textwrap.dedent(
    '''
    from agent import Agent, Toolset, ToolSpec, tool


    @tool
    def first(x: str) -> str:
        """One."""
        return x


    @tool
    def second(x: str) -> str:
        """Two."""
        return x


    TOOLS = [first, second]
    GROUP = Toolset([second])
    support = Agent(model="m", tools=[first, GROUP])
    remote = Agent(model="m", tools=[ToolSpec(name="elsewhere")])


    def make_tools():
        return [second]


    class Holder:
        TOOLS = [first]


    NUMBER = 42
    '''
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder with ``usertools.py``, as the current directory; nothing imported from it leaks."""
    (tmp_path / "usertools.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    yield tmp_path
    sys.modules.pop("usertools", None)


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("usertools:TOOLS", ["first", "second"]),
        ("usertools:GROUP", ["second"]),
        ("usertools:support", ["first", "second"]),
        ("usertools:make_tools", ["second"]),
        ("usertools:Holder.TOOLS", ["first"]),
        ("usertools:first", ["first"]),
        ("usertools.TOOLS", ["first", "second"]),  # the dotted form of older scripts
    ],
)
def test_specs_name_lists_toolsets_agents_and_functions_in_the_current_directory(
    project: Path, spec: str, names: list[str]
) -> None:
    assert [t.name for t in load_tools([spec])] == names


def test_two_specs_naming_one_tool_serve_it_once(project: Path) -> None:
    assert [t.name for t in load_tools(["usertools:TOOLS", "usertools:support"])] == ["first", "second"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nosuch:TOOLS", "--tools 'nosuch:TOOLS': no module named 'nosuch' in {cwd} or on sys.path"),
        ("usertools:MISSING", "--tools 'usertools:MISSING': module usertools ({cwd}/usertools.py) has no attribute"),
        ("usertools:NUMBER", "--tools 'usertools:NUMBER' is a int; expected a list of @tool functions"),
        ("usertools:", "--tools 'usertools:': expected module:attribute"),
        ("usertools:remote", "the agent's tools elsewhere were given as ToolSpec, without a function to run"),
        ("nosuch.TOOLS", "Cannot import 'nosuch.TOOLS': no such module. Name it as module:attribute"),
    ],
)
def test_a_bad_spec_names_what_was_not_found(project: Path, spec: str, message: str) -> None:
    with pytest.raises(ToolSpecError) as raised:
        load_tools([spec])
    assert message.format(cwd=project) in str(raised.value)


def test_snapshot_sees_python_files_and_skips_hidden_and_cache_directories(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "tools.py").write_text("x = 1\n")
    for skipped in (".venv", "__pycache__", ".agent-dev"):
        (tmp_path / skipped).mkdir()
        (tmp_path / skipped / "ignored.py").write_text("")
    (tmp_path / "notes.txt").write_text("")
    before = python_files_snapshot(tmp_path)
    assert list(before) == [str(tmp_path / "pkg" / "tools.py")]

    (tmp_path / "pkg" / "tools.py").write_text("x = 2  # a longer file\n")
    (tmp_path / "new.py").write_text("")
    after = python_files_snapshot(tmp_path)
    changed = changed_files(before, after)
    assert str(tmp_path / "new.py") in changed
    assert changed_files(after, after) == []

"""core/trust.py: what a run's input may name by import path, checked before anything is imported
or constructed. The end-to-end refusals on a real worker are in tests/workflows/test_untrusted_input.py."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import core.trust
from agent import Agent
from core.serialization import object_from_dict
from core.spec import AgentSpec
from core.state import state_schema_from_dict
from core.trust import HOOK, UntrustedPathError, import_trusted, trust_modules, trusting
from hooks import FunctionHook
from hooks.compaction import CompactionHook, SlidingWindowCompactor
from hooks.compaction.protocol import COMPACTOR_SLOT
from hooks.human_in_the_loop.protocol import UI_SLOT
from tests.support.planted import planted_module
from tests.tools import add, trace_before_run


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A module on sys.path that nobody configured: importing it leaves a mark on disk."""
    with planted_module(tmp_path, monkeypatch, "planted_hooks") as mark:
        yield mark


@pytest.mark.parametrize(
    "path",
    ["subprocess.Popen", "shutil.rmtree", "os.system", "urllib.request.urlopen", "builtins.eval", "this.s"],
)
def test_a_path_outside_the_trusted_modules_is_refused_before_import(path: str) -> None:
    module = path.rpartition(".")[0]
    was_loaded = module in sys.modules
    with pytest.raises(UntrustedPathError, match=r"Refused hook .*AGENT_TRUSTED_MODULES"):
        object_from_dict({"type": path, "init_parameters": {"args": ["touch", "/tmp/x"]}}, HOOK)
    assert (module in sys.modules) == was_loaded  # nothing was imported


def test_a_planted_module_is_never_imported(planted: Path) -> None:
    for data in (
        {"type": "planted_hooks.Loud"},
        {"type": "hooks.from_function.FunctionHook", "init_parameters": {"function": "planted_hooks.shout"}},
    ):
        with pytest.raises(UntrustedPathError, match="planted_hooks"):
            object_from_dict(data, HOOK)
    assert not planted.exists() and "planted_hooks" not in sys.modules


def test_a_trusted_module_re_exporting_a_dangerous_object_is_refused_on_the_objects_own_module() -> None:
    # runtime.worker imports os; core.spec imports timedelta: the object's __module__ decides
    with pytest.raises(UntrustedPathError, match="module 'posix'|module 'os'"):
        import_trusted("runtime.worker.os.system", HOOK)
    with pytest.raises(UntrustedPathError, match="dunder"):
        import_trusted("core.spec.__builtins__", HOOK)


def test_the_resolved_class_must_fit_its_slot_before_construction() -> None:
    with pytest.raises(UntrustedPathError, match=r"Refused compactor .*has no compact or compact_async"):
        object_from_dict({"type": "core.messages.ChatMessage", "init_parameters": {}}, COMPACTOR_SLOT)
    with pytest.raises(UntrustedPathError, match="is a function, not a class"):
        object_from_dict({"type": "core.state.merge_lists"}, HOOK)
    with pytest.raises(UntrustedPathError, match=r"confirmation UI .*has no get_user_confirmation"):
        object_from_dict({"type": "hooks.compaction.SlidingWindowCompactor"}, UI_SLOT)


def test_a_nested_part_passes_the_gate_too() -> None:
    data = CompactionHook(SlidingWindowCompactor(min_keep_steps=2), context_window=1000).to_dict()
    data["init_parameters"]["compactor"] = {"type": "subprocess.Popen", "init_parameters": {"args": ["true"]}}
    with pytest.raises(UntrustedPathError, match="Refused compactor 'subprocess.Popen'"):
        object_from_dict(data, HOOK)


def test_state_schema_types_and_handlers_pass_the_gate() -> None:
    with pytest.raises(UntrustedPathError, match="Refused state-schema type 'decimal.Decimal'"):
        state_schema_from_dict({"amount": {"type": "decimal.Decimal"}})
    with pytest.raises(UntrustedPathError, match="Refused state-schema handler 'os.remove'"):
        state_schema_from_dict({"amount": {"type": "int", "handler": "os.remove"}})
    with pytest.raises(UntrustedPathError, match="not a function"):
        state_schema_from_dict({"amount": {"type": "int", "handler": "core.messages.ChatMessage"}})
    assert state_schema_from_dict({"n": {"type": "int", "handler": "core.state.replace_values"}})["n"]["type"] is int


def test_a_sub_agents_spec_is_checked_when_its_parent_is_rebuilt() -> None:
    child = Agent(model="m", tools=[add])
    parent = Agent(model="m", tools=[child.as_tool(name="research", description="Research one question")])
    data = parent.to_dict()
    data["sub_agents"]["research"]["hooks"] = {"before_run": [{"type": "os.system", "init_parameters": {}}]}
    with pytest.raises(UntrustedPathError, match="'os.system'"):
        AgentSpec.from_dict(data)


def test_agent_build_checks_its_own_spec_without_widening_what_this_process_trusts(planted: Path) -> None:
    agent = Agent(model="m", tools=[add], hooks={"before_run": [trace_before_run]})
    assert "tests.tools" in agent.served_modules()
    with trusting({"planted_hooks"}):
        assert import_trusted("planted_hooks.Loud", HOOK).__name__ == "Loud"
    with pytest.raises(UntrustedPathError):  # the block's trust ended with it
        import_trusted("planted_hooks.Loud", HOOK)


def test_a_served_or_configured_module_is_trusted(planted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core.trust, "_trusted", set(core.trust._trusted))  # this process's trust comes back after
    trust_modules(["planted_hooks"])  # as create_worker(agents=..., trusted_modules=...) does
    hook = object_from_dict(
        {"type": "hooks.from_function.FunctionHook", "init_parameters": {"function": "planted_hooks.shout"}}, HOOK
    )
    assert isinstance(hook, FunctionHook) and planted.read_text() == "imported"

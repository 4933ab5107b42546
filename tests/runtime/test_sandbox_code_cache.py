"""The sandbox's imports are compiled once per process (runtime/sandbox.py), and nothing else about
the import changes: outside a sandbox the finder stands aside, non-source modules keep their
loader, and a module imported in the sandbox is still executed anew for each run."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

import workflows.agent_workflow
from runtime.plugin import AgentPlugin
from runtime.sandbox import CompiledOnceFinder, CompiledOnceLoader, install_compiled_once_finder
from workflows.agent_workflow import AgentWorkflow

HISTORY = Path(__file__).resolve().parents[1] / "histories" / "run_loop.json"


@pytest.fixture
def in_sandbox():
    """Pretend to be inside a workflow sandbox, as the sandbox's own code runs."""
    workflow.unsafe._set_in_sandbox(True)
    try:
        yield
    finally:
        workflow.unsafe._set_in_sandbox(False)


@pytest.fixture
def finder():
    install_compiled_once_finder()
    return next(f for f in sys.meta_path if isinstance(f, CompiledOnceFinder))


def test_installing_twice_puts_one_finder_first():
    install_compiled_once_finder()
    install_compiled_once_finder()
    assert isinstance(sys.meta_path[0], CompiledOnceFinder)
    assert sum(isinstance(f, CompiledOnceFinder) for f in sys.meta_path) == 1


def test_outside_a_sandbox_the_finder_finds_nothing(finder):
    assert finder.find_spec("workflows.agent_workflow", workflows.__path__) is None


def test_in_a_sandbox_a_source_module_gets_the_compiled_once_loader(finder, in_sandbox):
    spec = finder.find_spec("workflows.agent_workflow", workflows.__path__)
    assert spec is not None
    assert isinstance(spec.loader, CompiledOnceLoader)
    assert spec.origin == workflows.agent_workflow.__file__


def test_in_a_sandbox_other_modules_keep_their_loader(finder, in_sandbox):
    # a builtin module and an extension module: no source to compile
    assert not isinstance(finder.find_spec("sys", None).loader, CompiledOnceLoader)
    extension = finder.find_spec("_json", None) or finder.find_spec("_socket", None)
    assert extension is not None and not isinstance(extension.loader, CompiledOnceLoader)
    assert finder.find_spec("no_such_module_anywhere_42", None) is None


def test_the_code_is_compiled_once_and_each_import_runs_it_anew(tmp_path):
    source = tmp_path / "counted_module.py"
    source.write_text("import itertools\nRUNS = []\nRUNS.append(1)\n")
    first = CompiledOnceLoader("counted_module", str(source))
    second = CompiledOnceLoader("counted_module", str(source))
    assert first.get_code("counted_module") is second.get_code("counted_module")
    modules = []
    for loader in (first, second):
        spec = importlib.util.spec_from_loader("counted_module", loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        modules.append(module)
    # two module objects, each with its own state: the code object is shared, nothing else
    assert modules[0] is not modules[1]
    assert modules[0].RUNS == [1] and modules[1].RUNS == [1]
    assert modules[0].RUNS is not modules[1].RUNS


async def test_the_sandbox_imports_the_run_loop_through_the_cache():
    data = json.loads(HISTORY.read_text())
    history = WorkflowHistory.from_json(data["workflow_id"], data["history"])
    CompiledOnceLoader._code.pop(workflows.agent_workflow.__file__, None)  # whatever ran before
    result = await Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()]).replay_workflow(history)
    assert result.replay_failure is None
    assert workflows.agent_workflow.__file__ in CompiledOnceLoader._code

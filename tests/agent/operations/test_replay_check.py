"""``agent replay-check`` against runs parked on the real dev server: a hook change that keeps the
commands replays (exit 0), one that adds a command breaks (exit 1, each run named with its first
mismatch). The changed hook module is a file on the replaying process's PYTHONPATH, as a deploy
would install it; the worker that parked the runs imported the old file."""

from __future__ import annotations

import importlib
import json
import os
import sys
import uuid
from pathlib import Path

import pytest
from temporalio.workflow import NondeterminismError

from agent import Agent
from agent.operations.replay_check import DEFAULT_FILTER, first_mismatch, replay_check, runs_query
from tests import tools as t
from tests.agent.cli.test_cli import agent_cli
from tests.support.hitl_helpers import ask_all, start, wait_pending
from tests.support.polling import eventually
from worker import create_worker

#: The hook as the parked runs' worker had it: before_llm, no commands of its own.
VERSION_A = """
from core.state import State
from hooks import hook

@hook
async def before_llm(state: State) -> None:
    return None
"""
#: A compatible change: the hook reads more of the State, still issues no command.
VERSION_B_COMPATIBLE = """
from core.state import State
from hooks import hook

@hook
async def before_llm(state: State) -> None:
    state.data.get("messages", [])[-1:]
"""
#: A breaking change: the hook now waits on a timer, a command the histories do not have.
VERSION_B_BREAKING = """
from datetime import timedelta
from temporalio import workflow
from core.state import State
from hooks import hook

@hook
async def before_llm(state: State) -> None:
    await workflow.sleep(timedelta(milliseconds=1))
"""
RUNS = 3


def write_version(root: Path, name: str, source: str) -> Path:
    root.mkdir()
    (root / f"{name}.py").write_text(source)
    return root


@pytest.fixture
def hook_versions(tmp_path, monkeypatch):
    """A fresh module name, version A importable here (the worker's), and the paths of B's two versions."""
    name = f"rc_hooks_{uuid.uuid4().hex[:8]}"
    old = write_version(tmp_path / "a", name, VERSION_A)
    monkeypatch.syspath_prepend(str(old))
    importlib.invalidate_caches()
    yield (
        name,
        write_version(tmp_path / "ok", name, VERSION_B_COMPATIBLE),
        write_version(tmp_path / "bad", name, VERSION_B_BREAKING),
    )
    sys.modules.pop(name, None)


async def test_replay_check_tells_a_compatible_hook_change_from_a_breaking_one(client, scripted, model, hook_versions):
    name, compatible, breaking = hook_versions
    module = importlib.import_module(name)
    queue = f"rc-{uuid.uuid4().hex[:8]}"
    scripted.script(model, [{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}], "times": RUNS}])
    agent = Agent(model=model, tools=[t.echo], hooks={"before_llm": [module.before_llm], "before_tool": [ask_all()]})
    run_ids = [f"{queue}-{i}" for i in range(RUNS)]
    async with create_worker(client, tools=[t.echo], task_queue=queue, agents=[agent]):
        handles = [await start(agent, client, queue, run_id) for run_id in run_ids]
        for handle in handles:
            await wait_pending(handle)
    query = f"TaskQueue = '{queue}'"
    await eventually(lambda: client.count_workflows(runs_query(query)), lambda c: c.count == RUNS)

    # in this process the hook is still version A: every run replays
    report = await replay_check(client, query=query)
    assert (report.checked, report.broken, report.truncated) == (RUNS, [], False)

    # replay-check rebuilds each run's agent through the same trust gate as the worker
    trusted = {"AGENT_TRUSTED_MODULES": f"{os.environ['AGENT_TRUSTED_MODULES']},{name}"}
    ok = await agent_cli("replay-check", "--query", query, env={"PYTHONPATH": str(compatible), **trusted})
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"replay-check: all {RUNS} runs replay with the code installed here (" in ok.stdout
    assert "runs/s" in ok.stdout

    bad = await agent_cli("replay-check", "--query", query, env={"PYTHONPATH": str(breaking), **trusted})
    assert bad.returncode == 1, bad.stdout + bad.stderr
    for run_id in run_ids:
        assert f"run {run_id} would break" in bad.stdout
    assert f"replay-check: {RUNS} of {RUNS} runs would break" in bad.stdout
    assert "non-determinism" in bad.stdout.lower()

    cut = await agent_cli(
        "replay-check", "--query", query, "--limit", "2", "--json", env={"PYTHONPATH": str(breaking), **trusted}
    )
    assert cut.returncode == 1, cut.stderr
    found = json.loads(cut.stdout)
    assert (found["checked"], found["truncated"], found["limit"], found["ok"]) == (2, True, 2, False)
    assert found["query"] == runs_query(query)
    assert {b["run_id"] for b in found["broken"]} < set(run_ids) and len(found["broken"]) == 2
    assert all(b["error"].startswith("non-determinism [TMPRL1100]: ") for b in found["broken"])
    print("first mismatch as reported:", found["broken"][0]["error"])

    for handle in handles:
        await handle.workflow.terminate("test over")


async def test_replay_check_with_no_matching_runs_says_so(client):
    report = await replay_check(client, query=f"TaskQueue = 'none-{uuid.uuid4().hex}'")
    assert (report.checked, report.broken) == (0, [])
    empty = await agent_cli("replay-check", "--query", f"TaskQueue = 'none-{uuid.uuid4().hex}'")
    assert empty.returncode == 0 and "no runs match" in empty.stdout
    broken_query = await agent_cli("replay-check", "--query", "TaskQueue ===")
    assert broken_query.returncode == 2 and "Temporal cannot run the query" in broken_query.stderr, broken_query.stderr


def test_the_query_is_narrowed_to_agent_runs_and_bad_input_is_refused():
    assert runs_query() == f"WorkflowType = 'AgentWorkflow' AND ({DEFAULT_FILTER})"
    assert runs_query("TaskQueue = 'q'") == "WorkflowType = 'AgentWorkflow' AND (TaskQueue = 'q')"
    with pytest.raises(ValueError, match="--query is empty"):
        runs_query("  ")


async def test_a_limit_under_one_is_refused_before_any_call():
    with pytest.raises(ValueError, match="--limit must be at least 1"):
        await replay_check(None, limit=0)  # type: ignore[arg-type]


def test_first_mismatch_keeps_the_nondeterminism_text():
    failure = NondeterminismError(
        'Workflow activation completion failed: Failure { failure: Some(Failure { message: "[TMPRL1100] Nondeterminism '
        'error: Timer machine does not handle this event: HistoryEvent(id: 5, ActivityTaskScheduled)", source: "", '
        'stack_trace: "", cause: None }), force_cause: NonDeterministicError }'
    )
    assert first_mismatch(failure) == (
        "non-determinism [TMPRL1100]: Timer machine does not handle this event: HistoryEvent(id: 5, ActivityTaskScheduled)"
    )
    assert first_mismatch(ValueError("no such workflow type")) == "ValueError: no such workflow type"

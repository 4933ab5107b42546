"""`agent run --agent`, `agent runs` and `agent watch` as a user runs them: subprocesses against
the session's stack, the scripted model and the test worker."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta

import pytest

from agent.agent import Agent
from bench.cancel_support import gate
from core.messages import ChatMessage
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy, Escalation
from tests import tools as t
from tests.agent.cli.test_cli import agent_cli, spawn_cli
from tests.support.cli_agents import MODEL_ENV
from tests.support.polling import eventually

pytestmark = pytest.mark.usefixtures("client")


@pytest.fixture
def agent_model(model, monkeypatch) -> str:
    """The model name tests.support.cli_agents builds its agents with (the CLI subprocess inherits it)."""
    monkeypatch.setenv(MODEL_ENV, model)
    return model


async def test_run_starts_the_users_agent(worker, scripted, agent_model, run_id):
    scripted.script(
        agent_model,
        [{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}, {"text": "2 + 3 = 5, from your agent"}],
    )
    ran = await agent_cli(
        "run",
        "add 2 and 3",
        "--agent",
        "tests.support.cli_agents:make_agent",
        "--run-id",
        run_id,
        "--task-queue",
        worker,
        "--wait",
    )
    assert ran.returncode == 0, ran.stderr
    assert f"started run {run_id}" in ran.stdout and f"model {agent_model}" in ran.stdout
    assert "2 + 3 = 5, from your agent" in ran.stdout
    # the model saw the user's agent: its system prompt and its tools
    request = scripted.requests(agent_model)[0]
    assert request["messages"][0]["content"] == "You are the CLI test's own agent."
    assert sorted(tool["function"]["name"] for tool in request["tools"]) == ["add", "echo"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests.support.cli_agents", "expected module:attribute"),
        ("tests.no_such_module:make_agent", "no module named 'tests.no_such_module'"),
        ("tests.support.cli_agents:nope", "module tests.support.cli_agents ("),
        ("tests.support.cli_agents:NOT_AN_AGENT", "NOT_AN_AGENT is a int; expected an agent.Agent"),
        ("tests.support.cli_agents:returns_a_string", "returns_a_string() returned a str, not an agent.Agent"),
    ],
)
async def test_bad_agent_paths_are_one_clear_line(path, expected, agent_model):
    ran = await agent_cli("run", "hi", "--agent", path)
    assert ran.returncode == 2
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agent: error: --agent"), ran.stderr
    assert expected in lines[0]
    assert "started run" not in ran.stdout


async def test_runs_lists_a_run_with_its_status(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "listed"}])
    handle = await Agent(model=model, tools=[t.echo]).start(
        client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=worker
    )
    await handle.result()

    async def listed_row() -> dict | None:
        listed = await agent_cli("runs", "--json", "--limit", "1000")
        assert listed.returncode == 0, listed.stderr
        return {r["run_id"]: r for r in json.loads(listed.stdout)["runs"]}.get(run_id)

    # visibility is eventually consistent: the finished run shows up, as COMPLETED, a moment later
    row = await eventually(
        listed_row,
        lambda row: row is not None and row["status"] == "COMPLETED",
        timeout=60,
        interval=0.25,
        message=f"`agent runs` never listed {run_id} as COMPLETED",
    )
    assert row["waiting_for_approval"] is False
    assert row["start_time"]
    table = await agent_cli("runs", "--limit", "1000")
    assert table.returncode == 0 and any(run_id in line and "COMPLETED" in line for line in table.stdout.splitlines())


async def test_runs_says_when_the_limit_cuts_the_list(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "one"}])
    agent = Agent(model=model, tools=[t.echo])
    for suffix in ("a", "b"):
        await (
            await agent.start(client, [ChatMessage.from_user("hi")], run_id=run_id + suffix, task_queue=worker)
        ).result()
    listed = await eventually(
        lambda: agent_cli("runs", "--limit", "1"),
        lambda listed: "more exist" in listed.stdout,
        timeout=60,
        interval=0.25,
        message="`agent runs --limit 1` never said more runs exist",
    )
    assert listed.returncode == 0, listed.stderr
    assert "only the newest 1 runs are listed; more exist" in listed.stdout
    as_json = json.loads((await agent_cli("runs", "--limit", "1", "--json")).stdout)
    assert len(as_json["runs"]) == 1 and as_json["truncated"] is True


async def test_watch_follows_a_run_to_completion(client, worker, scripted, model, run_id):
    scripted.script(
        model,
        [
            {"tool_calls": [{"name": "echo", "arguments": {"text": "first"}}]},
            {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
            {"text": "watched to the end"},
        ],
    )
    await Agent(model=model, tools=[t.echo, t.add]).start(
        client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker
    )
    watched = await agent_cli("watch", run_id)
    assert watched.returncode == 0, watched.stderr + watched.stdout
    out = watched.stdout
    assert f"watching run {run_id}" in out
    assert 'tool echo(text="first") [step 0] -> first' in out
    assert "tool add(a=1, b=2) [step 1] -> 3" in out
    assert "model call 1 asked for: echo" in out and "model call 3 answered: watched to the end" in out
    assert f"run {run_id} completed: exit reason text, 3 steps, tool calls: echo x1, add x1" in out
    assert "final answer: watched to the end" in out


async def test_watch_shows_live_steps(client, worker, scripted, model, run_id, tmp_path, monkeypatch):
    """The tool call stays in flight until `agent watch` has shown it (a gate the test opens then),
    so the live step is seen however long the CLI takes to start."""
    monkeypatch.setenv("GATE_DIR", str(tmp_path))
    label = f"watch-{run_id}"
    scripted.script(model, [{"tool_calls": [{"name": "gate", "arguments": {"label": label}}]}, {"text": "passed"}])
    await Agent(model=model, tools=[gate]).start(
        client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker
    )
    watch = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent.cli", "watch", run_id, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    seen: list[str] = []

    async def read_until_the_tools_step() -> None:
        while "step 0: tools" not in "".join(seen):
            line = await watch.stdout.readline()
            assert line, "agent watch ended before showing step 0's tools:\n" + "".join(seen)
            seen.append(line.decode())

    try:
        await asyncio.wait_for(read_until_the_tools_step(), timeout=120)
    finally:
        (tmp_path / f"{label}.open").touch()  # the tool returns; the run ends
    out, err = await asyncio.wait_for(watch.communicate(), timeout=120)
    watched = "".join(seen) + out.decode()
    assert watch.returncode == 0, err.decode() + watched
    assert f'tool gate(label="{label}") [step 0] -> gate {label} passed' in watched, watched
    assert "final answer: passed" in watched, watched


async def test_watch_exits_1_with_the_failure(worker, scripted, agent_model, run_id):
    started = await agent_cli(
        "run",
        "hi",
        "--agent",
        "tests.support.cli_agents:make_failing_agent",
        "--run-id",
        run_id,
        "--task-queue",
        worker,
    )
    assert started.returncode == 0, started.stderr
    watched = await agent_cli("watch", run_id)
    assert watched.returncode == 1, watched.stdout
    assert (
        f"run {run_id} failed: Hook tests.tools.raise_value_error failed at before_llm (step 0): "
        "ValueError: boom from a hook"
    ) in watched.stdout


async def test_watch_unknown_run_is_a_clear_error():
    watched = await agent_cli("watch", "no-such-run-xyz")
    assert watched.returncode == 1
    assert "no such run" in watched.stderr and "Traceback" not in watched.stderr


async def test_watch_lists_the_calls_waiting_for_approval(client, worker, scripted, model, run_id):
    """`agent watch` shows a run that waits for a person, the calls it waits for, how to decide,
    and goes on to the end once someone decides."""
    scripted.script(
        model, [{"tool_calls": [{"name": "echo", "arguments": {"text": "needs an OK"}}]}, {"text": "approved and done"}]
    )
    agent = Agent(
        model=model,
        tools=[t.echo],
        hooks={
            "before_tool": [
                ConfirmationHook({"echo": DurableConfirmationStrategy(AlwaysAskPolicy(), timeout=timedelta(hours=1))})
            ]
        },
    )
    handle = await agent.start(client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=worker)
    process = await spawn_cli("watch", run_id)
    try:
        seen: list[str] = []
        while not any("(or: agent reject / agent modify)" in line for line in seen):
            line = await asyncio.wait_for(process.stdout.readline(), timeout=60)
            assert line, "agent watch ended before it showed the waiting call: " + "".join(seen)
            seen.append(line.decode())
        [call] = await handle.pending_confirmations()
        assert (
            f"waiting for approval of echo ({call.tool_call_id}): approve with "
            f"`agent approve {run_id} {call.tool_call_id}`\n"
        ) in seen
        assert '  echo(text="needs an OK")  (or: agent reject / agent modify)\n' in seen
        await handle.confirm(call.tool_call_id, approver="ann")
        rest, err = await asyncio.wait_for(process.communicate(), timeout=60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    out = "".join(seen) + rest.decode()
    assert process.returncode == 0, out + err.decode()
    assert f"  decided: {call.tool_call_id} confirm by ann\n" in out
    assert 'tool echo(text="needs an OK")' in out and "final answer: approved and done" in out


async def test_watch_shows_an_escalation_and_a_timeout_as_no_ones_decision(client, worker, scripted, model, run_id):
    scripted.script(model, [{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, {"text": "no answer"}])
    strategy = DurableConfirmationStrategy(
        AlwaysAskPolicy(),
        timeout=timedelta(seconds=3),
        approvers=["ann"],
        escalation=[Escalation(after=timedelta(seconds=1), approvers=["lead"])],
    )
    agent = Agent(model=model, tools=[t.add], hooks={"before_tool": [ConfirmationHook({"*": strategy})]})
    await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    watched = await agent_cli("watch", run_id)
    assert watched.returncode == 0, watched.stderr + watched.stdout
    out = watched.stdout
    assert "escalated: add (" in out and ") to lead" in out
    assert "timed out, no one decided: add (" in out
    assert "  decided:" not in out  # no person decided anything
    assert out.index("escalated:") < out.index("timed out")

"""The `agent` CLI as a user runs it: a subprocess against the test stack and scripted model."""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import re
import socket
import sys
import time
from dataclasses import dataclass
from datetime import timedelta

import pytest
from temporalio.api.failure.v1 import ApplicationFailureInfo, Failure
from temporalio.client import WorkflowFailureError

from agent.agent import Agent
from agent.approvals.decisions import UPDATE_HELD, UnknownRunError, default_approver
from agent.cli import build_parser
from agent.client import get_run
from agent.inbox.command import dev_identity
from agent.run_history import describe_failure
from core.messages import ChatMessage
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from tests import tools as t
from tests.support.cli_agents import MODEL_ENV
from tests.tools import TEST_TOOLS
from worker import create_worker


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str


async def spawn_cli(*args: str, env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
    """Start ``agent ARGS`` as a subprocess with pipes for stdin, stdout and stderr; ``env`` adds
    to this process's environment."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agent.cli",
        *args,
        env={**os.environ, **(env or {})},
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def agent_cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Completed:
    """Run the CLI without blocking the event loop (the test worker shares it), feeding ``stdin``
    (then end of file) when given; ``env`` adds to this process's environment."""
    process = await spawn_cli(*args, env=env)
    out, err = await asyncio.wait_for(process.communicate(stdin.encode() if stdin else b""), timeout=120)
    return Completed(process.returncode, out.decode(), err.decode())


@pytest.mark.usefixtures("client")
async def test_run_wait_status_and_result(worker, scripted, model, run_id):
    scripted.script(model, [{"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}, {"text": "all done"}])
    # the CLI's `run` uses the demo agent; give it the test worker's queue and an echo-only script
    ran = await agent_cli("run", "say hi", "--run-id", run_id, "--model", model, "--task-queue", worker, "--wait")
    assert ran.returncode == 0, ran.stderr
    assert f"started run {run_id}" in ran.stdout
    status = await agent_cli("status", run_id)
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["done"] is True and shown["status"] == "COMPLETED" and shown["exit_reason"] == "text"
    assert shown["worker"] == f"a worker polls task queue '{worker}'"
    result = await agent_cli("result", run_id, "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["last_message"]["text"] == "all done"


@pytest.mark.usefixtures("client")
async def test_unknown_run_is_a_clear_error():
    status = await agent_cli("status", "no-such-run-xyz")
    assert status.returncode == 1
    assert "no such run" in status.stderr and "Traceback" not in status.stderr


async def test_help_lists_every_command():
    helped = await agent_cli("--help")
    assert helped.returncode == 0
    for command in ("run", "pending", "approve", "reject", "modify", "status", "result", "dev", "demo"):
        assert command in helped.stdout


# -- every command says what it waits for ------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def unserved_run(client, model: str, run_id: str) -> str:
    """A run on a task queue no worker polls (it stays RUNNING, asking for nothing); its queue."""
    queue = f"nobody-polls-{run_id}"
    await Agent(model=model, tools=[t.echo]).start(
        client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=queue
    )
    return queue


async def parked_run(client, scripted, model: str, run_id: str, queue: str) -> tuple:
    scripted.script(model, [{"tool_calls": [{"name": "echo", "arguments": {"text": "ok?"}}]}, {"text": "done"}])
    handle = await make_approval_agent_for(model).start(
        client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=queue
    )
    [call] = await handle.wait_for_pending(timeout=timedelta(seconds=60))
    return handle, call


def make_approval_agent_for(model: str) -> Agent:
    strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), timeout=timedelta(hours=1))
    return Agent(model=model, tools=[t.echo], hooks={"before_tool": [ConfirmationHook({"echo": strategy})]})


async def test_approve_when_no_worker_polls_the_queue_sends_nothing_and_says_so(client, model, run_id):
    queue = await unserved_run(client, model, run_id)
    try:
        approved = await agent_cli("approve", run_id, "call_1")
    finally:
        await client.get_workflow_handle(run_id).terminate("test over")
    assert approved.returncode == 1
    assert approved.stderr.strip() == (
        f"error: no worker polls task queue '{queue}' (the server has seen none in the last 5 minutes), so no "
        f"worker can take the decision for run {run_id}: nothing was sent (a worker checks the decision before it "
        f"reaches the run's history). Start a worker on '{queue}' (`python worker.py`, or `agent dev`), then run "
        "this again."
    )


async def test_approve_after_the_worker_stopped_times_out_and_says_what_became_of_it(client, scripted, model, run_id):
    queue = f"stopped-{run_id}"
    async with create_worker(client, tools=TEST_TOOLS, task_queue=queue):
        handle, call = await parked_run(client, scripted, model, run_id, queue)
    # the server still remembers the worker's last poll: the command waits --timeout, saying so
    approved = await agent_cli("approve", run_id, call.tool_call_id, "--approver", "ann", "--timeout", "2")
    assert approved.returncode == 1, approved.stdout
    waited, error = approved.stderr.strip().splitlines()
    assert waited == f"waiting up to 2 s for run {run_id} to accept the confirm of call {call.tool_call_id} ..."
    assert error == (
        f"error: Run '{run_id}' did not accept or refuse the decision within 2 s: no worker took it (is the run's "
        f"worker running, or stopped?). {UPDATE_HELD} Sending the same decision again is safe: it is applied once."
    )
    events = [e.WhichOneof("attributes") for e in (await handle.workflow.fetch_history()).events]
    assert "workflow_execution_update_accepted_event_attributes" not in events
    async with create_worker(client, tools=TEST_TOOLS, task_queue=queue):  # as the message says
        result = await asyncio.wait_for(handle.result(), timeout=120)
    assert result.last_message.text == "done"
    assert result.messages[-3].tool_calls[0].extra["confirmation"]["approver"] == "ann"


async def test_status_with_no_worker_answers_from_the_server(client, model, run_id):
    queue = await unserved_run(client, model, run_id)
    try:
        began = time.monotonic()
        status = await agent_cli("status", run_id)
        took = time.monotonic() - began
    finally:
        await client.get_workflow_handle(run_id).terminate("test over")
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["status"] == "RUNNING" and shown["done"] is False and "query_error" not in shown
    assert shown["worker"] == f"no worker polls task queue '{queue}' (the server has seen none in the last 5 minutes)"
    assert status.stderr.strip() == (
        f"agent: run {run_id}: no worker polls task queue '{queue}' (the server has seen none in the last 5 "
        "minutes); it makes no progress until one does"
    )
    assert took < 25, took  # no query waits for a worker (it took 31.5 s when one did)


async def test_status_of_a_failed_run_exits_1_naming_the_hook_and_cause(worker, scripted, model, run_id, monkeypatch):
    monkeypatch.setenv(MODEL_ENV, model)
    await agent_cli(
        "run",
        "hi",
        "--agent",
        "tests.support.cli_agents:make_failing_agent",
        "--run-id",
        run_id,
        "--task-queue",
        worker,
        "--wait",
    )
    status = await agent_cli("status", run_id)
    assert status.returncode == 1
    assert json.loads(status.stdout)["status"] == "FAILED"
    assert status.stderr.strip() == (
        f"agent: run {run_id} failed: Hook tests.tools.raise_value_error failed at before_llm (step 0): "
        "ValueError: boom from a hook"
    )


async def test_status_of_a_terminated_run_exits_1_with_the_reason(client, model, run_id):
    await unserved_run(client, model, run_id)
    await client.get_workflow_handle(run_id).terminate(reason="stopped by the operator")
    status = await agent_cli("status", run_id)
    assert status.returncode == 1
    assert status.stderr.strip() == f"agent: run {run_id} terminated: stopped by the operator"


def test_a_failure_names_its_innermost_cause():
    inner = Failure(
        message="Connection error.", application_failure_info=ApplicationFailureInfo(type="APIConnectionError")
    )
    outer = Failure(message="Failure exceeds size limit", cause=Failure(message="Activity task failed", cause=inner))
    assert (
        describe_failure(outer) == "Failure exceeds size limit (innermost cause: APIConnectionError: Connection error.)"
    )
    told = Failure(
        message="Hook h failed at before_llm (step 0): ValueError: boom",
        cause=Failure(message="boom", application_failure_info=ApplicationFailureInfo(type="ValueError")),
    )
    assert describe_failure(told) == "Hook h failed at before_llm (step 0): ValueError: boom"


async def test_run_wait_shows_the_step_the_waiting_call_and_how_to_approve(client, worker, scripted, model, run_id):
    scripted.script(model, [{"tool_calls": [{"name": "echo", "arguments": {"text": "ok?"}}]}, {"text": "approved"}])
    process = await spawn_cli(
        "run",
        "hi",
        "--agent",
        "tests.support.cli_agents:make_approval_agent",
        "--run-id",
        run_id,
        "--task-queue",
        worker,
        "--wait",
        env={MODEL_ENV: model},
    )
    seen: list[str] = []
    try:
        while not any(line.startswith("waiting for approval of") for line in seen):
            line = await asyncio.wait_for(process.stdout.readline(), timeout=60)
            assert line, "agent run --wait ended before it showed the waiting call: " + "".join(seen)
            seen.append(line.decode())
        [call] = await get_run(client, run_id).pending_confirmations()
        await get_run(client, run_id).confirm(call.tool_call_id, approver="ann")
        rest, err = await asyncio.wait_for(process.communicate(), timeout=60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    out = "".join(seen) + rest.decode()
    assert process.returncode == 0, out + err.decode()
    assert "step 0: tools\n" in seen or "step 0: before_tool\n" in seen, seen
    assert (
        f"waiting for approval of echo ({call.tool_call_id}): approve with `agent approve {run_id} {call.tool_call_id}`\n"
    ) in seen
    assert "final answer: approved\n" in out


async def test_run_wait_on_a_hook_failure_prints_the_whole_reason(worker, scripted, model, run_id):
    ran = await agent_cli(
        "run",
        "hi",
        "--agent",
        "tests.support.cli_agents:make_failing_agent",
        "--run-id",
        run_id,
        "--task-queue",
        worker,
        "--wait",
        env={MODEL_ENV: model},
    )
    assert ran.returncode == 1
    assert ran.stdout.strip().splitlines()[-1] == (
        f"run {run_id} failed: Hook tests.tools.raise_value_error failed at before_llm (step 0): "
        "ValueError: boom from a hook"
    )


async def test_a_wrong_temporal_address_names_it_and_how_to_fix_it():
    port = free_port()
    ran = await agent_cli("status", "run-1", env={"TEMPORAL_ADDRESS": f"127.0.0.1:{port}"})
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines()[-1] == (
        f"agent: error: cannot reach the Temporal server at 127.0.0.1:{port} (TEMPORAL_ADDRESS), namespace "
        f"{os.environ.get('TEMPORAL_NAMESPACE', 'default')}: connection refused. Set TEMPORAL_ADDRESS to your "
        "server's host:port; for the embedded stack, `agent dev` writes env.sh into its data directory: run "
        "`source .agent-dev/env.sh` in this shell."
    )
    assert "tonic" not in ran.stderr


async def test_wait_for_pending_returns_the_calls_or_says_why_not(client, worker, scripted, model, run_id):
    handle, call = await parked_run(client, scripted, model, run_id, worker)
    assert [p.tool_call_id for p in await handle.wait_for_pending()] == [call.tool_call_id]
    await handle.confirm(call.tool_call_id)
    await handle.result()
    with pytest.raises(RuntimeError, match=rf"^Run '{run_id}' ended \(completed\) before asking for a confirmation$"):
        await handle.wait_for_pending(timeout=timedelta(seconds=2))
    other = run_id + "-unserved"
    await unserved_run(client, model, other)
    try:
        with pytest.raises(
            TimeoutError, match=rf"^Run '{other}' asked for no confirmation within 2 s: Run '{other}' did not answer"
        ):
            await get_run(client, other).wait_for_pending(timeout=timedelta(seconds=2))
    finally:
        await client.get_workflow_handle(other).terminate("test over")
    with pytest.raises(UnknownRunError, match="^No run 'no-such-run-xyz'"):
        await get_run(client, "no-such-run-xyz").wait_for_pending(timeout=timedelta(seconds=2))


# -- one way to name things --------------------------------------------------------------------

#: Every subcommand, and whether it takes a RUN.
SUBCOMMANDS = {
    "dev": False,
    "config": False,
    "run": False,
    "status": True,
    "runs": False,
    "watch": True,
    "result": True,
    "pending": False,
    "approve": True,
    "reject": True,
    "modify": True,
    "send": True,
    "chat": True,
    "cancel": True,
    "inbox": False,
    "replay-check": False,
    "rewind": True,
    "demo": False,
}


@pytest.mark.parametrize(("command", "takes_run"), list(SUBCOMMANDS.items()))
def test_every_subcommand_has_a_description_and_an_example(command, takes_run, capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([command, "--help"])
    assert exited.value.code == 0
    usage, description, *rest = capsys.readouterr().out.split("\n\n")
    assert usage.startswith(f"usage: agent {command}")
    assert len(description.split()) >= 8, description  # a sentence, not a label
    assert f"examples:\n  agent {command}" in "\n\n".join(rest)
    if takes_run:
        assert re.search(r"[ \[]RUN\b", usage) and "run_id" not in usage, usage


def test_the_default_approver_is_agent_approver_else_the_os_user(monkeypatch, capsys):
    monkeypatch.setenv("AGENT_APPROVER", "zoe")
    assert default_approver() == "zoe" and dev_identity() == "zoe"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["approve", "--help"])
    assert "$AGENT_APPROVER, else your OS user name: 'zoe'" in " ".join(capsys.readouterr().out.split())
    monkeypatch.delenv("AGENT_APPROVER")
    assert default_approver() == getpass.getuser() == dev_identity()


async def test_a_decision_without_approver_records_agent_approver(client, worker, scripted, model, run_id):
    handle, call = await parked_run(client, scripted, model, run_id, worker)
    approved = await agent_cli("approve", run_id, call.tool_call_id, env={"AGENT_APPROVER": "zoe"})
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.startswith(f"confirm: echo call {call.tool_call_id} of run {run_id} by zoe\n")
    assert (await handle.result()).last_message.text == "done"


async def test_status_names_the_innermost_cause_of_a_model_that_cannot_be_reached(client, model, run_id):
    queue = f"no-model-{run_id}"
    # a worker process of its own whose model endpoint refuses connections
    worker_process = await asyncio.create_subprocess_exec(
        sys.executable,
        "worker.py",
        "--tools",
        "tests.tools.TEST_TOOLS",
        "--task-queue",
        queue,
        env={**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1"},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        handle = await Agent(model=model, tools=[t.echo], model_retry_timeout=timedelta(seconds=2)).start(
            client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=queue
        )
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(handle.result(), timeout=120)
        status = await agent_cli("status", run_id)
    finally:
        if worker_process.returncode is None:
            worker_process.terminate()
        await worker_process.wait()
    assert status.returncode == 1
    assert re.fullmatch(
        rf"agent: run {run_id} failed: The model call was given up: it kept failing for 0:00:02 "
        r"\(model_retry_timeout\)\. Last error: Could not reach the model endpoint http://127\.0\.0\.1:\d+/v1 "
        rf"\(from OPENAI_BASE_URL\) for model '{model}': Connection error\. "
        r"\(ConnectError\('All connection attempts failed'\)\)\.",
        status.stderr.strip(),
    ), status.stderr

"""How runs read at their end and while they wait, as a user sees them in the CLI: a cancelled run's
reason, last message and cut tool call; a stuck run's cancel with its next step; a run waiting for
approval named by ``agent result``; the tool error ``agent run --wait`` used to hide; and ``agent
chat --agent`` on a finished run, which must not start a new run under its id."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from agent import Agent, ChatMessage
from bench.cancel_support import gate, gate_dir
from tests import tools as t
from tests.agent.cli.test_cli import agent_cli, make_approval_agent_for, unserved_run
from tests.support.cli_agents import MODEL_ENV
from tests.support.polling import eventually
from tests.support.stuck_runs import WALL_CLOCK_ERROR, fix_for, stuck_run


async def test_a_cancelled_run_reads_with_its_reason_last_message_and_cut_call(client, worker, scripted, model, run_id):
    label = f"cut-{uuid.uuid4().hex[:8]}"
    scripted.script(model, [{"tool_calls": [{"id": "call_gate", "name": "gate", "arguments": {"label": label}}]}])
    await Agent(model=model, tools=[gate]).start(
        client, [ChatMessage.from_user("wait at the gate")], run_id=run_id, task_queue=worker
    )
    await eventually(lambda: (gate_dir() / f"{label}.started").exists(), message="the tool never started")
    cancelled = await agent_cli("cancel", run_id, "--reason", "closed by ann")
    assert cancelled.returncode == 0, cancelled.stderr

    result = await agent_cli("result", run_id)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("exit_reason: cancelled"), result.stdout
    assert lines[1] == "cancelled: closed by ann"
    cut = "tool gate (call_gate) error: Tool call 'gate' was cancelled: the run was cancelled (closed by ann)."
    assert lines[2] == f"cut: {cut}"
    assert lines[3].startswith("last message (tool): gate error: Tool call 'gate' was cancelled"), result.stdout
    assert "None" not in result.stdout

    watched = await agent_cli("watch", run_id, "--plain")
    assert "cancelled: closed by ann" in watched.stdout, watched.stdout
    assert f"  cut: {cut}" in watched.stdout, watched.stdout


async def test_cancelling_a_stuck_run_names_the_cause_and_the_next_step(client, worker, scripted, model, run_id):
    async with stuck_run(client, worker, scripted, model, run_id):
        refused = await agent_cli("cancel", run_id, "--reason", "give up", "--timeout", "5")
        assert refused.returncode == 1
        assert "Workflow Task in failed state" not in refused.stderr
        assert refused.stderr.startswith(
            f"error: run {run_id} cannot take the cancel: it is stuck, its workflow task keeps failing (attempt "
        ), refused.stderr
        assert WALL_CLOCK_ERROR in refused.stderr and fix_for(worker) in refused.stderr
        assert f'agent cancel {run_id} --force --reason "..."' in refused.stderr
    # --force, as the message says: Temporal's terminate, which needs no worker
    unserved = run_id + "-unserved"
    await unserved_run(client, model, unserved)
    forced = await agent_cli("cancel", unserved, "--reason", "give up", "--force")
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.startswith(f"run {unserved} terminated (give up)")
    assert (await client.get_workflow_handle(unserved).describe()).status.name == "TERMINATED"


async def test_result_of_a_run_waiting_for_approval_names_the_call_and_the_command(
    client, worker, scripted, model, run_id
):
    scripted.script(model, [{"tool_calls": [{"name": "echo", "arguments": {"text": "ok?"}}]}, {"text": "done"}])
    handle = await make_approval_agent_for(model).start(
        client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=worker
    )
    [call] = await handle.wait_for_pending(timeout=timedelta(seconds=60))
    waited = await agent_cli("result", run_id, "--timeout", "3")
    assert waited.returncode == 1
    assert (
        f'agent: it waits for approval of echo ({call.tool_call_id}) {{"text": "ok?"}}: '
        f"agent approve {run_id} {call.tool_call_id}  (or agent reject / agent modify)"
    ) in waited.stderr, waited.stderr
    await handle.confirm(call.tool_call_id)
    await handle.result()


async def test_run_wait_shows_the_tool_error(worker, scripted, model, run_id):
    scripted.script(
        model, [{"tool_calls": [{"id": "call_x", "name": "explode", "arguments": {"reason": "x"}}]}, {"text": "oops"}]
    )
    ran = await agent_cli("run", "break it", "--run-id", run_id, "--model", model, "--task-queue", worker, "--wait")
    assert ran.returncode == 0, ran.stderr
    assert "  tool explode (call_x) error: " in ran.stdout, ran.stdout


async def test_chat_with_agent_on_a_finished_run_refuses_instead_of_starting_a_new_one(
    client, worker, scripted, model, run_id, tmp_path
):
    scripted.script(model, [{"text": "bye"}])
    handle = await Agent(model=model, tools=[t.echo]).start(
        client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=worker
    )
    await handle.result()
    first = (await client.get_workflow_handle(run_id).describe()).run_id
    chatted = await agent_cli(
        "chat",
        run_id,
        "--agent",
        "tests.support.cli_agents:make_chat_agent",
        "--task-queue",
        worker,
        stdin="hello again\n",
        env={MODEL_ENV: model},
    )
    assert chatted.returncode == 1, chatted.stdout
    assert chatted.stderr.strip() == (
        f"error: run '{run_id}' has ended (completed): it takes no more messages. `agent result {run_id}` shows "
        "how it ended; to talk to tests.support.cli_agents:make_chat_agent again, give a new run id."
    )
    await asyncio.sleep(0)
    assert (await client.get_workflow_handle(run_id).describe()).run_id == first  # no new run

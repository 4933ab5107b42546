"""``agent send / chat / cancel / pending --replies / watch`` on a session, as a user runs them:
subprocesses against the test stack and the scripted model (``chat`` is fed its stdin)."""

from __future__ import annotations

import argparse
import json
from datetime import timedelta

import pytest

from agent import Agent, ChatMessage
from agent.cli import build_parser
from tests import tools as t
from tests.agent.cli.test_cli import agent_cli, unserved_run
from tests.support.cli_agents import MODEL_ENV
from tests.support.hitl_helpers import call, calls
from tests.support.polling import eventually


async def in_process(client, capsys, *argv: str) -> tuple[int, str, str]:
    args: argparse.Namespace = build_parser().parse_args(argv)
    code = await args.handler(args, client)
    out, err = capsys.readouterr()
    return code, out, err


async def waiting_session(client, worker, model: str, run_id: str, participants: list[str] | None = None):
    agent = Agent(model=model, tools=[t.add], participants=participants)
    handle = await agent.start(
        client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=worker, wait_for_user=timedelta(minutes=5)
    )
    await eventually(handle.status, lambda s: s.waiting_for_user, message="the session never waited for the user")
    return handle


@pytest.mark.slow
async def test_send_pending_replies_cancel_and_watch(client, worker, scripted, model, run_id, capsys):
    scripted.script(model, [{"text": "hello, what shall I add?"}, calls(call("add", id="a1", a=1, b=2)), {"text": "3"}])
    handle = await waiting_session(client, worker, model, run_id, participants=["ann"])

    async def listed() -> str:
        return (await in_process(client, capsys, "pending", "--replies"))[1]

    table = await eventually(listed, lambda out: run_id in out, message=f"{run_id} never listed as waiting for a reply")
    header, *rows = table.splitlines()
    assert header.split()[:2] == ["RUN", "TURN"]
    [row] = [r for r in rows if r.startswith(run_id)]
    assert "hello, what shall I add?" in row and f'agent send {run_id} "..."' in row
    code, out, _ = await in_process(client, capsys, "pending", "--replies", "--json")
    [entry] = [e for e in json.loads(out) if e["run_id"] == run_id]
    assert code == 0 and entry["turn"] == 1 and entry["last_message"] == "hello, what shall I add?"
    assert entry["reply"] == f'agent send {run_id} "..."'

    refused = await agent_cli("send", run_id, "add 1 and 2", "--sender", "eve")
    assert refused.returncode == 1
    assert "refused the message: Sender 'eve' may not write to this run: participants are ann" in refused.stderr
    sent = await agent_cli("send", run_id, "add 1 and 2", "--sender", "ann", "--message-id", "ann-1")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.splitlines()[0] == f"sent to run {run_id}: message ann-1, turn 2"
    turn = await handle.wait_turn(2)
    assert (turn.exit_reason, turn.last_message.text) == ("text", "3")

    cancelled = await agent_cli("cancel", run_id, "--reason", "closed by the user")
    assert cancelled.returncode == 0, cancelled.stderr
    assert cancelled.stdout.startswith(f"run {run_id} cancelled (closed by the user): exit_reason cancelled, turn 2")
    again = await agent_cli("cancel", run_id, "--reason", "twice")
    assert again.returncode == 1 and f"run {run_id} is completed" in again.stderr
    late = await agent_cli("send", run_id, "anyone?")
    assert late.returncode == 1 and f"run {run_id} is completed: it takes no more messages" in late.stderr

    watched = await agent_cli("watch", run_id, "--plain")
    lines = [line.strip() for line in watched.stdout.splitlines()]
    turn_lines = [line for line in lines if line.startswith(("turn ", "message from"))]
    assert turn_lines == [
        "turn 1 started",
        "turn 1 ended: exit_reason text; waiting for the user's next message",
        "message from ann for turn 2: add 1 and 2",
        "turn 2 started",
        "turn 2 ended: exit_reason text; waiting for the user's next message",
    ], watched.stdout
    assert f"run {run_id} completed: exit reason cancelled" in watched.stdout


async def test_chat_sends_each_line_and_prints_each_answer_until_end_of_input(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "hello"}, {"text": "first answer"}, {"text": "second answer"}])
    handle = await waiting_session(client, worker, model, run_id)

    chatted = await agent_cli("chat", run_id, "--sender", "ann", stdin="one\n\ntwo\n")

    assert chatted.returncode == 0, chatted.stderr
    answers = [line for line in chatted.stdout.splitlines() if line.startswith(("assistant:", "[turn"))]
    assert answers == [
        "assistant: first answer",
        "[turn 2 ended: exit_reason text]",
        "assistant: second answer",
        "[turn 3 ended: exit_reason text]",
    ], chatted.stdout
    assert f"chat ended; run {run_id} goes on" in chatted.stdout
    status = await handle.status()
    assert status.waiting_for_user and not status.done and status.turn == 3  # Ctrl-D did not cancel it
    await handle.cancel("test over")


async def test_chat_with_agent_starts_a_session_and_shows_refusals_inline(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "started, hi ann"}])
    env = {MODEL_ENV: model}
    chatted = await agent_cli(
        "chat",
        run_id,
        "--agent",
        "tests.support.cli_agents:make_chat_agent",
        "--sender",
        "ann",
        "--task-queue",
        worker,
        stdin="hello\n",
        env=env,
    )
    assert chatted.returncode == 0, chatted.stderr
    assert "assistant: started, hi ann" in chatted.stdout
    handle = client.get_workflow_handle(run_id)
    refused = await agent_cli("chat", run_id, "--sender", "eve", stdin="me too\n")
    assert refused.returncode == 0
    assert "refused: Run" in refused.stderr and "Sender 'eve' may not write to this run" in refused.stderr
    await handle.execute_update("cancel_run", {"reason": "test over"})
    missing = await agent_cli("chat", "no-such-session", stdin="hi\n")
    assert missing.returncode == 1 and "give --agent to start one" in missing.stderr


async def test_send_and_cancel_with_no_worker_send_nothing_and_say_so(client, model, run_id):
    queue = await unserved_run(client, model, run_id)
    try:
        sent = await agent_cli("send", run_id, "hello?")
        cancelled = await agent_cli("cancel", run_id, "--reason", "nobody home")
        history = await client.get_workflow_handle(run_id).fetch_history()
    finally:
        await client.get_workflow_handle(run_id).terminate("test over")
    assert sent.returncode == 1 and cancelled.returncode == 1
    assert sent.stderr.startswith(f"error: no worker polls task queue '{queue}'")
    assert f"so no worker can take the message for run {run_id}: nothing was sent" in sent.stderr
    assert f"so no worker can take the cancel for run {run_id}" in cancelled.stderr
    assert not [e for e in history.events if e.HasField("workflow_execution_update_accepted_event_attributes")]

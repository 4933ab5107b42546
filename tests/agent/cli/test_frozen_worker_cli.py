"""``agent approve`` and ``agent send`` against a frozen worker (SIGSTOP by PID; the server still
counts it as polling): each returns within its ``--timeout``, says what became of the request, and
a retry never doubles it."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import timedelta

import pytest

from tests.agent.cli.test_cli import agent_cli, parked_run
from tests.support.frozen_worker import bound, worker_to_freeze
from tests.support.sessions import answered_session

pytestmark = pytest.mark.slow

#: The CLI's own start (imports, connecting) on a busy two-core machine, outside its deadline.
CLI_START_SECONDS = 15.0


async def timed_cli(*args: str):
    began = time.monotonic()
    done = await agent_cli(*args)
    return done, time.monotonic() - began


async def test_approve_with_a_frozen_worker_returns_at_its_deadline(client, scripted, model, run_id, tmp_path):
    # Longer than the server's own long poll (20 s), after which the client used to ask again, and again.
    deadline = 25.0
    async with worker_to_freeze(tmp_path, f"frozen-{run_id}") as worker:
        handle, call = await parked_run(client, scripted, model, run_id, worker.task_queue)
        worker.freeze()
        approved, took = await timed_cli(
            "approve", run_id, call.tool_call_id, "--approver", "ann", "--timeout", f"{deadline:g}"
        )
        assert approved.returncode == 1, approved.stdout
        assert took <= bound(deadline) + CLI_START_SECONDS, f"agent approve took {took:.1f} s"
        print(f"agent approve --timeout {deadline:g}, worker frozen: {took:.1f} s\n{approved.stderr}")
        assert f"did not accept or refuse the decision within {deadline:g} s: no worker took it" in approved.stderr
        assert "Sending the same decision again is safe: it is applied once." in approved.stderr
        again, _ = await timed_cli("approve", run_id, call.tool_call_id, "--approver", "ann", "--timeout", "2")
        assert again.returncode == 1, again.stdout  # the same decision, the same Update
        worker.thaw()
        # What the person is told to do once the worker is back: the same decision again, applied once
        # (the held one may have arrived already; the server does not promise it).
        done, _ = await timed_cli("approve", run_id, call.tool_call_id, "--approver", "ann", "--timeout", "60")
        settled = ("already decided", "nothing waits for the decision")  # the held decision got there first
        assert done.returncode == 0 or any(s in done.stderr for s in settled), done.stdout + done.stderr
        result = await asyncio.wait_for(handle.workflow.result(), 120)
    assert result.last_message.text == "done"
    updates = [
        e
        for e in (await handle.workflow.fetch_history()).events
        if e.WhichOneof("attributes") == "workflow_execution_update_accepted_event_attributes"
    ]
    assert len(updates) == 1  # two tries, one decision


async def test_send_with_a_frozen_worker_keeps_its_deadline_and_a_retry_adds_nothing(
    client, scripted, model, run_id, tmp_path
):
    scripted.script(model, [{"text": "Hi."}, {"text": "Got it once."}])
    deadline = 3.0
    async with worker_to_freeze(tmp_path, f"frozen-{run_id}") as worker:
        handle = await answered_session(client, model, run_id, worker.task_queue)
        worker.freeze()
        sent, took = await timed_cli("send", run_id, "please do it once", "--timeout", f"{deadline:g}")
        assert sent.returncode == 1, sent.stdout
        assert took <= bound(deadline) + CLI_START_SECONDS, f"agent send took {took:.1f} s"
        print(f"agent send --timeout {deadline:g}, worker frozen: {took:.1f} s\n{sent.stderr}")
        assert f"did not accept the message within {deadline:g} s: no worker took it" in sent.stderr, sent.stderr
        resend = re.search(r"to send it again safely: agent send \S+ \.\.\. --message-id (msg-[0-9a-f]+)", sent.stderr)
        assert resend, sent.stderr
        retried, _ = await timed_cli(
            "send", run_id, "please do it once", "--message-id", resend.group(1), "--timeout", f"{deadline:g}"
        )
        assert retried.returncode == 1, retried.stdout
        worker.thaw()
        sent_again, _ = await timed_cli(
            "send", run_id, "please do it once", "--message-id", resend.group(1), "--timeout", "60"
        )
        assert sent_again.returncode == 0, sent_again.stdout + sent_again.stderr
        turn = await handle.wait_turn(2, timeout=timedelta(seconds=90))
        assert turn.last_message.text == "Got it once."
        texts = [m["content"] for m in scripted.requests(model)[-1]["messages"] if m["role"] == "user"]
        assert texts == ["hi", "please do it once"]
        await handle.cancel("test over")
        await handle.result()

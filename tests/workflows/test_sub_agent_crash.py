"""kill -9 the worker (a ``python worker.py`` process, by PID) while a sub-agent's child run waits
for approval; a new worker answers the decision, the child's tool runs once, and the parent completes.

What happens, step by step, is in docs/composition.md ("When a worker dies while a child waits").
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from pathlib import Path

from agent import Agent, ChatMessage, get_run
from agent.dev.processes import start_worker
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy, ToolDecision
from tests import tools as t
from tests.support.hitl_helpers import call, calls
from tests.support.sub_agents import wait_child_pending

TOOLS = "tests.tools.TEST_TOOLS"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_kill_9_worker_while_a_child_waits_for_approval(client, scripted, model, run_id, tmp_path, monkeypatch):
    effects = tmp_path / "effects.jsonl"
    monkeypatch.setenv("SIDE_EFFECTS_FILE", str(effects))  # the worker processes inherit it
    queue = f"crash-{run_id}"
    researcher = Agent(
        model=f"{model}-r",
        tools=[t.record],
        hooks={"before_tool": [ConfirmationHook({"record": DurableConfirmationStrategy(AlwaysAskPolicy())})]},
    )
    lead = Agent(model=model, tools=[researcher.as_tool("research", "Research one question")])
    scripted.script(model, [calls(call("research", id="r1", input="record the finding")), {"text": "Filed."}])
    scripted.script(f"{model}-r", [calls(call("record", id="w1", label="finding")), {"text": "Recorded it."}])

    first = start_worker(tmp_path / "worker1.log", TOOLS, queue)
    second = None
    try:
        handle = await lead.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=queue)
        child = get_run(client, f"{run_id}/r1")
        (pending,) = await wait_child_pending(child, timeout=60)
        assert pending.parent_run_id == run_id
        first.kill()  # SIGKILL by PID: no clean shutdown, the workflow caches are gone
        killed_at = time.monotonic()
        second = start_worker(tmp_path / "worker2.log", TOOLS, queue)
        # The Update needs a worker: the new one replays the child's history to answer it (the
        # first attempt may go to the dead worker's sticky queue and wait for it to time out).
        decision = ToolDecision(tool_call_id=pending.tool_call_id, action="confirm", approver="ann")
        record = await child.decide(decision, timeout=timedelta(seconds=90))
        result = await asyncio.wait_for(handle.result(), timeout=120)
        print(f"parent completed {time.monotonic() - killed_at:.1f} s after kill -9 of the worker")
    finally:
        for process in (first, second):
            if process is not None:
                process.stop(timeout=15)

    assert record.approver == "ann"
    assert result.last_message.text == "Filed."
    (answer,) = [m for m in result.messages if m.tool_call_result is not None]
    assert answer.tool_call_result.result == "Recorded it."
    assert [e["label"] for e in lines(effects)] == ["finding"]  # the approved tool ran exactly once
    assert lines(effects)[0]["key"] == f"{run_id}/r1/w1"  # the child's own idempotency key

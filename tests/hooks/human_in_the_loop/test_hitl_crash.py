"""A run waiting for approval survives ``kill -9`` of its worker: a new worker (another process)
takes over, the approval arrives, and the approved tool runs exactly once."""

from __future__ import annotations

import json
import signal
import uuid

import pytest

from agent.dev.processes import start_worker
from tests.support.hitl_helpers import call, calls, hitl_agent, start, wait_pending


@pytest.mark.slow
async def test_kill_9_while_waiting_then_new_worker_approves_and_tool_runs_once(
    client, stack, scripted, model, run_id, tmp_path
):
    queue = f"hitl-crash-{uuid.uuid4().hex[:8]}"
    effects = tmp_path / "effects.jsonl"
    log = tmp_path / "workers.log"
    scripted.script(model, [calls(call("record", label="deploy")), {"text": "deployed"}])

    first = start_worker(log, "tests.tools.TEST_TOOLS", queue, env={"SIDE_EFFECTS_FILE": str(effects)})
    second = None
    try:
        handle = await start(hitl_agent(model), client, queue, run_id)
        (pending,) = await wait_pending(handle)

        assert first.kill() == -signal.SIGKILL

        second = start_worker(log, "tests.tools.TEST_TOOLS", queue, env={"SIDE_EFFECTS_FILE": str(effects)})
        record = await handle.confirm(pending.tool_call_id, approver="ann")
        result = await handle.result()
    finally:
        first.stop(timeout=15)
        if second is not None:
            second.stop(timeout=15)

    assert record.approver == "ann"
    assert result.messages[-2].tool_call_result.result == "recorded deploy"
    done = [json.loads(line) for line in effects.read_text().splitlines()]
    started = [json.loads(line) for line in effects.with_suffix(".started").read_text().splitlines()]
    assert done == started == [{"label": "deploy", "key": f"{run_id}/{pending.tool_call_id}", "attempt": 1}]

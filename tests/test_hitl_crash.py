"""A run waiting for approval survives ``kill -9`` of its worker: a new worker (another process)
takes over, the approval arrives, and the approved tool runs exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from tests.hitl_helpers import call, calls, hitl_agent, start, wait_pending

REPO = Path(__file__).resolve().parent.parent


def spawn_worker(queue: str, effects: Path, log: Path) -> subprocess.Popen:
    """``python -m tests.worker_process`` on ``queue``; returns once it prints that it polls."""
    env = {**os.environ, "SIDE_EFFECTS_FILE": str(effects), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.worker_process", "--task-queue", queue],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=log.open("ab"),
    )
    line = proc.stdout.readline().decode()
    if not line.startswith("worker ready"):
        proc.kill()
        proc.wait()
        raise AssertionError(f"worker did not start: {line!r}; log: {log.read_text()[-2000:]}")
    return proc


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def test_kill_9_while_waiting_then_new_worker_approves_and_tool_runs_once(
    client, stack, scripted, model, run_id, tmp_path
):
    queue = f"hitl-crash-{uuid.uuid4().hex[:8]}"
    effects = tmp_path / "effects.jsonl"
    log = tmp_path / "workers.log"
    scripted.script(model, [calls(call("record", label="deploy")), {"text": "deployed"}])

    first = spawn_worker(queue, effects, log)
    second = None
    try:
        handle = await start(hitl_agent(model), client, queue, run_id)
        (pending,) = await wait_pending(handle)

        os.kill(first.pid, signal.SIGKILL)
        assert first.wait(timeout=15) == -signal.SIGKILL

        second = spawn_worker(queue, effects, log)
        record = await handle.confirm(pending.tool_call_id, approver="ann")
        result = await handle.result()
    finally:
        stop(first)
        if second is not None:
            stop(second)

    assert record.approver == "ann"
    assert result.messages[-2].tool_call_result.result == "recorded deploy"
    done = [json.loads(line) for line in effects.read_text().splitlines()]
    started = [json.loads(line) for line in effects.with_suffix(".started").read_text().splitlines()]
    assert done == started == [{"label": "deploy", "key": f"{run_id}/{pending.tool_call_id}", "attempt": 1}]

"""kill -9 the worker while tool activities are in flight; a new worker finishes the run.

Completed tool calls ran exactly once; the in-flight ones ran again with the same
idempotency key (tools run at least once). Recovery time is printed, not asserted (shared
machines are noisy); bench figures are in the README.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from agent import Agent, ChatMessage
from agent.dev.processes import start_worker
from tests import tools as t
from tests.support.polling import eventually


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


TOOLS = "tests.tools.TEST_TOOLS"


@pytest.mark.slow
async def test_kill_9_worker_mid_tools(client, scripted, model, run_id, tmp_path, monkeypatch):
    effects = tmp_path / "effects.jsonl"
    started = effects.with_suffix(".started")
    monkeypatch.setenv("SIDE_EFFECTS_FILE", str(effects))
    queue = f"crash-{run_id}"

    def record(label, seconds):
        return {"name": "record", "arguments": {"label": label, "seconds": seconds}}

    scripted.script(
        model,
        [
            {"tool_calls": [record("a", 0), record("b", 0)]},
            {"tool_calls": [record("c", 4), record("d", 4)]},
            {"text": "done"},
        ],
    )
    first = start_worker(tmp_path / "worker1.log", TOOLS, queue, wait_ready=False)
    second = None
    try:
        agent = Agent(model=model, tools=[t.record])
        handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=queue)
        await eventually(
            lambda: {e["label"] for e in lines(started)},
            lambda labels: labels >= {"c", "d"},
            timeout=60,
            message="tools c and d never both started",
        )
        first.kill()
        killed_at = time.monotonic()
        second = start_worker(tmp_path / "worker2.log", TOOLS, queue, wait_ready=False)
        await eventually(
            lambda: sum(1 for e in lines(started) if e["label"] in "cd"),
            lambda starts: starts >= 4,
            timeout=60,
            message="tools c and d were never started again after the kill",
        )
        resumed_after = time.monotonic() - killed_at
        result = await asyncio.wait_for(handle.result(), timeout=120)
        print(f"in-flight tool calls restarted on the new worker {resumed_after:.1f} s after kill -9")
    finally:
        for process in (first, second):
            if process is not None:
                process.stop(timeout=15)

    assert result.last_message.text == "done" and result.tool_call_counts == {"record": 4}
    completed = lines(effects)
    assert sorted(e["label"] for e in completed) == ["a", "b", "c", "d"]  # each completed exactly once
    starts = {label: [e for e in lines(started) if e["label"] == label] for label in "abcd"}
    assert len(starts["a"]) == len(starts["b"]) == 1
    for label in "cd":
        attempts = starts[label]
        assert len(attempts) == 2, attempts
        assert attempts[0]["key"] == attempts[1]["key"]  # same idempotency key on retry
        assert attempts[0]["key"].startswith(f"{run_id}/")
        assert [a["attempt"] for a in attempts] == [1, 2]

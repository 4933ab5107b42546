"""Stop the Temporal dev server mid-run, start it again on the same database: the run completes."""

from __future__ import annotations

import asyncio
import json

from agent import Agent, ChatMessage
from agent.client import connect
from agent.dev.stack import TemporalDevServer
from tests import tools as t
from worker import create_worker


async def wait_for_lines(path, count, timeout=30.0):
    for _ in range(int(timeout / 0.1)):
        if path.exists() and len(path.read_text().splitlines()) >= count:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} never reached {count} lines")


async def test_run_survives_server_restart(tmp_path, scripted, model, run_id, monkeypatch):
    side_effects = tmp_path / "effects.jsonl"
    monkeypatch.setenv("SIDE_EFFECTS_FILE", str(side_effects))
    scripted.script(
        model, [{"tool_calls": [{"name": "record", "arguments": {"label": "slow", "seconds": 3}}]}, {"text": "done"}]
    )
    server = TemporalDevServer(tmp_path / "temporal.db", with_ui=False, log_file=tmp_path / "temporal.log").start()
    try:
        client = await connect(server.address)
        async with create_worker(client, tools=t.TEST_TOOLS, task_queue="restart"):
            agent = Agent(model=model, tools=[t.record])
            handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue="restart")
            await wait_for_lines(side_effects.with_suffix(".started"), 1)
            server.stop()
            await asyncio.sleep(1)
            server.start()  # same db file, same port
            result = await asyncio.wait_for(handle.result(), timeout=90)
        assert result.last_message.text == "done"
        assert result.tool_call_counts == {"record": 1}
        effects = [json.loads(line) for line in side_effects.read_text().splitlines()]
        assert {e["key"] for e in effects} == {f"{run_id}/{result.messages[-3].tool_calls[0].id}"}
    finally:
        server.stop()

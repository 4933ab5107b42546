"""Stop the Temporal dev server mid-run, start it again on the same database: the run completes.

The server is down from the moment the tool has started until the tool has finished, so the
worker reports the tool's completion to a server that is gone and must deliver it after the
restart; the tool still runs once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent import Agent, ChatMessage
from agent.client import connect
from agent.dev.stack import TemporalDevServer
from tests import tools as t
from tests.support.polling import eventually
from worker import create_worker


def line_count(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.slow
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
            started = side_effects.with_suffix(".started")
            await eventually(lambda: line_count(started), message="the record tool never started")
            server.stop()
            assert line_count(side_effects) == 0, "the tool finished before the server stopped"
            await eventually(lambda: line_count(side_effects), message="the record tool never finished")
            server.start()  # same db file, same port
            result = await asyncio.wait_for(handle.result(), timeout=90)
        assert result.last_message.text == "done"
        assert result.tool_call_counts == {"record": 1}
        effects = [json.loads(line) for line in side_effects.read_text().splitlines()]
        assert {e["key"] for e in effects} == {f"{run_id}/{result.messages[-3].tool_calls[0].id}"}
    finally:
        server.stop()

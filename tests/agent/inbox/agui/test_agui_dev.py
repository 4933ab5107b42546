"""``agent dev --agent examples.quickstart:agent`` serves the README's agent at ``POST /ag-ui/agent``,
and the official AG-UI client talks to it: the call waits for approval as an interrupt, approving
it runs the tool and the answer streams; another name is 404."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from agent.dev.processes import ROOT
from agent.dev.stack import free_port
from tests.agent.inbox.agui.support import drive, types

pytestmark = pytest.mark.integration  # starts agent dev and its servers itself

#: Long enough for the dev server, moto and the worker to start on two shared cores.
START_SECONDS = 150


async def _line_starting(process: asyncio.subprocess.Process, prefix: str, seen: list[str]) -> str:
    while True:
        raw = await asyncio.wait_for(process.stdout.readline(), START_SECONDS)
        if not raw:
            raise AssertionError(f"agent dev ended before printing {prefix!r}:\n{''.join(seen)}")
        seen.append(raw.decode())
        if seen[-1].startswith(prefix):
            return seen[-1]


@pytest.mark.slow
async def test_agent_dev_serves_the_quickstart_agent_to_an_ag_ui_client(tmp_path: Path, agui_client_dir: Path):
    ports = [str(free_port()) for _ in range(5)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "OPENAI_", "AGENT_", "AWS_"))}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agent.cli",
        "dev",
        "--agent",
        "examples.quickstart:agent",
        "--data-dir",
        str(tmp_path / "dev"),
        "--port",
        ports[0],
        "--ui-port",
        ports[1],
        "--s3-port",
        ports[2],
        "--model-port",
        ports[3],
        "--inbox-port",
        ports[4],
        "--inbox-identity",
        "carol",
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    seen: list[str] = []
    try:
        endpoint = (await _line_starting(process, "AG-UI:", seen)).split("POST ")[1].strip()
        assert endpoint == f"http://127.0.0.1:{ports[4]}/ag-ui/agent"
        await _line_starting(process, "Worker polling", seen)
        run_id = f"dev-agui-{uuid.uuid4().hex[:8]}"
        asked, approved = await drive(
            agui_client_dir,
            endpoint,
            run_id,
            [{"say": "/tmp/old.log"}, {"resume": {"action": "approve", "argumentsSha256": "from-interrupt"}}],
        )
        assert "error" not in asked, asked
        (interrupt,) = asked["pendingInterrupts"]
        assert interrupt["metadata"]["toolName"] == "delete_file"
        assert "error" not in approved and types(approved)[-1] == "RUN_FINISHED", approved
        result = next(e for e in approved["events"] if e["type"] == "TOOL_CALL_RESULT")
        assert result["content"].startswith("Deleted ")
        assert any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in approved["events"])
        (other,) = await drive(agui_client_dir, endpoint.replace("/agent", "/other"), run_id, [{"raw": {"body": {}}}])
        assert other["status"] == 404
    finally:
        process.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(process.wait(), 60)
        except TimeoutError:
            process.kill()
            await process.wait()

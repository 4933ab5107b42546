"""The `agent` CLI as a user runs it: a subprocess against the test stack and scripted model."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass

import pytest


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str


async def agent_cli(*args: str) -> Completed:
    """Run the CLI without blocking the event loop (the test worker shares it)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "agent.cli",
        *args,
        env=dict(os.environ),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    return Completed(process.returncode, out.decode(), err.decode())


@pytest.mark.usefixtures("client")
async def test_run_wait_status_and_result(worker, scripted, model, run_id):
    scripted.script(model, [{"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]}, {"text": "all done"}])
    # the CLI's `run` uses the demo agent; give it the test worker's queue and an echo-only script
    ran = await agent_cli("run", "say hi", "--run-id", run_id, "--model", model, "--task-queue", worker, "--wait")
    assert ran.returncode == 0, ran.stderr
    assert f"started run {run_id}" in ran.stdout
    status = await agent_cli("status", run_id)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["done"] is True
    result = await agent_cli("result", run_id, "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["last_message"]["text"] == "all done"


@pytest.mark.usefixtures("client")
async def test_unknown_run_is_a_clear_error():
    status = await agent_cli("status", "no-such-run-xyz")
    assert status.returncode == 1
    assert "no such run" in status.stderr and "Traceback" not in status.stderr


async def test_help_lists_every_command():
    helped = await agent_cli("--help")
    assert helped.returncode == 0
    for command in ("run", "pending", "approve", "reject", "modify", "status", "result", "dev", "demo"):
        assert command in helped.stdout

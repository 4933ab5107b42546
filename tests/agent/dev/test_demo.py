"""The README's main command ends in `agent demo`: run it as a user would and check its verdict."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

pytestmark = pytest.mark.integration  # `agent demo` starts its own stack


@pytest.mark.slow
async def test_demo_survives_kill_9_and_runs_each_tool_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TEMPORAL_ADDRESS")}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent.cli", "demo", "--data-dir", str(tmp_path / "demo"),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(process.communicate(), timeout=240)
    text = out.decode()
    assert process.returncode == 0, text
    assert "SCRIPTED model" in text  # labelled as such
    assert "kill -9 worker #1 while a tool call is in flight" in text
    assert "(completed on attempt 2, after the crash)" in text
    assert "OK: every tool call completed exactly once despite the crash" in text

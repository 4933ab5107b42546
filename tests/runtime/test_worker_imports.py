"""A worker process loads no people-side code (DESIGN.md "Layers": a worker loads no CLI, web or
console code): a subprocess imports ``worker``, runs a worker that takes a run through an
approval to its end, and lists what it imported."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
import uuid
from datetime import timedelta

import pytest

from agent.agent import Agent
from core.messages import ChatMessage
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from tests import tools as t

#: Modules of the people's side, and the libraries only they use.
PEOPLE_SIDE = ("agent.approvals", "agent.cli", "agent.inbox", "agent.watch", "rich", "starlette", "jinja2", "uvicorn")

WORKER = textwrap.dedent(
    """
    import asyncio, json, sys

    from worker import create_worker
    from runtime.plugin import connect
    from tests.tools import TEST_TOOLS

    async def main() -> None:
        client = await connect()
        async with create_worker(client, tools=TEST_TOOLS, task_queue=sys.argv[1]):
            print("polling", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # the test's run is done
        print(json.dumps(sorted(sys.modules)), flush=True)

    asyncio.run(main())
    """
)


@pytest.mark.slow
async def test_a_worker_that_runs_an_approval_loads_no_people_side_code(client, scripted, model, run_id):
    queue = f"imports-{uuid.uuid4().hex[:8]}"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WORKER,
        queue,
        env=dict(os.environ),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        ready = await asyncio.wait_for(process.stdout.readline(), timeout=120)
        assert ready == b"polling\n", ready + await process.stderr.read()
        scripted.script(model, [{"tool_calls": [{"name": "echo", "arguments": {"text": "ok?"}}]}, {"text": "done"}])
        strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), timeout=timedelta(hours=1))
        agent = Agent(model=model, tools=[t.echo], hooks={"before_tool": [ConfirmationHook({"echo": strategy})]})
        handle = await agent.start(client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=queue)
        [pending] = await handle.wait_for_pending(timeout=timedelta(seconds=60))
        await handle.confirm(pending.tool_call_id, approver="ann")
        assert (await handle.result()).last_message.text == "done"
        out, err = await asyncio.wait_for(process.communicate(b"\n"), timeout=60)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, err.decode()
    modules = json.loads(out.decode().strip().splitlines()[-1])
    assert "workflows.agent_workflow" in modules and "hooks.human_in_the_loop.handlers" in modules
    loaded = sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in PEOPLE_SIDE))
    assert loaded == []

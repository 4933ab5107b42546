"""What the browser tests share: the tool they approve (it records when it starts), the agent
that asks for it, Chromium's launch options, and small waits."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from pathlib import Path

from agent import Agent, ChatMessage
from core.tools import current_tool_context, tool
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from hooks.tool_result_offloading import OffloadOverChars, S3ToolResultStore, ToolResultOffloadHook
from tests.support.polling import eventually

#: Task queue of the browser tests' own worker (its tool is not in tests/tools.py).
BROWSER_TASK_QUEUE = "browser-tests"
#: Where ``deploy_service`` appends one JSON line per call.
TOOL_LOG_ENV = "INBOX_TEST_TOOL_LOG"
#: Debian's Chromium (apt-get install chromium); Playwright's own browser download cannot work offline.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: The header the test inbox trusts for the approver's name (as a reverse proxy would set it).
IDENTITY_HEADER = "X-Forwarded-User"


@tool
def deploy_service(service: str, replicas: int, region: str = "eu-west-1") -> str:
    """Roll out a new version of a service to the given number of replicas."""
    started = time.time()  # first thing: the click-to-tool latency ends here
    context = current_tool_context()
    with Path(os.environ[TOOL_LOG_ENV]).open("a") as f:
        f.write(
            json.dumps(
                {"t": started, "run_id": context.run_id, "service": service, "replicas": replicas, "region": region}
            )
            + "\n"
        )
    return f"deployed {service} x{replicas} in {region}"


@tool
def fetch_logs(service: str, lines: int) -> str:
    """Return the last lines of a service's log."""
    return "".join(f"{service} line {i}: request served in {i % 97} ms\n" for i in range(lines))


def tool_calls_of(run_id: str) -> list[dict]:
    """The calls of ``deploy_service`` that ``run_id`` made, in order."""
    path = Path(os.environ[TOOL_LOG_ENV])
    if not path.exists():
        return []
    return [entry for line in path.read_text().splitlines() if (entry := json.loads(line))["run_id"] == run_id]


def deploy_agent(model: str, approvers: list[str] | None = None, offload: bool = False) -> Agent:
    """An agent whose ``deploy_service`` calls wait for a person (``approvers`` may decide); with
    ``offload``, ``fetch_logs`` results over 1,000 characters go to the S3 tool-result store."""
    strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), timeout=timedelta(hours=4), approvers=approvers)
    hooks: dict = {"before_tool": [ConfirmationHook({"deploy_service": strategy})]}
    if offload:
        store = S3ToolResultStore(os.environ["TOOL_RESULTS_BUCKET"])
        hooks["after_tool"] = [ToolResultOffloadHook(store, {"fetch_logs": OffloadOverChars(1000)})]
    return Agent(
        model=model,
        tools=[deploy_service, fetch_logs],
        system_prompt="You are the release assistant. Deploy only what the user asks for.",
        hooks=hooks,
    )


def deploy_script(service: str = "checkout", replicas: int = 3, reply: str = "Done.") -> list[dict]:
    """A scripted model that asks for one deployment, then answers ``reply``."""
    return [
        {"tool_calls": [{"name": "deploy_service", "arguments": {"service": service, "replicas": replicas}}]},
        {"text": reply},
    ]


async def start_parked_run(
    client, model: str, run_id: str, prompt: str, approvers: list[str] | None = None, offload: bool = False
):
    """Start a run of :func:`deploy_agent` and wait until its call is pending; returns (handle, call)."""
    handle = await deploy_agent(model, approvers, offload).start(
        client, [ChatMessage.from_user(prompt)], run_id=run_id, task_queue=BROWSER_TASK_QUEUE
    )
    pending = await eventually(handle.pending_confirmations, message=f"run {run_id} never asked for a confirmation")
    return handle, pending[0]

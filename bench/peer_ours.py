"""Our agent, for bench.peers: ``Agent`` as a user writes it (no hooks), on ``create_worker``."""

from __future__ import annotations

from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from agent import Agent, ChatMessage
from agent.client import connect as _connect
from bench.peer_common import PROMPT
from bench.workloads import big_text
from worker import create_worker

#: Completions of this activity type are the run's steps.
TOOL_ACTIVITY = "invoke_tool"


async def connect(address: str) -> Client:
    """A client with the project's converter (ExternalStorage on S3 for payloads over 256 KiB)."""
    return await _connect(address)


def worker(client: Client, task_queue: str) -> Worker:
    """``create_worker`` with the one tool."""
    return create_worker(client, tools=[big_text], task_queue=task_queue)


async def start(client: Client, task_queue: str, run_id: str, model: str, steps: int) -> WorkflowHandle:
    """Start one run; the returned handle follows it across continue-as-new."""
    agent = Agent(model=model, tools=[big_text], max_agent_steps=steps + 1)
    handle = await agent.start(client, [ChatMessage.from_user(PROMPT)], run_id=run_id, task_queue=task_queue)
    return handle.workflow

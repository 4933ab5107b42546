"""The bare floor, for bench.peers: bench/bare_floor.py's hand-written loop on temporalio alone."""

from __future__ import annotations

from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from bench.bare_floor import TOOL_ACTIVITY, bare_client, bare_worker, start_bare
from bench.peer_common import PROMPT

__all__ = ["TOOL_ACTIVITY", "connect", "start", "worker"]


async def connect(address: str) -> Client:
    """A client with Temporal's default data converter."""
    return await bare_client(address)


def worker(client: Client, task_queue: str) -> Worker:
    """The bare floor's own worker (its workflow and two activities)."""
    return bare_worker(client, task_queue)


async def start(client: Client, task_queue: str, run_id: str, model: str, steps: int) -> WorkflowHandle:
    """Start one run; it loops until the model answers text, so ``steps`` is not needed."""
    return await start_bare(client, task_queue, run_id, model, PROMPT)

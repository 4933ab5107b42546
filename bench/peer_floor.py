"""The floor, for bench.peers: bench.floor_workflow's bare loop of the same model and tool activities."""

from __future__ import annotations

from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from agent.client import connect as _connect
from bench.floor_workflow import FloorWorkflow
from bench.peer_common import PROMPT
from bench.workloads import big_text
from worker import create_worker

#: Completions of this activity type are the run's steps.
TOOL_ACTIVITY = "invoke_tool"


async def connect(address: str) -> Client:
    """A client with the project's converter, as bench.step_overhead runs the floor."""
    return await _connect(address)


def worker(client: Client, task_queue: str) -> Worker:
    """A worker with the floor workflow and the same activities (``create_worker``)."""
    return create_worker(client, tools=[big_text], task_queue=task_queue, extra_workflows=[FloorWorkflow])


async def start(client: Client, task_queue: str, run_id: str, model: str, steps: int) -> WorkflowHandle:
    """Start one run; the floor loops until the model answers text, so ``steps`` is not needed."""
    return await client.start_workflow(
        FloorWorkflow.run, args=[model, [big_text.spec], PROMPT], id=run_id, task_queue=task_queue
    )

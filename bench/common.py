"""Shared bench helpers: a stack on free ports with the scripted model, a bench's own worker in
its own process, and history spans."""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from temporalio.api.enums.v1 import EventType

from agent.client import connect
from agent.dev.processes import ROOT, ChildProcess
from agent.dev.scripted_model import ScriptedModelServer
from agent.dev.stack import DevStack
from core.tools import Tool
from worker import create_worker


@contextlib.contextmanager
def bench_stack() -> Iterator[tuple[DevStack, ScriptedModelServer]]:
    """A headless DevStack and the scripted model, env applied; everything stopped after."""
    with tempfile.TemporaryDirectory() as tmp, DevStack(Path(tmp), with_ui=False, persist_s3=False) as stack:
        previous = stack.apply_env()
        scripted = ScriptedModelServer().start()
        os.environ.update({"OPENAI_BASE_URL": scripted.base_url, "OPENAI_API_KEY": "scripted-model"})
        try:
            yield stack, scripted
        finally:
            scripted.stop()
            DevStack.restore_env(previous)


def start_bench_worker(module: str, queue: str, log_file: Path, env: dict[str, str] | None = None) -> ChildProcess:
    """``python -m MODULE --serve QUEUE`` in its own process (a bench's worker with its own tools and
    workflows, see :func:`serve_worker`), returned once it prints ``worker ready``.

    :param env: More environment for it (over this process's).
    :raises agent.dev.processes.DevServerError: If it does not print ``worker ready`` within a minute.
    """
    worker = ChildProcess("bench-worker", log_file)
    command = [sys.executable, "-m", module, "--serve", queue]
    worker.launch(command, {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}, cwd=ROOT)
    try:
        worker.wait_for_line("worker ready")
    except BaseException:
        worker.stop()
        raise
    return worker


async def serve_worker(queue: str, tools: Sequence[Tool], extra_workflows: Sequence[type]) -> None:
    """The body of a bench's ``--serve QUEUE``: a worker with ``tools`` and ``extra_workflows``
    beside the agent's own, announced with ``worker ready``, until the process is stopped."""
    client = await connect()
    async with create_worker(client, tools=list(tools), task_queue=queue, extra_workflows=list(extra_workflows)):
        print(f"worker ready {os.getpid()}", flush=True)
        await asyncio.Event().wait()


def _ms(event) -> float:
    return event.event_time.ToMilliseconds()


def worker_spans(history) -> dict[str, float]:
    """Worker-side work from event timestamps: workflow-task and activity execution time (ms)."""
    started: dict[int, float] = {}
    workflow_task_ms = activity_ms = 0.0
    for event in history.events:
        if event.event_type in (EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED):
            started[event.event_id] = _ms(event)
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            workflow_task_ms += _ms(event) - started[event.workflow_task_completed_event_attributes.started_event_id]
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            activity_ms += _ms(event) - started[event.activity_task_completed_event_attributes.started_event_id]
    return {"workflow_task_ms": workflow_task_ms, "activity_ms": activity_ms, "events": len(history.events)}


async def chain_events(client, workflow_id: str) -> list:
    """Every event of a workflow id from its first run through each continue-as-new, in order.

    Follows the chain by run ids (``first_run_id``, then each ``ContinuedAsNew`` event), so it needs
    no visibility query and does not wait for visibility to catch up.
    """
    description = await client.get_workflow_handle(workflow_id).describe()
    run_id = description.raw_description.workflow_execution_info.first_run_id or description.run_id
    events: list = []
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        events.extend(history.events)
        last = history.events[-1] if history.events else None
        continued = last is not None and last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id if continued else None
    return events


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]

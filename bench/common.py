"""Shared bench helpers: a stack on free ports with the scripted model, a bench's own worker in
its own process, and history spans."""

from __future__ import annotations

import argparse
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
from bench.bare_floor import QUEUE_SUFFIX, bare_client, bare_worker
from bench.latency_proxy import delaying_proxy
from core.tools import Tool
from worker import create_worker

#: ``--s3-latency``'s value when given without one: a request to S3 from another place (20-50 ms).
DEFAULT_S3_LATENCY_MS = 30.0
#: ``--model-latency``'s value when given without one: a hosted model's time to first byte.
DEFAULT_MODEL_LATENCY_MS = 500.0


def add_latency_arguments(parser: argparse.ArgumentParser) -> None:
    """``--s3-latency [MS]`` and ``--model-latency [MS]`` (both off unless given; see :func:`bench_stack`)."""
    parser.add_argument(
        "--s3-latency",
        type=float,
        nargs="?",
        const=DEFAULT_S3_LATENCY_MS,
        default=0.0,
        metavar="MS",
        help=f"add MS to every S3 request (a delaying proxy in front of moto; {DEFAULT_S3_LATENCY_MS:.0f} when no MS)",
    )
    parser.add_argument(
        "--model-latency",
        type=float,
        nargs="?",
        const=DEFAULT_MODEL_LATENCY_MS,
        default=0.0,
        metavar="MS",
        help=f"the scripted model answers after MS (time to first byte; {DEFAULT_MODEL_LATENCY_MS:.0f} when no MS)",
    )


def print_ratio_table(
    labels: dict[str, str],
    kinds: Sequence[str],
    medians: dict[str, dict[str, float]],
    rows: Sequence[tuple[str, str]],
    digits: int = 1,
) -> None:
    """Print one row a figure: each kind's median, then each kind's ratio to the first kind's
    (the bare floor's).

    :param labels: Each kind's column heading.
    :param kinds: The columns, the divisor first.
    :param medians: ``{kind: {figure: median}}``.
    :param rows: ``(figure, row label)`` pairs, in order.
    :param digits: Decimals of the figures (ratios get two).
    """
    base = medians[kinds[0]]
    print(
        f"{'':28}"
        + "".join(f"{labels[k]:>10}" for k in kinds)
        + "".join(f"{labels[k] + '/' + labels[kinds[0]]:>15}" for k in kinds[1:])
    )
    for key, label in rows:
        figures = "".join(f"{medians[k][key]:>10.{digits}f}" for k in kinds)
        ratios = "".join(f"{medians[k][key] / base[key]:>15.2f}" for k in kinds[1:])
        print(f"{label:28}{figures}{ratios}")


def latency_label(s3_latency_ms: float, model_latency_ms: float) -> str:
    """``"S3 +30 ms a request, model +500 ms"`` or ``"loopback latencies"``, for a bench's header."""
    if not (s3_latency_ms or model_latency_ms):
        return "loopback latencies"
    return f"S3 +{s3_latency_ms:.0f} ms a request, model +{model_latency_ms:.0f} ms to first byte"


@contextlib.contextmanager
def bench_stack(
    s3_latency_ms: float = 0.0, model_latency_ms: float = 0.0
) -> Iterator[tuple[DevStack, ScriptedModelServer]]:
    """A headless DevStack and the scripted model, env applied; everything stopped after.

    :param s3_latency_ms: Added to every S3 request by a delaying proxy (bench/latency_proxy.py)
        that ``AWS_ENDPOINT_URL_S3`` then points at; 0: moto directly.
    :param model_latency_ms: The scripted model's time to first byte.
    :raises ValueError: On a negative latency.
    """
    with contextlib.ExitStack() as stack_of:
        tmp = stack_of.enter_context(tempfile.TemporaryDirectory())
        stack = stack_of.enter_context(DevStack(Path(tmp), with_ui=False, persist_s3=False))
        previous = stack.apply_env()
        stack_of.callback(DevStack.restore_env, previous)
        if s3_latency_ms:
            proxy = stack_of.enter_context(delaying_proxy(stack.s3.port, s3_latency_ms / 1000))
            os.environ["AWS_ENDPOINT_URL_S3"] = proxy.endpoint_url
        scripted = ScriptedModelServer(latency=model_latency_ms / 1000).start()
        stack_of.callback(scripted.stop)
        os.environ.update({"OPENAI_BASE_URL": scripted.base_url, "OPENAI_API_KEY": "scripted-model"})
        yield stack, scripted


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


async def serve_worker(
    queue: str, tools: Sequence[Tool], extra_workflows: Sequence[type], *, with_bare: bool = False
) -> None:
    """The body of a bench's ``--serve QUEUE``: a worker with ``tools`` and ``extra_workflows``
    beside the agent's own, announced with ``worker ready``, until the process is stopped.

    :param with_bare: Also run the bare floor's own worker (bench/bare_floor.py, Temporal's default
        converter) in this process, on ``QUEUE`` + :data:`bench.bare_floor.QUEUE_SUFFIX`.
    """
    client = await connect()
    async with contextlib.AsyncExitStack() as workers:
        await workers.enter_async_context(
            create_worker(client, tools=list(tools), task_queue=queue, extra_workflows=list(extra_workflows))
        )
        if with_bare:
            plain = await bare_client(client.service_client.config.target_host)
            await workers.enter_async_context(bare_worker(plain, queue + QUEUE_SUFFIX))
        print(f"worker ready {os.getpid()}", flush=True)
        await asyncio.Event().wait()


def _ms(event) -> float:
    return event.event_time.ToMilliseconds()


def worker_spans(history) -> dict[str, float]:
    """Where a run's time went, from event timestamps (ms in all): workflow-task and activity
    execution (``workflow_task_ms``, ``activity_ms``: the worker's work), and the waits before
    each started (``workflow_task_queue_ms``, ``activity_queue_ms``: schedule to start, the
    server's matching and the poll; an eagerly dispatched activity waits ~0)."""
    scheduled: dict[int, float] = {}
    started: dict[int, float] = {}
    spans = dict.fromkeys(("workflow_task_ms", "activity_ms", "workflow_task_queue_ms", "activity_queue_ms"), 0.0)
    for event in history.events:
        kind = event.event_type
        if kind in (EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED):
            scheduled[event.event_id] = _ms(event)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            started[event.event_id] = _ms(event)
            attributes = event.workflow_task_started_event_attributes
            spans["workflow_task_queue_ms"] += _ms(event) - scheduled.get(attributes.scheduled_event_id, _ms(event))
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started[event.event_id] = _ms(event)
            attributes = event.activity_task_started_event_attributes
            spans["activity_queue_ms"] += _ms(event) - scheduled.get(attributes.scheduled_event_id, _ms(event))
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            attributes = event.workflow_task_completed_event_attributes
            spans["workflow_task_ms"] += _ms(event) - started[attributes.started_event_id]
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attributes = event.activity_task_completed_event_attributes
            spans["activity_ms"] += _ms(event) - started[attributes.started_event_id]
    return {**spans, "events": len(history.events)}


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

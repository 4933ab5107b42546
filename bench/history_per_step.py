"""History bytes per step (and S3 bytes per step), ours vs neither, side by side in one run.

ours:    conversation by reference (the model activity gets only new messages), the tool
         activity offloading results over 4,000 characters (ToolResultOffloadHook with
         OffloadOverChars), and ExternalStorage (256 KB) on the data converter;
neither: whole conversations in every model input, no offloading, plain pydantic converter.

Each step calls a tool returning N bytes. Per-step growth is measured from the history's own
event sizes around steps 20, 100 and 200 (mean over the 10 steps before each mark).

Run: python -m bench.history_per_step [--steps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Worker

from activities.model import ModelActivities
from activities.tool_invocation import ToolActivities
from agent import Agent, ChatMessage
from agent.client import connect
from bench.common import bench_stack
from bench.workloads import BENCH_TOOLS, big_text
from hooks.tool_result_offloading import OffloadOverChars, S3ToolResultStore, ToolResultOffloadHook
from runtime.sandbox import workflow_runner
from worker import create_worker
from workflows.agent_workflow import AgentWorkflow

MARKS = (20, 100, 200)


async def chain_events(client: Client, workflow_id: str) -> list:
    """Events of every run of a workflow id (continue-as-new makes a chain), oldest run first."""
    runs = [r async for r in client.list_workflows(f'WorkflowId = "{workflow_id}"')]
    events = []
    for run in sorted(runs, key=lambda r: r.start_time):
        history = await client.get_workflow_handle(workflow_id, run_id=run.run_id).fetch_history()
        events.extend(history.events)
    return events


def step_sizes(events: list) -> list[int]:
    """Cumulative history bytes at the end of each step (a step ends with its tool completion)."""
    cumulative, total, scheduled = [], 0, {}
    for event in events:
        total += event.ByteSize()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled[event.event_id] = event.activity_task_scheduled_event_attributes.activity_type.name
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            if scheduled.get(event.activity_task_completed_event_attributes.scheduled_event_id) == "invoke_tool":
                cumulative.append(total)
    return cumulative


def s3_bytes(stack) -> int:
    s3 = stack.s3.client()
    total = 0
    for bucket in (stack.tool_results_bucket, stack.payloads_bucket):
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            total += sum(o["Size"] for o in page.get("Contents", []))
    return total


async def run_case(client: Client, scripted, stack, queue: str, size: int, steps: int, ours: bool) -> dict:
    model = f"hist-{uuid.uuid4().hex[:8]}"
    scripted.script(
        model, [{"tool_calls": [{"name": "big_text", "arguments": {"size": size}}], "times": steps}, {"text": "done"}]
    )
    hooks = {}
    if ours:
        store = S3ToolResultStore(stack.tool_results_bucket)
        hooks = {"after_tool": [ToolResultOffloadHook(store, {"*": OffloadOverChars(4000)})]}
    agent = Agent(model=model, tools=[big_text], hooks=hooks, max_agent_steps=steps + 1)
    s3_before = s3_bytes(stack)
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=f"bench-{model}", task_queue=queue)
    # Poll the server, not the workflow: a query of a huge history can itself time out.
    stalled_at, outcome = None, "completed"
    last_length, last_change = -1, time.monotonic()
    while True:
        description = await handle.workflow.describe()
        if description.status != WorkflowExecutionStatus.RUNNING:
            outcome = description.status.name.lower()
            break
        if description.history_length != last_length:
            last_length, last_change = description.history_length, time.monotonic()
        elif time.monotonic() - last_change > 20:
            await handle.workflow.terminate("benchmark: no progress for 20 s")
            outcome = "stalled"
            break
        await asyncio.sleep(0.5)
    await asyncio.sleep(2)  # let visibility catch up with the last run of the chain
    events = await chain_events(client, f"bench-{model}")
    sizes = step_sizes(events)
    if outcome != "completed":
        stalled_at = f"{outcome}@{len(sizes)}"
    per_step = {}
    for mark in MARKS:
        if len(sizes) >= mark:
            per_step[mark] = (sizes[mark - 1] - sizes[mark - 11]) / 10
    return {
        "per_step": per_step,
        "total": sum(e.ByteSize() for e in events),
        "steps": len(sizes),
        "stalled_at": stalled_at,
        "s3_per_step": (s3_bytes(stack) - s3_before) / max(1, len(sizes)),
    }


async def main(steps: int) -> None:
    with bench_stack() as (stack, scripted):
        ours_client = await connect(stack.temporal.address)
        plain_client = await Client.connect(stack.temporal.address, data_converter=pydantic_data_converter)
        ours_worker = create_worker(ours_client, tools=BENCH_TOOLS, task_queue="hist-ours")
        plain_worker = Worker(
            plain_client,
            task_queue="hist-plain",
            workflows=[AgentWorkflow],
            activities=[ModelActivities(conversations=None).chat_completion, ToolActivities(BENCH_TOOLS).invoke_tool],
            workflow_runner=workflow_runner(),
        )
        rows = []
        async with ours_worker, plain_worker:
            for size in (2_000, 100_000):
                ours = await run_case(ours_client, scripted, stack, "hist-ours", size, steps, ours=True)
                plain = await run_case(plain_client, scripted, stack, "hist-plain", size, steps, ours=False)
                rows.append((size, ours, plain))
    print(f"history bytes per step (mean of the 10 steps before each mark), {steps}-step runs, tool result N bytes")
    print(f"{'result':>8} {'step':>5} {'ours B/step':>12} {'neither B/step':>15} {'ratio':>7}")
    for size, ours, plain in rows:
        for mark in MARKS:
            o = ours["per_step"].get(mark)
            p = plain["per_step"].get(mark)
            p_text = f"{p:>15.0f}" if p is not None else f"{str(plain['stalled_at']):>15}"
            ratio = f"{p / o:>7.1f}" if (o and p) else f"{'-':>7}"
            print(
                f"{size:>8} {mark:>5} {o:>12.0f} {p_text} {ratio}"
                if o is not None
                else f"{size:>8} {mark:>5} {'-':>12} {p_text}"
            )
    print()
    print(f"{'result':>8} {'':>5} {'ours total':>12} {'neither total':>15}   S3 bytes/step ours, neither")
    for size, ours, plain in rows:
        stalled = f" (neither: {plain['stalled_at']})" if plain["stalled_at"] is not None else ""
        print(
            f"{size:>8} {'':>5} {ours['total']:>12} {plain['total']:>15}   {ours['s3_per_step']:.0f}, {plain['s3_per_step']:.0f}{stalled}"
        )
    print("target: ours <= 8192 B/step at every mark, not growing with the step")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.steps))

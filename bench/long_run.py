"""The 1,000-step run (bench/workloads.py's agent, which tests/workflows/test_long_run.py runs too: compaction before every model call,
Temporal's continue-as-new suggestion) next to the foundation's bare step, in one run.

(a) floor: FloorWorkflow, the same model + tool activities in a loop with no agent logic, in
    short runs (its whole-conversation inputs make history grow quadratically: it cannot run
    1,000 steps in one history), before and after the long run to share the noise;
(b) the long run: AgentWorkflow, model activity + one tool activity a step, two CompactionHooks.

Prints wall ms per step, worker-side work per step (workflow-task + activity spans from history
event timestamps, summed over every run of the chain), the ratios, then each run of the chain:
events, history bytes as the server counts them, bytes exported as JSON, how it ended; and the
continuations and compactions.

Run: python -m bench.long_run [--steps 1000] [--floor-steps 50] [--floor-rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid

from agent import ChatMessage
from agent.client import connect, get_run
from bench.common import bench_stack, worker_spans
from bench.floor_workflow import FloorWorkflow
from bench.workloads import BENCH_TOOLS, echo, long_run_agent, long_run_script
from worker import create_worker

QUEUE = "bench-long-run"


async def floor_round(client, scripted, steps: int) -> dict[str, float]:
    model = f"floor-{uuid.uuid4().hex[:8]}"
    scripted.script(model, long_run_script(steps))
    started = time.perf_counter()
    handle = await client.start_workflow(
        FloorWorkflow.run, args=[model, [echo.spec], "go"], id=f"bench-{model}", task_queue=QUEUE
    )
    assert await handle.result() == steps
    wall_ms = (time.perf_counter() - started) * 1000
    history = await handle.fetch_history()
    spans = worker_spans(history)
    return {
        "wall": wall_ms / steps,
        "work": (spans["workflow_task_ms"] + spans["activity_ms"]) / steps,
        "bytes": sum(e.ByteSize() for e in history.events),
    }


async def long_run(client, scripted, steps: int) -> dict:
    model = f"long-{uuid.uuid4().hex[:8]}"
    run_id = f"bench-{model}"
    scripted.script(model, long_run_script(steps))
    started = time.perf_counter()
    await long_run_agent(model, steps).start(
        client, [ChatMessage.from_user("Echo until told to stop.")], run_id=run_id, task_queue=QUEUE
    )
    result = await get_run(client, run_id).result()
    wall_ms = (time.perf_counter() - started) * 1000
    assert result.step_count == steps, result.step_count

    runs, work_ms = [], 0.0
    listed = [w async for w in client.list_workflows(f'WorkflowId = "{run_id}"')]
    for execution in sorted(listed, key=lambda w: w.start_time):
        handle = client.get_workflow_handle(run_id, run_id=execution.run_id)
        history = await handle.fetch_history()
        described = await handle.describe()
        spans = worker_spans(history)
        work_ms += spans["workflow_task_ms"] + spans["activity_ms"]
        runs.append(
            {
                "events": len(history.events),
                "bytes": described.raw_description.workflow_execution_info.history_size_bytes,
                "json_bytes": len(json.dumps(history.to_json_dict())),
                "status": execution.status.name if execution.status else "?",
            }
        )
    sizes = [len(r["messages"]) for r in scripted.requests(model)]
    return {
        "wall": wall_ms / steps,
        "work": work_ms / steps,
        "runs": runs,
        "continuations": result.continuations,
        "compactions": sum(1 for a, b in zip(sizes, sizes[1:], strict=False) if b < a),
        "max_messages": max(sizes),
        "max_request_bytes": max(len(json.dumps(r["messages"])) for r in scripted.requests(model)),
    }


async def main(steps: int, floor_steps: int, floor_rounds: int) -> None:
    with bench_stack() as (stack, scripted):
        client = await connect(stack.temporal.address)
        async with create_worker(client, tools=BENCH_TOOLS, task_queue=QUEUE, extra_workflows=[FloorWorkflow]):
            await floor_round(client, scripted, 5)  # warm up
            floors = [await floor_round(client, scripted, floor_steps) for _ in range((floor_rounds + 1) // 2)]
            long = await long_run(client, scripted, steps)
            floors += [await floor_round(client, scripted, floor_steps) for _ in range(floor_rounds // 2)]

    floor = {k: statistics.median(r[k] for r in floors) for k in ("wall", "work", "bytes")}
    print(f"long run: {steps} steps, one echo tool call each, compaction before every model call (scripted model)")
    print(f"floor: FloorWorkflow, {floor_steps}-step runs x {len(floors)} (median), same model and tool activities")
    print(f"{'':28}{'floor':>10}{'long run':>10}{'ratio':>8}")
    print(f"{'wall ms per step':28}{floor['wall']:>10.1f}{long['wall']:>10.1f}{long['wall'] / floor['wall']:>8.2f}")
    print(
        f"{'worker work ms per step':28}{floor['work']:>10.1f}{long['work']:>10.1f}{long['work'] / floor['work']:>8.2f}"
    )
    print()
    print(f"{'run of the chain':18}{'events':>8}{'history bytes':>15}{'JSON bytes':>12}  ended")
    for index, run in enumerate(long["runs"]):
        print(f"{index:<18}{run['events']:>8}{run['bytes']:>15,}{run['json_bytes']:>12,}  {run['status']}")
    print(f"continuations: {long['continuations']}")
    print(
        f"compactions: {long['compactions']} (drops in request size); largest request: {long['max_messages']} messages, "
        f"{long['max_request_bytes']:,} bytes of messages"
    )
    print(
        f"floor history per {floor_steps}-step run: {floor['bytes']:,.0f} bytes "
        "(whole conversation in every model input: grows quadratically with steps)"
    )
    print("history limits: Temporal fails a history over 50 MB; target here: no run over 10 MB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--floor-steps", type=int, default=50)
    parser.add_argument("--floor-rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.floor_steps, args.floor_rounds))

"""Step overhead: our agent step vs the bare floor, side by side in one run on the dev server.

(a) floor: FloorWorkflow, the same model + tool activities in a loop with no agent logic;
(b) ours: AgentWorkflow, model activity + one tool activity + six no-op hooks per step.
Prints wall ms per step, worker-side work per step (workflow-task + activity execution spans
from the history's event timestamps) and the ratios. Rounds alternate to share the noise.

Run: python -m bench.step_overhead [--steps 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from agent import Agent, ChatMessage
from agent.client import connect
from bench.common import bench_stack, worker_spans
from bench.floor_workflow import FloorWorkflow
from bench.noop_hooks import SIX_NOOP_HOOKS
from bench.workloads import BENCH_TOOLS, echo
from worker import create_worker

QUEUE = "bench-step"


def script(steps: int) -> list[dict]:
    return [{"tool_calls": [{"name": "echo", "arguments": {"text": "x" * 200}}], "times": steps - 1}, {"text": "done"}]


async def measure(client, scripted, steps: int, kind: str) -> dict[str, float]:
    model = f"{kind}-{uuid.uuid4().hex[:8]}"
    scripted.script(model, script(steps))
    run_id = f"bench-{model}"
    started = time.perf_counter()
    if kind == "floor":
        handle = await client.start_workflow(
            FloorWorkflow.run, args=[model, [echo.spec], "go"], id=run_id, task_queue=QUEUE
        )
        await handle.result()
    else:
        agent = Agent(model=model, tools=[echo], hooks=SIX_NOOP_HOOKS, max_agent_steps=steps + 1)
        handle = (await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=QUEUE)).workflow
        await handle.result()
    wall_ms = (time.perf_counter() - started) * 1000
    spans = worker_spans(await handle.fetch_history())
    return {
        "wall": wall_ms / steps,
        "work": (spans["workflow_task_ms"] + spans["activity_ms"]) / steps,
        "events": spans["events"],
    }


async def main(steps: int, rounds: int) -> None:
    with bench_stack() as (stack, scripted):
        client = await connect(stack.temporal.address)
        async with create_worker(client, tools=BENCH_TOOLS, task_queue=QUEUE, extra_workflows=[FloorWorkflow]):
            await measure(client, scripted, 5, "floor")  # warm up both paths
            await measure(client, scripted, 5, "agent")
            results: dict[str, list[dict[str, float]]] = {"floor": [], "agent": []}
            for _ in range(rounds):
                for kind in ("floor", "agent"):
                    results[kind].append(await measure(client, scripted, steps, kind))
    floor = {k: statistics.median(r[k] for r in results["floor"]) for k in ("wall", "work", "events")}
    ours = {k: statistics.median(r[k] for r in results["agent"]) for k in ("wall", "work", "events")}
    print(f"step overhead, {steps} steps x {rounds} rounds (medians), dev server on loopback, scripted model")
    print(f"{'':28}{'floor':>10}{'agent':>10}{'ratio':>8}")
    print(f"{'wall ms per step':28}{floor['wall']:>10.1f}{ours['wall']:>10.1f}{ours['wall'] / floor['wall']:>8.2f}")
    print(
        f"{'worker work ms per step':28}{floor['work']:>10.1f}{ours['work']:>10.1f}{ours['work'] / floor['work']:>8.2f}"
    )
    print(
        f"{'history events per run':28}{floor['events']:>10.0f}{ours['events']:>10.0f}{ours['events'] / floor['events']:>8.2f}"
    )
    print("targets: work ratio <= 1.20, wall ratio <= 1.00 (+noise)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.rounds))

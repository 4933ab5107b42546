"""Step overhead: our agent step vs the bare floor, side by side in one run on the dev server.

(a) floor: FloorWorkflow, the same model + tool activities in a loop with no agent logic;
(b) ours: AgentWorkflow, model activity + one tool activity + six no-op hooks per step.
Each step's tool (``big_text``) returns ``--result-bytes`` characters. Both run on one worker in
its own process (as in bench/throughput.py). Prints wall ms per step, worker-side work per step
(workflow-task + activity execution spans from the history's event timestamps), the worker
process's CPU per step (user + system from /proc), and the ratios. Rounds alternate.

Run: python -m bench.step_overhead [--steps 100] [--rounds 3] [--result-bytes 2048]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from agent import Agent, ChatMessage
from agent.client import connect
from bench.common import bench_stack, worker_spans
from bench.floor_workflow import FloorWorkflow
from bench.noop_hooks import SIX_NOOP_HOOKS
from bench.throughput import cpu_seconds, script, worker_process
from bench.workloads import big_text

KEYS = ("wall", "work", "cpu", "events")


async def measure(client, scripted, worker_pid: int, queue: str, steps: int, result_bytes: int, kind: str):
    model = f"{kind}-{uuid.uuid4().hex[:8]}"
    scripted.script(model, script(steps, result_bytes))
    run_id = f"bench-{model}"
    cpu0 = cpu_seconds(worker_pid)
    started = time.perf_counter()
    if kind == "floor":
        handle = await client.start_workflow(
            FloorWorkflow.run, args=[model, [big_text.spec], "go"], id=run_id, task_queue=queue
        )
        await handle.result()
    else:
        agent = Agent(model=model, tools=[big_text], hooks=SIX_NOOP_HOOKS, max_agent_steps=steps + 1)
        handle = (await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=queue)).workflow
        await handle.result()
    wall_ms = (time.perf_counter() - started) * 1000
    cpu_ms = (cpu_seconds(worker_pid) - cpu0) * 1000
    spans = worker_spans(await handle.fetch_history())
    return {
        "wall": wall_ms / steps,
        "work": (spans["workflow_task_ms"] + spans["activity_ms"]) / steps,
        "cpu": cpu_ms / steps,
        "events": spans["events"],
    }


async def main(steps: int, rounds: int, result_bytes: int) -> dict[str, dict[str, float]]:
    queue = f"bench-step-{uuid.uuid4().hex[:6]}"
    with bench_stack() as (stack, scripted), tempfile.TemporaryDirectory() as tmp:
        client = await connect(stack.temporal.address)
        with worker_process(queue, Path(tmp)) as worker:
            pid = worker.pid
            assert pid is not None
            await measure(client, scripted, pid, queue, 5, result_bytes, "floor")  # warm up both paths
            await measure(client, scripted, pid, queue, 5, result_bytes, "agent")
            results: dict[str, list[dict[str, float]]] = {"floor": [], "agent": []}
            for r in range(rounds):
                for kind in ("floor", "agent") if r % 2 == 0 else ("agent", "floor"):
                    results[kind].append(await measure(client, scripted, pid, queue, steps, result_bytes, kind))
    floor = {k: statistics.median(r[k] for r in results["floor"]) for k in KEYS}
    ours = {k: statistics.median(r[k] for r in results["agent"]) for k in KEYS}
    print(
        f"step overhead, {steps} steps x {rounds} rounds (medians), {result_bytes} B tool results, "
        "one worker process, dev server on loopback, scripted model"
    )
    print(f"{'':28}{'floor':>10}{'agent':>10}{'ratio':>8}")
    for key, label in (
        ("wall", "wall ms per step"),
        ("work", "worker work ms per step"),
        ("cpu", "worker CPU ms per step"),
    ):
        print(f"{label:28}{floor[key]:>10.1f}{ours[key]:>10.1f}{ours[key] / floor[key]:>8.2f}")
    print(
        f"{'history events per run':28}{floor['events']:>10.0f}{ours['events']:>10.0f}{ours['events'] / floor['events']:>8.2f}"
    )
    per_round = ", ".join(
        f"{a['work'] / f['work']:.2f}" for f, a in zip(results["floor"], results["agent"], strict=True)
    )
    print(f"work ratio per round: {per_round}")
    print(f"load average: {Path('/proc/loadavg').read_text().strip()}")
    print("targets: work ratio <= 1.20, wall ratio <= 1.00 (+noise)")
    return {"floor": floor, "agent": ours}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--result-bytes", type=int, default=2048)
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.rounds, args.result_bytes))

"""Step overhead: our agent step vs the bare floor, side by side in one run on the dev server.

(a) bare: bench/bare_floor.py, a hand-written loop on temporalio alone (an httpx POST of the
    message list, one tool activity; Temporal's default converter): the floor the ratios divide by;
(b) our activities: FloorWorkflow, our model + tool activities in a loop with no agent logic;
(c) agent: AgentWorkflow, model activity + one tool activity + six no-op hooks per step.
Each step's tool (``big_text``) returns ``--result-bytes`` characters. All run on one worker
process (as in bench/throughput.py; the bare floor on its own task queue there). Prints wall ms per
step, worker-side work per step (workflow-task + activity execution spans from the history's event
timestamps), the worker process's CPU per step (user + system from /proc), and the ratios to the
bare floor. Rounds rotate the order.

``--s3-latency [MS]`` puts a delaying proxy in front of moto (30 ms a request when no MS is given),
``--model-latency [MS]`` makes the scripted model answer after MS (500 when none): production-like
latencies, where what counts is what stays on a step's critical path.

``--local-tool`` adds a row: the agent with its tool as ``Tool(local=True)`` (a local activity).

Run: python -m bench.step_overhead [--steps 100] [--rounds 3] [--result-bytes 2048] [--s3-latency [MS]] [--model-latency [MS]] [--local-tool]
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
from bench.bare_floor import QUEUE_SUFFIX, bare_client, start_bare
from bench.common import add_latency_arguments, bench_stack, latency_label, print_ratio_table, worker_spans
from bench.floor_workflow import FloorWorkflow
from bench.noop_hooks import SIX_NOOP_HOOKS
from bench.throughput import cpu_seconds, script, worker_process
from bench.workloads import big_text
from core.tools import Tool

KEYS = ("wall", "work", "cpu", "events", "wft_queue", "activity_queue")
#: The kinds, in table order; the first is the floor the ratios divide by.
KINDS = ("bare", "floor", "agent")
LABELS = {"bare": "bare", "floor": "our acts", "agent": "agent", "local": "local"}
#: The agent's tool as a ``Tool(local=True)`` (the ``--local-tool`` row): the same function.
LOCAL_BIG_TEXT = Tool(big_text.function, name=big_text.name, local=True)


async def measure(clients, scripted, worker_pid: int, queue: str, steps: int, result_bytes: int, kind: str):
    client, plain = clients
    model = f"{kind}-{uuid.uuid4().hex[:8]}"
    scripted.script(model, script(steps, result_bytes))
    run_id = f"bench-{model}"
    cpu0 = cpu_seconds(worker_pid)
    started = time.perf_counter()
    if kind == "bare":
        handle = await start_bare(plain, queue + QUEUE_SUFFIX, run_id, model)
        await handle.result()
    elif kind == "floor":
        handle = await client.start_workflow(
            FloorWorkflow.run, args=[model, [big_text.spec], "go"], id=run_id, task_queue=queue
        )
        await handle.result()
    else:
        tools = [LOCAL_BIG_TEXT if kind == "local" else big_text]
        agent = Agent(model=model, tools=tools, hooks=SIX_NOOP_HOOKS, max_agent_steps=steps + 1)
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
        "wft_queue": spans["workflow_task_queue_ms"] / steps,
        "activity_queue": spans["activity_queue_ms"] / steps,
    }


async def main(
    steps: int,
    rounds: int,
    result_bytes: int,
    s3_latency_ms: float = 0.0,
    model_latency_ms: float = 0.0,
    local_tool: bool = False,
) -> dict[str, dict[str, float]]:
    kinds = (*KINDS, "local") if local_tool else KINDS
    queue = f"bench-step-{uuid.uuid4().hex[:6]}"
    load_before = Path("/proc/loadavg").read_text().strip()
    with bench_stack(s3_latency_ms, model_latency_ms) as (stack, scripted), tempfile.TemporaryDirectory() as tmp:
        clients = (await connect(stack.temporal.address), await bare_client(stack.temporal.address))
        with worker_process(queue, Path(tmp)) as worker:
            pid = worker.pid
            assert pid is not None
            for kind in kinds:  # warm up every path
                await measure(clients, scripted, pid, queue, 5, result_bytes, kind)
            results: dict[str, list[dict[str, float]]] = {kind: [] for kind in kinds}
            for r in range(rounds):
                for kind in kinds[r % len(kinds) :] + kinds[: r % len(kinds)]:
                    results[kind].append(await measure(clients, scripted, pid, queue, steps, result_bytes, kind))
    medians = {kind: {k: statistics.median(r[k] for r in results[kind]) for k in KEYS} for kind in kinds}
    print(
        f"step overhead, {steps} steps x {rounds} rounds (medians), {result_bytes} B tool results, "
        f"one worker process, dev server, scripted model, {latency_label(s3_latency_ms, model_latency_ms)}"
    )
    print_ratio_table(
        LABELS,
        kinds,
        medians,
        (
            ("wall", "wall ms per step"),
            ("work", "worker work ms per step"),
            ("cpu", "worker CPU ms per step"),
            ("wft_queue", "wf task sched->start ms/step"),
            ("activity_queue", "activity sched->start ms/st"),
            ("events", "history events per run"),
        ),
    )
    for key in ("work", "cpu", "wall"):
        per_round = ", ".join(
            f"{f[key] / b[key]:.2f}/{a[key] / b[key]:.2f}"
            for b, f, a in zip(results["bare"], results["floor"], results["agent"], strict=True)
        )
        print(f"{key} ratio per round (our acts/bare, agent/bare): {per_round}")
    print(f"load average before: {load_before}; after: {Path('/proc/loadavg').read_text().strip()}")
    print("targets (agent/bare): work <= 1.10, CPU <= 1.20; with --s3-latency 30 --model-latency 500: wall <= 1.05")
    return medians


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--result-bytes", type=int, default=2048)
    add_latency_arguments(parser)
    parser.add_argument(
        "--local-tool", action="store_true", help="add a row: the agent with its tool as Tool(local=True)"
    )
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.rounds, args.result_bytes, args.s3_latency, args.model_latency, args.local_tool))

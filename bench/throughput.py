"""Throughput: many concurrent runs, our agent vs the bare floor, side by side in one run.

Both kinds run on one worker in its own process (``python -m bench.throughput --serve QUEUE``:
``create_worker`` with the bench tools and ``FloorWorkflow``), against a headless dev stack and
the scripted model (loopback, labelled as such). A round starts ``--runs`` runs of ``--steps``
steps at once (each step: one model call, then one ``big_text`` call returning ``--result-bytes``
characters) and waits for all of them; rounds alternate floor and agent to share the machine's
noise. Per kind it prints runs/s (runs / seconds from the first start to the last result) and
the worker process's CPU per step (user + system from ``/proc/<pid>/stat``, every thread,
the SDK's Rust core included), the dev server's CPU per step the same way, and the ratios ours/floor.

(a) bare: bench/bare_floor.py, a hand-written loop on temporalio alone (httpx, plain dicts, the
    SDK's default converter) in the same worker process on its own task queue: what ratios divide by;
(b) our activities: ``FloorWorkflow`` (bench/floor_workflow.py), our activities in a loop, no agent logic;
(c) ours: ``AgentWorkflow`` with six no-op hooks, as in bench/step_overhead.py.

Run: python -m bench.throughput [--runs 50] [--steps 10] [--rounds 3] [--result-bytes 2048] [--profile DIR]
     [--s3-latency [MS]] [--model-latency [MS]]

``--profile DIR`` then samples one more batch of each kind with py-spy and prints where the
worker's Python time goes per step (bench/worker_profile.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from agent import Agent, ChatMessage
from agent.client import connect
from agent.dev.processes import ChildProcess
from bench.bare_floor import QUEUE_SUFFIX, bare_client, start_bare
from bench.common import (
    add_latency_arguments,
    bench_stack,
    latency_label,
    print_ratio_table,
    serve_worker,
    start_bench_worker,
)
from bench.floor_workflow import FloorWorkflow
from bench.noop_hooks import SIX_NOOP_HOOKS
from bench.worker_profile import print_split, recording
from bench.workloads import BENCH_TOOLS, big_text

#: Clock ticks per second of /proc/<pid>/stat's utime and stime.
_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (all its threads), from ``/proc/<pid>/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "; comm may hold spaces
    return (int(fields[11]) + int(fields[12])) / _TICKS


def script(steps: int, result_bytes: int) -> list[dict]:
    """The scripted model's replies for one run: ``steps - 1`` ``big_text`` calls, then a text."""
    call = {"tool_calls": [{"name": "big_text", "arguments": {"size": result_bytes}}], "times": steps - 1}
    return [call, {"text": "done"}]


@contextlib.contextmanager
def worker_process(queue: str, log_dir: Path) -> Iterator[ChildProcess]:
    """A worker (bench tools + ``FloorWorkflow``) polling ``queue`` in its own process; stopped after.

    :param log_dir: Where its log goes.
    :raises agent.dev.processes.DevServerError: If it does not print ``worker ready`` within a minute.
    """
    worker = start_bench_worker("bench.throughput", queue, log_dir / "worker.log")
    try:
        yield worker
    except BaseException:
        print(worker.log_tail(20))
        raise
    finally:
        worker.stop()


#: The kinds, in table order; the first is the floor the ratios divide by.
KINDS = ("bare", "floor", "agent")
LABELS = {"bare": "bare", "floor": "our acts", "agent": "agent"}


async def run_batch(clients, scripted, queue: str, kind: str, runs: int, steps: int, result_bytes: int) -> int:
    """Start ``runs`` runs of ``kind`` (one of :data:`KINDS`) at once and wait for every result.

    :param clients: A client with the project's converter and a plain one (for the bare floor).

    :returns: The steps the runs took in all. A model call that was retried (a heartbeat timeout
        on a loaded machine) takes one more scripted reply, so a run can end a step early.
    """
    tag = f"{kind}-{uuid.uuid4().hex[:8]}"
    models = [f"{tag}-{i}" for i in range(runs)]
    for model in models:
        scripted.script(model, script(steps, result_bytes))

    client, plain = clients

    async def one(model: str) -> int:
        if kind == "bare":
            return await (await start_bare(plain, queue + QUEUE_SUFFIX, f"bench-{model}", model)).result()
        if kind == "floor":
            handle = await client.start_workflow(
                FloorWorkflow.run, args=[model, [big_text.spec], "go"], id=f"bench-{model}", task_queue=queue
            )
            return await handle.result()
        agent = Agent(model=model, tools=[big_text], hooks=SIX_NOOP_HOOKS, max_agent_steps=steps + 1)
        handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=f"bench-{model}", task_queue=queue)
        return (await handle.result()).step_count

    done = await asyncio.gather(*(one(m) for m in models))
    if short := sum(1 for n in done if n != steps):
        print(f"  note: {short} {kind} runs took another number of steps than {steps} (a retried model call)")
    return sum(done)


async def measure(clients, scripted, pids: tuple[int, int], queue: str, kind: str, args) -> dict[str, float]:
    """One round of one kind: runs/s, and worker and server CPU ms per step (per step the runs took).

    :param pids: The worker's and the Temporal dev server's process ids.
    """
    cpu0 = [cpu_seconds(pid) for pid in pids]
    t0 = time.perf_counter()
    total_steps = await run_batch(clients, scripted, queue, kind, args.runs, args.steps, args.result_bytes)
    wall = time.perf_counter() - t0
    worker_cpu, server_cpu = (cpu_seconds(pid) - c for pid, c in zip(pids, cpu0, strict=True))
    return {
        "runs_per_s": args.runs / wall,
        "cpu_ms_per_step": worker_cpu * 1000 / total_steps,
        "server_cpu_ms_per_step": server_cpu * 1000 / total_steps,
    }


async def main(args) -> dict[str, dict[str, float]]:
    queue = f"bench-throughput-{uuid.uuid4().hex[:6]}"
    load_before = Path("/proc/loadavg").read_text().strip()
    with bench_stack(args.s3_latency, args.model_latency) as (stack, scripted), tempfile.TemporaryDirectory() as tmp:
        clients = (await connect(stack.temporal.address), await bare_client(stack.temporal.address))
        with worker_process(queue, Path(tmp)) as worker:
            pid, server_pid = worker.pid, stack.temporal.pid
            assert pid is not None and server_pid is not None
            # Warm every path (imports, sandboxes, connections) before measuring.
            for kind in KINDS:
                await run_batch(clients, scripted, queue, kind, 5, 3, args.result_bytes)
            results: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
            for r in range(args.rounds):
                for kind in KINDS[r % len(KINDS) :] + KINDS[: r % len(KINDS)]:
                    results[kind].append(await measure(clients, scripted, (pid, server_pid), queue, kind, args))
            if args.profile:
                # Apart from the measured rounds: the sampler itself costs the worker CPU.
                args.profile.mkdir(parents=True, exist_ok=True)
                files = {kind: args.profile / f"{kind}.txt" for kind in KINDS}
                profiled_steps = {}
                for kind, out in files.items():
                    with recording(pid, out):
                        profiled_steps[kind] = await run_batch(
                            clients, scripted, queue, kind, args.runs, args.steps, args.result_bytes
                        )
    keys = ("runs_per_s", "cpu_ms_per_step", "server_cpu_ms_per_step")
    medians = {kind: {k: statistics.median(r[k] for r in results[kind]) for k in keys} for kind in KINDS}
    print(
        f"throughput, {args.runs} concurrent runs x {args.steps} steps, {args.result_bytes} B results, "
        f"{args.rounds} rounds (medians); one worker process; dev server, scripted model, "
        f"{latency_label(args.s3_latency, args.model_latency)}"
    )
    print_ratio_table(
        LABELS,
        KINDS,
        medians,
        (
            ("runs_per_s", "runs/s"),
            ("cpu_ms_per_step", "worker CPU ms per step"),
            ("server_cpu_ms_per_step", "server CPU ms per step"),
        ),
        digits=2,
    )
    per_round = ", ".join(
        f"{a['runs_per_s'] / b['runs_per_s']:.2f}/{a['cpu_ms_per_step'] / b['cpu_ms_per_step']:.2f}"
        for b, a in zip(results["bare"], results["agent"], strict=True)
    )
    print(f"per round, agent/bare (runs/s ratio / CPU ratio): {per_round}")
    print(f"load average before: {load_before}; after: {Path('/proc/loadavg').read_text().strip()}")
    print("targets (agent/bare): runs/s ratio >= 0.95, worker CPU ratio <= 1.20")
    if args.profile:
        print_split(files, profiled_steps)
    return medians


async def serve(queue: str) -> None:
    """The worker process: the bench tools and ``FloorWorkflow`` beside the agent's own, until SIGTERM."""
    await serve_worker(queue, BENCH_TOOLS, [FloorWorkflow], with_bare=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--result-bytes", type=int, default=2048)
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="after the rounds, sample one batch of each kind with py-spy into DIR",
    )
    add_latency_arguments(parser)
    parser.add_argument("--serve", metavar="QUEUE", help="run the bench worker on QUEUE (used by the bench itself)")
    args = parser.parse_args()
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(args.serve))
    else:
        asyncio.run(main(args))

"""What watching costs a run: the worker's CPU and the watched run's step latency with 0, 1, 10
and 50 watchers, on a worker that caches the run and on one that does not, side by side in one run.

    .venv/bin/python -m bench.watchers [--watchers 0,1,10,50] [--per-process 10] [--steps 6] [--repeat 3]

Two workers in their own processes (``python -m bench.watchers --serve QUEUE``), one with the
default workflow cache and one with ``AGENT_MAX_CACHED_WORKFLOWS=0`` (every workflow task and
every Query replays the whole history), against a headless dev stack and the scripted model on
loopback (labelled as such, not a real model). A run is ``--steps`` steps: ``big_text`` tool calls,
then a reply streamed as tokens (``stream_tokens=True``). Its watchers are ``handle.events()``
iterators started with the run, ``--per-process`` to a client: each client stands for one
watching process (its own feed, :mod:`agent.live`), so 50 watchers are 5 processes' worth of
Queries. For each row (medians of ``--repeat`` runs) it prints:

- worker CPU: the worker process's user + system CPU (``/proc/<pid>/stat``) over the run's wall
  time, in % of one core;
- step: the run's wall time (start to close) per step;
- task p50/max: workflow tasks from scheduled to completed (the run's own reaction time: what a
  crowd of Queries would stall);
- queries: the stream Queries the watchers' feeds sent in all;
- complete: watchers that received every event to ``run_ended`` (none may die).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from agent import Agent, ChatMessage, RunEvent, get_run
from agent.client import connect
from agent.live import RunFeed, feed_of, local_watchers
from bench.common import bench_stack, serve_worker, start_bench_worker
from bench.throughput import cpu_seconds
from bench.workloads import BENCH_TOOLS

#: The streamed reply that ends each run (about 1.2 s of tokens at the bench's pace).
REPLY = "All checks passed: " + " ".join(f"item {n} ok;" for n in range(24))
#: Watchers that have not reached ``run_ended`` this long after the run closed count as dead.
DRAIN_SECONDS = 60


def script(steps: int) -> list[dict]:
    """The scripted model's replies: ``steps - 1`` ``big_text`` calls, then :data:`REPLY` streamed."""
    call = {"tool_calls": [{"name": "big_text", "arguments": {"size": 512}}], "times": steps - 1}
    return [call, {"text": REPLY, "chunk_chars": 4, "pace": 0.02}]


def task_latencies_ms(history) -> list[float]:
    """Each workflow task's time from scheduled to completed, in ms (``history``: a WorkflowHistory)."""
    scheduled: dict[int, float] = {}
    out = []
    for event in history.events:
        at = event.event_time.ToMilliseconds()
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            scheduled[event.event_id] = at
        elif event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            attributes = event.workflow_task_completed_event_attributes
            out.append(at - scheduled.get(attributes.scheduled_event_id, at))
    return out


@dataclass
class Watched:
    """One run's figures.

    :param watchers: Its ``handle.events()`` iterators.
    :param processes: The clients (feeds) they were spread over.
    :param seconds: The run's wall time, start to close.
    :param steps: Its steps.
    :param task_p50_ms: Workflow task latency (scheduled to completed), median.
    :param task_max_ms: The same, the worst.
    :param queries: Stream Queries the feeds sent.
    :param transient_errors: Reads the feeds retried.
    :param complete: Watchers that got every event, to ``run_ended``, equal to a fresh read.
    :param history_length: Events in the run's history.
    :param worker_cpu: The worker's CPU over the run's wall time, in % of a core (None: not measured).
    """

    watchers: int
    processes: int
    seconds: float
    steps: int
    task_p50_ms: float
    task_max_ms: float
    queries: int
    transient_errors: int
    complete: int
    history_length: int = 0
    worker_cpu: float | None = None

    @property
    def step_ms(self) -> float:
        return 1000 * self.seconds / max(1, self.steps)


async def watched_run(
    clients: list[Client],
    task_queue: str,
    scripted,
    watchers: int,
    steps: int = 6,
    per_process: int = 10,
    worker_pid: int | None = None,
) -> tuple[Watched, list[list[RunEvent]]]:
    """Run one agent run on ``task_queue`` with ``watchers`` iterators reading its events.

    :param clients: At least ``ceil(watchers / per_process)`` clients; watcher ``i`` reads
        through ``clients[i // per_process]``.
    :param scripted: The scripted model server.
    :param worker_pid: The worker's process, for its CPU.
    :returns: The figures, and what each watcher received.
    :raises ValueError: With too few clients.
    """
    processes = math.ceil(watchers / per_process)
    if len(clients) < max(1, processes):
        raise ValueError(f"{watchers} watchers at {per_process} a process need {processes} clients")
    model, run_id = f"watchers-{uuid.uuid4().hex[:8]}", f"watchers-{uuid.uuid4().hex[:10]}"
    scripted.script(model, script(steps))
    agent = Agent(model=model, tools=list(BENCH_TOOLS), stream_tokens=True)
    cpu_before, began = (cpu_seconds(worker_pid) if worker_pid else 0.0), time.monotonic()
    handle = await agent.start(clients[0], [ChatMessage.from_user("check")], run_id=run_id, task_queue=task_queue)
    received: list[list[RunEvent]] = [[] for _ in range(watchers)]

    async def watch(index: int) -> None:
        async for event in get_run(clients[index // per_process], run_id).events():
            received[index].append(event)

    tasks = [asyncio.create_task(watch(i)) for i in range(watchers)]
    feeds: list[RunFeed] = []
    for client in clients[:processes]:  # each client's one feed, once its watchers joined it
        while local_watchers(client, run_id) == 0 and not all(t.done() for t in tasks):
            await asyncio.sleep(0.01)
        feeds.append(feed_of(client, run_id))
    result = await handle.result()
    ended = time.monotonic()
    cpu_after = cpu_seconds(worker_pid) if worker_pid else 0.0
    if tasks:
        await asyncio.wait(tasks, timeout=DRAIN_SECONDS)
    for task in tasks:
        task.cancel()
    fresh = [event async for event in handle.events()]
    history = await handle.workflow.fetch_history()
    latencies = task_latencies_ms(history)
    description = await handle.workflow.describe()
    seconds = (description.close_time - description.start_time).total_seconds()
    figures = Watched(
        watchers=watchers,
        processes=processes,
        seconds=seconds,
        steps=result.step_count,
        task_p50_ms=statistics.median(latencies),
        task_max_ms=max(latencies),
        queries=sum(f.queries for f in feeds),
        transient_errors=sum(f.transient_errors for f in feeds),
        complete=sum(events == fresh and bool(events) and events[-1].kind == "run_ended" for events in received),
        history_length=len(history.events),
        worker_cpu=100 * (cpu_after - cpu_before) / (ended - began) if worker_pid else None,
    )
    return figures, received


async def main(args: argparse.Namespace) -> None:
    counts = [int(n) for n in args.watchers.split(",")]
    cached_q, uncached_q = f"watch-cached-{uuid.uuid4().hex[:6]}", f"watch-uncached-{uuid.uuid4().hex[:6]}"
    load_before = Path("/proc/loadavg").read_text().strip()
    rows: dict[tuple[str, int], list[Watched]] = {}
    with bench_stack() as (stack, scripted), tempfile.TemporaryDirectory() as tmp:
        clients = [
            await connect(stack.temporal.address) for _ in range(max(1, math.ceil(max(counts) / args.per_process)))
        ]
        cached = start_bench_worker("bench.watchers", cached_q, Path(tmp) / "cached.log")
        uncached = start_bench_worker(
            "bench.watchers", uncached_q, Path(tmp) / "uncached.log", env={"AGENT_MAX_CACHED_WORKFLOWS": "0"}
        )
        try:
            for queue in (cached_q, uncached_q):  # warm both (imports, sandbox, connections)
                await watched_run(clients, queue, scripted, 1, args.steps, args.per_process)
            for repeat in range(args.repeat):
                for mode, queue, worker in (("cached", cached_q, cached), ("uncached", uncached_q, uncached)):
                    for n in counts if repeat % 2 == 0 else reversed(counts):  # share the machine's drift
                        figures, _ = await watched_run(
                            clients, queue, scripted, n, args.steps, args.per_process, worker.pid
                        )
                        rows.setdefault((mode, n), []).append(figures)
        finally:
            cached.stop()
            uncached.stop()
    print(
        f"watchers: {args.steps}-step runs (big_text calls, then a streamed reply), {args.per_process} watchers "
        f"a process, medians of {args.repeat}; dev server, scripted model on loopback, worker in its own process"
    )
    print(
        f"{'':22} {'worker CPU %':>12} {'step ms':>8} {'task p50 ms':>11} {'task max ms':>11} "
        f"{'queries':>8} {'retried':>8} {'complete':>9}"
    )
    for mode in ("cached", "uncached"):
        for n in counts:
            runs = rows[(mode, n)]

            def median(key: str, runs=runs) -> float:
                return statistics.median(float(getattr(r, key)) for r in runs)

            complete = f"{sum(r.complete for r in runs)}/{n * len(runs)}"
            print(
                f"{mode + ', ' + str(n) + ' watchers':22} {median('worker_cpu'):12.1f} {median('step_ms'):8.0f} "
                f"{median('task_p50_ms'):11.0f} {median('task_max_ms'):11.0f} {median('queries'):8.0f} "
                f"{median('transient_errors'):8.0f} {complete:>9}"
            )
    print(f"load average before: {load_before}; after: {Path('/proc/loadavg').read_text().strip()}")


async def serve(queue: str) -> None:
    """The worker process: the bench tools, until SIGTERM."""
    await serve_worker(queue, BENCH_TOOLS, [])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchers", default="0,1,10,50", help="watcher counts, comma-separated")
    parser.add_argument("--per-process", type=int, default=10, help="watchers sharing one client (one process)")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve", metavar="QUEUE", help="run the bench worker on QUEUE (used by the bench itself)")
    args = parser.parse_args()
    if args.serve:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(args.serve))
    else:
        asyncio.run(main(args))

"""Shared code of the parked-runs benches (``bench.parked_runs``, ``bench.pending_listing``): a stack
with a worker in its own process, and many runs parked on one approval each.

Each run asks the scripted model once; it answers with one ``stamp`` call, which the
``ConfirmationHook`` (``DurableConfirmationStrategy(AlwaysAskPolicy())``) parks until a person
decides. After a confirmation the tool runs (in the worker process: it appends its workflow id and
start time to ``$PARKING_STAMPS_FILE``) and the model's next reply, a text, ends the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from agent import Agent, ChatMessage, tool
from agent.approvals.waiting import list_waiting_runs
from agent.client import AgentRunHandle, connect, get_run
from agent.dev.processes import ChildProcess, start_worker
from agent.dev.scripted_model import ScriptedModelServer
from agent.dev.stack import LOOPBACK, TemporalDevServer, free_port
from bench.common import bench_stack, start_bench_worker
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from hooks.human_in_the_loop.wire import WAITING_RUNS_QUERY
from runtime.telemetry import PROMETHEUS_ENV

#: Where the worker's ``stamp`` tool writes "<workflow id> <time.time()>" lines.
STAMPS_ENV = "PARKING_STAMPS_FILE"
#: The scripted model's name for these benches.
MODEL = "bench-parking"
#: temporalio's Prometheus counter of workflow tasks for runs the worker no longer cached.
CACHE_MISS_METRIC = "temporal_sticky_cache_miss"
#: Client calls in flight at once (starts, Updates).
CONCURRENCY = 32


@tool
async def stamp(note: str) -> str:
    """Note when this call started (in the worker process, by wall clock)."""
    started = time.time()
    path = os.environ.get(STAMPS_ENV)
    if path:
        line = f"{activity.info().workflow_id} {started:.6f}\n".encode()
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)  # one small O_APPEND write: lines do not interleave
        finally:
            os.close(fd)
    return note


#: The worker's tools: ``python worker.py --tools bench.parking.PARKING_TOOLS``.
PARKING_TOOLS = [stamp]


def read_stamps(path: Path) -> dict[str, float]:
    """The tool's start time (wall clock) per workflow id; the first one wins."""
    stamps: dict[str, float] = {}
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text().splitlines():
            run_id, _, value = line.partition(" ")
            stamps.setdefault(run_id, float(value))
    return stamps


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def approval_task_ms(client: Client, run_id: str) -> float | None:
    """How long the workflow task that took ``run_id``'s first accepted Update ran (history
    timestamps), or None (no Update accepted). For a run the worker had evicted, that task includes
    fetching the history and replaying it."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    started: dict[int, float] = {}
    last: float | None = None
    for event in history.events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            started[event.event_id] = event.event_time.ToMilliseconds()
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            t0 = started[event.workflow_task_completed_event_attributes.started_event_id]
            last = event.event_time.ToMilliseconds() - t0
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
            return last
    return None


def cache_misses(metrics_url: str) -> int:
    """A worker's ``temporal_sticky_cache_miss`` counter (its Prometheus endpoint): workflow tasks
    for runs it had evicted. The server sends a parked run's next task to the worker's sticky queue
    whether or not the worker still caches the run, so history cannot tell; this counter can."""
    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        text = response.read().decode()
    return sum(
        int(float(line.rsplit(" ", 1)[1])) for line in text.splitlines() if line.startswith(CACHE_MISS_METRIC + "{")
    )


def rss_mib(pid: int) -> float:
    """Resident set size of ``pid`` (``VmRSS`` of ``/proc/<pid>/status``) in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def parking_agent() -> Agent:
    """One ``stamp`` call, always asked for."""
    hook = ConfirmationHook({"stamp": DurableConfirmationStrategy(AlwaysAskPolicy())})
    return Agent(model=MODEL, tools=[stamp], hooks={"before_tool": [hook]})


def parking_script(runs: int) -> list[dict]:
    """The scripted model's replies: ``runs`` tool calls (all runs park first), then ``runs`` texts."""
    return [
        {"tool_calls": [{"name": "stamp", "arguments": {"note": "parked"}}], "times": runs},
        {"text": "ok", "times": runs},
    ]


async def bounded(coros: Iterable, limit: int = CONCURRENCY) -> list:
    """Run the awaitables with at most ``limit`` in flight; their results in order."""
    semaphore = asyncio.Semaphore(limit)

    async def one(coro):
        async with semaphore:
            return await coro

    return await asyncio.gather(*(one(c) for c in coros))


async def count_waiting(client: Client) -> int:
    """Runs the visibility store lists as waiting for approval (``AgentWaitingForApproval``)."""
    return (await client.count_workflows(WAITING_RUNS_QUERY)).count


@dataclass
class ParkingLot:
    """A running Temporal server, a worker process and the runs parked so far."""

    server: TemporalDevServer
    scripted: ScriptedModelServer
    worker: ChildProcess
    client: Client
    task_queue: str
    stamps_file: Path
    prefix: str
    metrics_url: str
    agent: Agent = field(default_factory=parking_agent)
    run_ids: list[str] = field(default_factory=list)

    @property
    def worker_pid(self) -> int:
        assert self.worker.pid is not None, "the worker is not running"
        return self.worker.pid

    def cache_misses(self) -> int:
        """The worker's workflow-cache misses so far (see :func:`cache_misses`)."""
        return cache_misses(self.metrics_url)

    def worker_rss_mib(self) -> float:
        return rss_mib(self.worker_pid)

    async def start(self, count: int) -> float:
        """Start ``count`` more runs (``CONCURRENCY`` starts in flight); returns the seconds taken."""
        first = len(self.run_ids)
        ids = [f"{self.prefix}-{i:06d}" for i in range(first, first + count)]
        t0 = time.perf_counter()
        await bounded(
            self.agent.start(self.client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=self.task_queue)
            for run_id in ids
        )
        self.run_ids.extend(ids)
        return time.perf_counter() - t0

    async def wait_parked(self, target: int, timeout: float = 600.0, poll: float = 0.25) -> None:
        """Wait until visibility lists ``target`` runs as waiting.

        :raises TimeoutError: With the count reached, after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while (seen := await count_waiting(self.client)) < target:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {seen} of {target} runs parked after {timeout} s")
            self.worker.check_alive()
            await asyncio.sleep(poll)

    async def park(self, count: int) -> tuple[float, float]:
        """Start ``count`` runs and wait until all parked runs are listed as waiting.

        :returns: Seconds to start them, seconds until all of them were parked (from the first start).
        """
        t0 = time.perf_counter()
        start_s = await self.start(count)
        await self.wait_parked(len(self.run_ids))
        return start_s, time.perf_counter() - t0

    async def pending_call_ids(self) -> dict[str, str]:
        """Run id -> its pending call id, from one visibility listing (the memo)."""
        listed = await list_waiting_runs(self.client)
        return {run.run_id: run.pending[0].tool_call_id for run in listed.runs if run.pending}

    def handle(self, run_id: str) -> AgentRunHandle:
        return get_run(self.client, run_id)


@contextlib.contextmanager
def _server_and_model(persisted: bool) -> Iterator[tuple[TemporalDevServer, ScriptedModelServer]]:
    """``bench_stack``'s Temporal (SQLite file) and scripted model, or (``persisted=False``) an
    in-memory Temporal dev server (``start-dev``'s default) and the scripted model, no S3."""
    if persisted:
        with bench_stack() as (stack, scripted):
            yield stack.temporal, scripted
        return
    with tempfile.TemporaryDirectory() as tmp:
        server = TemporalDevServer(None, with_ui=False, log_file=Path(tmp) / "temporal.log")
        scripted = ScriptedModelServer().start()
        try:
            with server:
                yield server, scripted
        finally:
            scripted.stop()


@contextlib.asynccontextmanager
async def parking_lot(
    runs: int,
    worker_log: Path | None = None,
    worker_env: dict[str, str] | None = None,
    persisted: bool = True,
    worker_module: str | None = None,
) -> AsyncIterator[ParkingLot]:
    """A Temporal dev server, the scripted model scripted for ``runs`` parked runs, and a worker
    (``python worker.py --tools bench.parking.PARKING_TOOLS``) in its own process; all stopped after.

    :param worker_env: More environment for the worker (e.g. ``AGENT_MAX_CACHED_WORKFLOWS``).
    :param persisted: ``bench_stack`` (Temporal on a SQLite file, moto S3 for payloads) when True;
        an in-memory dev server and no S3 when False (less server CPU per run, so more runs park
        in the time budget; the worker does the same work).
    :param worker_module: Run the worker as ``python -m MODULE --serve QUEUE`` instead (a bench
        that registers more workflows); it must print ``worker ready`` once it polls.
    """
    with _server_and_model(persisted) as (server, scripted), tempfile.TemporaryDirectory() as tmp:
        scripted.script(MODEL, parking_script(runs))
        stamps_file = Path(tmp) / "stamps.txt"
        queue = f"parking-{uuid.uuid4().hex[:6]}"
        metrics_bind = f"{LOOPBACK}:{free_port()}"
        # explicit, whatever os.environ holds: this server, the scripted model, the SDK's metrics
        env = {
            PROMETHEUS_ENV: metrics_bind,
            STAMPS_ENV: str(stamps_file),
            "TEMPORAL_ADDRESS": server.address,
            "TEMPORAL_NAMESPACE": server.namespace,
            "OPENAI_BASE_URL": scripted.base_url,
            "OPENAI_API_KEY": "scripted-model",
            **(worker_env or {}),
        }
        log = worker_log or Path(tmp) / "worker.log"
        if worker_module is None:
            worker = start_worker(log, tools="bench.parking.PARKING_TOOLS", task_queue=queue, env=env)
        else:
            worker = start_bench_worker(worker_module, queue, log, env)
        try:
            client = await connect(server.address, server.namespace)
            yield ParkingLot(
                server,
                scripted,
                worker,
                client,
                queue,
                stamps_file,
                prefix=f"park-{queue}",
                metrics_url=f"http://{metrics_bind}/metrics",
            )
        except BaseException:
            print(worker.log_tail(20))
            raise
        finally:
            worker.stop()

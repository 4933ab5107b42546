"""The chaos drill: concurrent agent runs under kill -9s of the worker, a kill -9 of the Temporal dev
server and an S3 outage. Afterwards every run must have finished as planned and no completed tool
call may have run again.

Shared by ``tests/workflows/test_chaos.py`` (a dozen runs, the tests' own ``record`` tool) and
``python -m bench.chaos`` (100 runs, this module's ``record``); it imports nothing from ``tests``.

What happens, in order:

- its own :class:`DevStack` under a temp directory (SQLite file, moto with its request recording so
  S3 objects survive a restart), its own scripted model and one worker process (``python
  worker.py --tools ...``);
- ``runs`` agent runs at once, each ``steps`` steps of ``calls_per_step`` concurrent ``record`` calls
  (small random sleeps) and then a text answer;
- chaos events, shuffled, one at a time: each waits until the system made progress again since the
  last one and a random number of further calls (up to half a step of every run) completed, then
  strikes at a random time or right after a tool call started or completed (a few ms after a
  completion the worker is reporting the result and running the workflow task that follows it):
  kill -9 of the worker, with a new worker started at once; kill -9 of the dev server, restarted
  on the same SQLite file and port; an S3 outage (moto stopped for a few seconds, started again on
  the same port, replaying its recording so buckets and objects are back);
- checks: each run's result is the planned one (answer, step count, tool results), and for every
  idempotency key the tool ledgers agree with the history: the call was scheduled once, the attempt
  Temporal recorded as completed wrote one completion line, and no attempt ran after it. A
  completion line of an earlier attempt is a result the kill lost between the tool's write and the
  worker's report: that call ran again by design (tools run at least once), so it is counted
  ("completion lines lost"), not failed; "calls completed twice" counts the real violations.

The model is the project's :class:`ScriptedModelServer`, answering from the conversation rather
than from a queue of replies (:class:`PlannedModel`): a model call is an activity and runs at least
once too (a kill after the reply, S3 down while the reply is stored), and a retried call must get
the same reply, or the run would skip a step for reasons that have nothing to do with the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType, TimeoutType
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from agent import Agent, ChatMessage
from agent.client import AgentRunHandle, connect
from agent.dev.processes import ChildProcess, start_worker
from agent.dev.scripted_model import ScriptedModelServer
from agent.dev.stack import DevStack
from core.payloads import AgentRunResult
from core.tools import Tool, current_tool_context, tool
from core.wire import CHAT_COMPLETION_ACTIVITY, INVOKE_TOOL_ACTIVITY

QUEUE = "chaos"
TOOL_NAME = "record"


@tool
async def record(label: str, seconds: float = 0.0) -> str:
    """Sleep, then append one line (label, idempotency key, attempt) to $SIDE_EFFECTS_FILE.

    A line goes to the file's ``.started`` sibling first. Same ledgers as the tests' ``record`` tool.
    """
    context = current_tool_context()
    path = Path(os.environ.get("SIDE_EFFECTS_FILE", "side-effects.jsonl"))
    line = json.dumps({"label": label, "key": context.idempotency_key, "attempt": context.attempt}) + "\n"
    with path.with_suffix(".started").open("a") as f:
        f.write(line)
    await asyncio.sleep(seconds)
    with path.open("a") as f:
        f.write(line)
    return f"recorded {label}"


#: The bench's worker tools (``python worker.py --tools bench.chaos_drill.CHAOS_TOOLS``).
CHAOS_TOOLS = [record]


# -- the plan: what each run does, and the model that plays it ------------------------------------


@dataclass
class RunPlan:
    """One run: its id, its model name, its steps of ``(label, seconds)`` calls, its final answer."""

    run_id: str
    model: str
    steps: list[list[tuple[str, float]]]
    answer: str

    def call_id(self, step: int, index: int) -> str:
        return f"call_s{step}c{index}"

    def keys(self) -> set[str]:
        """The idempotency keys of every planned call."""
        return {f"{self.run_id}/{self.call_id(s, i)}" for s, calls in enumerate(self.steps) for i in range(len(calls))}

    def tool_results(self) -> dict[str, str]:
        """Call id -> the result text the run must end up with."""
        return {
            self.call_id(s, i): f"recorded {label}"
            for s, calls in enumerate(self.steps)
            for i, (label, _) in enumerate(calls)
        }


class PlannedModel(ScriptedModelServer):
    """The scripted model answering each run from its plan and the conversation it is sent.

    Step ``k`` (``k`` assistant tool-call messages so far) gets the plan's ``k``-th calls, with fixed
    call ids; after the last step, the plan's answer. The reply depends on the conversation only,
    so a retried model call gets the same reply. Replies are ordinary script entries, so the wire
    format is the scripted model's; models not in the plan get its usual unscripted reply.
    """

    def __init__(self, plans: dict[str, RunPlan]) -> None:
        super().__init__()
        self.plans = plans
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()
        # The request handler asks ``script.next(model, body)`` for each chat completion.
        self._script.next = self._next  # type: ignore[method-assign]
        # A worker killed while its request is in flight resets the connection: expected here, not worth a traceback.
        report_error = self._server.handle_error

        def handle_error(request: Any, client_address: Any) -> None:
            if not isinstance(sys.exc_info()[1], ConnectionError):
                report_error(request, client_address)

        self._server.handle_error = handle_error  # type: ignore[method-assign]

    def _next(self, model: str, body: dict[str, Any]) -> dict[str, Any] | None:
        plan = self.plans.get(model)
        if plan is None:
            return None
        with self._lock:
            self.calls[model] += 1
        step = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant" and m.get("tool_calls"))
        if step >= len(plan.steps):
            return {"text": plan.answer}
        return {
            "tool_calls": [
                {"id": plan.call_id(step, i), "name": TOOL_NAME, "arguments": {"label": label, "seconds": seconds}}
                for i, (label, seconds) in enumerate(plan.steps[step])
            ]
        }


def steps_for(events: int) -> int:
    """Steps a run needs so that work is left after the last event: each event waits for up to half
    a step of every run's calls after the previous one, plus slack at both ends."""
    return (events + 1) // 2 + 2


# -- configuration and report ---------------------------------------------------------------------


@dataclass
class DrillConfig:
    """What the drill does.

    :param tools: Import path of the worker's tool list; it must hold a ``record`` tool writing the ledgers.
    :param record_tool: That tool (its spec goes into the agent).
    :param deadline: Seconds from the first run's start until every run must have finished.
    """

    runs: int = 12
    steps: int = 5
    calls_per_step: int = 2
    min_tool_seconds: float = 0.05
    max_tool_seconds: float = 0.5
    worker_kills: int = 4
    server_kills: int = 1
    s3_outages: int = 1
    s3_outage_seconds: tuple[float, float] = (2.0, 4.0)
    server_down_seconds: tuple[float, float] = (0.3, 1.5)
    seed: int = 0
    tools: str = "bench.chaos_drill.CHAOS_TOOLS"
    record_tool: Tool = record
    deadline: float = 75.0
    log: Callable[[str], None] = print


@dataclass
class Disruption:
    """One chaos event. ``down_at``/``back_at``/``progress_at`` are seconds since the runs started."""

    kind: str  # "worker", "server" or "s3"
    trigger: str
    down_at: float
    back_at: float | None = None
    progress_at: float | None = None
    note: str = ""
    #: It struck after every run had finished (a late random moment): nothing was left to progress.
    after_the_runs: bool = False

    @property
    def to_progress(self) -> float | None:
        """Kill (or start of the outage) to the first progress once the service is back."""
        return None if self.progress_at is None else self.progress_at - self.down_at

    def describe(self) -> str:
        back = f", back after {self.back_at - self.down_at:.1f} s" if self.back_at is not None else ""
        progress = f"{self.to_progress:.2f} s" if self.to_progress is not None else "never"
        if self.after_the_runs:
            progress = "none needed (every run had finished before it struck)"
        return f"t={self.down_at:6.2f}s {self.kind:<6} {self.trigger}{back}; next progress after {progress}{self.note}"


@dataclass
class DrillReport:
    seed: int
    config: DrillConfig
    wall_seconds: float = 0.0
    disruptions: list[Disruption] = field(default_factory=list)
    completed_runs: int = 0
    failures: list[str] = field(default_factory=list)
    planned_calls: int = 0
    start_lines: int = 0
    completion_lines: int = 0
    calls_started_twice: int = 0
    calls_completed_twice: int = 0
    calls_run_after_completion: int = 0
    lost_results: int = 0  # completion lines of attempts whose result a kill lost (re-run by design)
    workflow_tasks_killed: int = 0  # started, then its worker (or the server) was killed (start-to-close timeout)
    sticky_tasks_moved: int = 0  # waiting on a dead worker's sticky queue (schedule-to-start timeout)
    workflow_tasks_failed: int = 0
    tool_retries: int = 0
    model_retries: int = 0
    model_calls: int = 0
    planned_model_calls: int = 0
    workers_started: int = 0

    @property
    def ok(self) -> bool:
        return not self.failures

    def count(self, kind: str) -> int:
        return sum(1 for d in self.disruptions if d.kind == kind)

    def max_to_progress(self, kinds: tuple[str, ...] = ("worker", "server", "s3")) -> float | None:
        values = [d.to_progress for d in self.disruptions if d.kind in kinds and d.to_progress is not None]
        return max(values) if values else None

    def lines(self) -> list[str]:
        def seconds(value: float | None) -> str:
            return "-" if value is None else f"{value:.2f} s"

        c = self.config
        worker_times = [d.to_progress for d in self.disruptions if d.kind == "worker" and d.to_progress is not None]
        out = [
            f"seed {self.seed}: {c.runs} runs x {c.steps} steps x {c.calls_per_step} record calls, wall {self.wall_seconds:.1f} s",
            f"runs completed as planned:   {self.completed_runs}/{c.runs}",
            f"kills: worker {self.count('worker')}, server {self.count('server')}, S3 outages {self.count('s3')} "
            f"({self.workers_started} worker processes started)",
            "kill-to-progress: from a kill (or the start of the S3 outage) to the next tool-call start or run completion",
            f"max kill-to-progress:        {seconds(self.max_to_progress())} (worker kills: max "
            f"{seconds(max(worker_times) if worker_times else None)}, median "
            f"{seconds(statistics.median(worker_times) if worker_times else None)}; server kill "
            f"{seconds(self.max_to_progress(('server',)))}; S3 outage {seconds(self.max_to_progress(('s3',)))})",
            f"tool calls: planned {self.planned_calls}, start lines {self.start_lines}, completion lines {self.completion_lines}",
            f"calls started twice:         {self.calls_started_twice} (interrupted and retried: tools run at least once)",
            f"completion lines lost:       {self.lost_results} (written, then the kill beat the report: re-run by design)",
            f"calls completed twice:       {self.calls_completed_twice} (must be 0)",
            f"calls run after completion:  {self.calls_run_after_completion} (must be 0)",
            f"retried attempts: tool {self.tool_retries}, model {self.model_retries}; model calls answered "
            f"{self.model_calls} for {self.planned_model_calls} planned",
            f"workflow tasks: {self.workflow_tasks_killed} cut off mid-task by a kill (start-to-close timeout), "
            f"{self.sticky_tasks_moved} moved off a dead worker's sticky queue, {self.workflow_tasks_failed} failed",
            "disruptions (seconds since the runs started):",
            *(f"  {d.describe()}" for d in self.disruptions),
        ]
        if self.failures:
            out += ["FAILURES:", *(f"  {f}" for f in self.failures)]
        return out

    def format(self) -> str:
        return "\n".join(self.lines())


# -- the ledgers the record tool writes ------------------------------------------------------------


class Ledgers:
    """Tails ``SIDE_EFFECTS_FILE`` (completions) and its ``.started`` sibling; timestamps what it reads."""

    def __init__(self, path: Path, clock: Callable[[], float]) -> None:
        self.paths = {"completed": path, "started": path.with_suffix(".started")}
        self.offsets = {"completed": 0, "started": 0}
        self.entries: dict[str, list[dict[str, Any]]] = {"completed": [], "started": []}
        self.keys_completed: set[str] = set()
        self.times: dict[str, list[float]] = {"completed": [], "started": []}
        self.clock = clock

    def poll(self) -> None:
        now = self.clock()
        for name, path in self.paths.items():
            try:
                with path.open("rb") as f:
                    f.seek(self.offsets[name])
                    data = f.read()
            except FileNotFoundError:
                continue
            end = data.rfind(b"\n") + 1  # whole lines only
            for raw in data[:end].splitlines():
                entry = json.loads(raw)
                self.entries[name].append(entry)
                self.times[name].append(now)
                if name == "completed":
                    self.keys_completed.add(entry["key"])
            self.offsets[name] += end

    def count(self, name: str) -> int:
        return len(self.entries[name])

    def completed_keys(self) -> int:
        """How many distinct calls have a completion line."""
        return len(self.keys_completed)


# -- the drill --------------------------------------------------------------------------------------


class _Drill:
    def __init__(self, config: DrillConfig, data_dir: Path) -> None:
        self.config = config
        self.dir = data_dir
        self.rng = random.Random(config.seed)
        self.report = DrillReport(seed=config.seed, config=config)
        self.t0 = time.monotonic()
        self.ledgers = Ledgers(self.dir / "effects.jsonl", self.clock)
        self.completion_times: list[float] = []
        self.results: dict[str, AgentRunResult | BaseException] = {}
        self.workers: list[ChildProcess] = []
        self.worker: ChildProcess | None = None
        self.worker_ready: asyncio.Task[Any] | None = None
        self.worker_env: dict[str, str] = {}
        self.plans = self._plans()

    def clock(self) -> float:
        return time.monotonic() - self.t0

    def log(self, message: str) -> None:
        self.config.log(f"[chaos {self.clock():6.2f}s] {message}")

    def _plans(self) -> dict[str, RunPlan]:
        c, plans = self.config, {}
        for index in range(c.runs):
            run_id = f"chaos-{c.seed}-{index}"
            steps = [
                [
                    (f"r{index}s{s}c{i}", round(self.rng.uniform(c.min_tool_seconds, c.max_tool_seconds), 2))
                    for i in range(c.calls_per_step)
                ]
                for s in range(c.steps)
            ]
            plans[f"chaos-model-{c.seed}-{index}"] = RunPlan(
                run_id, f"chaos-model-{c.seed}-{index}", steps, f"done {run_id}"
            )
        return plans

    # -- progress ----------------------------------------------------------------------------------

    def progress_after(self, moment: float) -> float | None:
        """The first progress (a tool call started, a run finished) observed after ``moment``."""
        later = [t for t in self.ledgers.times["started"] + self.completion_times if t > moment]
        return min(later) if later else None

    async def monitor(self) -> None:
        while True:
            self.ledgers.poll()
            await asyncio.sleep(0.02)

    async def wait_for(self, predicate: Callable[[], bool], what: str, poll: float = 0.02) -> None:
        while not predicate():
            if self.clock() > self.config.deadline:
                raise TimeoutError(f"gave up waiting for {what}")
            if len(self.results) == len(self.plans):
                raise TimeoutError(f"every run finished while waiting for {what}")
            self.ledgers.poll()
            await asyncio.sleep(poll)

    # -- processes ---------------------------------------------------------------------------------

    def start_worker(self) -> None:
        number = len(self.workers) + 1
        process = start_worker(
            self.dir / f"worker-{number}.log", self.config.tools, QUEUE, env=self.worker_env, wait_ready=False
        )
        self.workers.append(process)
        self.worker = process
        self.worker_ready = asyncio.create_task(self.until_ready(process))
        self.report.workers_started = number
        self.log(f"worker #{number} started (pid {process.pid})")

    async def until_ready(self, process: ChildProcess, timeout: float = 60.0) -> None:
        """Wait (without a thread, so nothing outlives the drill) until the worker prints ``worker ready``."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError):
                if any(
                    line.startswith("worker ready")
                    for line in process.log_file.read_text(errors="replace").splitlines()
                ):
                    return
            if not process.running or time.monotonic() > deadline:
                raise RuntimeError(f"worker {process.log_file.name} never became ready\n{process.log_tail()}")
            await asyncio.sleep(0.05)

    async def kill_worker(self, stack: DevStack, trigger: str) -> Disruption:
        assert self.worker is not None
        pid = self.worker.pid
        self.worker.kill()  # SIGKILL by PID, waits for the exit: the ledgers are final for that process
        self.ledgers.poll()
        disruption = Disruption("worker", trigger, self.clock())
        disruption.back_at = disruption.down_at
        self.log(f"kill -9 worker pid {pid} ({trigger})")
        self.start_worker()
        return disruption

    async def kill_server(self, stack: DevStack, trigger: str) -> Disruption:
        server = stack.temporal
        pid = server.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        while server.running:  # reaps it
            await asyncio.sleep(0.01)
        self.ledgers.poll()
        disruption = Disruption("server", trigger, self.clock())
        down = self.rng.uniform(*self.config.server_down_seconds)
        self.log(
            f"kill -9 Temporal dev server pid {pid} ({trigger}); restarting in {down:.1f} s on the same SQLite file"
        )
        await asyncio.sleep(down)
        server.launch()
        await asyncio.to_thread(server.wait_ready, 30.0)
        disruption.back_at = self.clock()
        disruption.note = f" (server start-up {server.startup_seconds:.1f} s)"
        self.log(
            f"Temporal dev server back (pid {server.pid}, {disruption.back_at - disruption.down_at:.1f} s after the kill)"
        )
        return disruption

    async def s3_outage(self, stack: DevStack, trigger: str) -> Disruption:
        s3 = stack.s3
        pid = s3.pid
        await asyncio.to_thread(s3.stop)
        disruption = Disruption("s3", trigger, self.clock())
        outage = self.rng.uniform(*self.config.s3_outage_seconds)
        self.log(f"S3 (moto pid {pid}) stopped ({trigger}); starting it again in {outage:.1f} s")
        await asyncio.sleep(outage)
        s3.launch()
        await asyncio.to_thread(s3.wait_ready, 30.0)  # replays the recording: buckets and objects are back
        disruption.back_at = self.clock()
        disruption.note = f" (moto start-up with replay {s3.startup_seconds:.1f} s)"
        self.log(f"S3 back (pid {s3.pid}, {disruption.back_at - disruption.down_at:.1f} s after it stopped)")
        return disruption

    # -- chaos -------------------------------------------------------------------------------------

    async def trigger(self, kind: str) -> str:
        """Wait for the moment to strike; returns how it was chosen."""
        choices = ["after a call completed", "after a call completed +", "after a call started", "at a random time"]
        choice = self.rng.choice(choices if kind == "worker" else [choices[0], choices[3]])
        if choice == "at a random time":
            delay = self.rng.uniform(0.0, 1.0)
            await asyncio.sleep(delay)
            return f"at a random time ({delay * 1000:.0f} ms after its turn came)"
        name = "started" if "started" in choice else "completed"
        seen = self.ledgers.count(name)
        await self.wait_for(lambda: self.ledgers.count(name) > seen, f"a tool call to {name[:-2]}t", poll=0.003)
        if choice.endswith("+"):  # the worker is reporting the result and running the workflow task after it
            delay = self.rng.uniform(0.005, 0.06)
            await asyncio.sleep(delay)
            return f"{delay * 1000:.0f} ms after a tool call completed"
        return f"right after a tool call {name}"

    async def chaos(self, stack: DevStack) -> None:
        """Fire the events one after another: each waits until the service is back, the system made
        progress again and ``gap`` more calls completed (up to half a step of every run), then strikes."""
        c = self.config
        kinds = ["worker"] * c.worker_kills + ["server"] * c.server_kills + ["s3"] * c.s3_outages
        self.rng.shuffle(kinds)
        previous: Disruption | None = None
        baseline: int | None = 0
        for index, kind in enumerate(kinds):
            gap = self.rng.randint(1, max(1, c.runs * c.calls_per_step // 2))

            def turn_came(previous: Disruption | None = previous, gap: int = gap) -> bool:
                nonlocal baseline
                if self.worker_ready is None or not self.worker_ready.done():
                    return False
                if previous is not None and previous.progress_at is None:
                    previous.progress_at = self.progress_after(previous.back_at or previous.down_at)
                    if previous.progress_at is None:
                        return False
                if baseline is None:
                    baseline = self.ledgers.completed_keys()
                return self.ledgers.completed_keys() >= baseline + gap

            await self.wait_for(turn_came, f"{kind} event {index + 1} of {len(kinds)}")
            if self.worker_ready is not None:
                self.worker_ready.result()  # a worker that failed to start fails the drill here
            trigger = await self.trigger(kind)
            if kind == "worker":
                disruption = await self.kill_worker(stack, trigger)
            elif kind == "server":
                disruption = await self.kill_server(stack, trigger)
            else:
                disruption = await self.s3_outage(stack, trigger)
            self.report.disruptions.append(disruption)
            previous, baseline = disruption, None

    # -- runs --------------------------------------------------------------------------------------

    async def follow(self, handle: AgentRunHandle) -> None:
        """Wait for the run's result across server restarts (RPC errors are retried)."""
        while True:
            try:
                result = await handle.result()
            except RPCError as err:
                if self.clock() > self.config.deadline:
                    raise TimeoutError(f"run {handle.run_id}: last error {err}") from err
                await asyncio.sleep(0.3)
                continue
            except WorkflowFailureError as err:
                self.results[handle.run_id] = err
                self.completion_times.append(self.clock())
                self.log(f"run {handle.run_id} FAILED: {err.cause or err}")
                return
            self.results[handle.run_id] = result
            self.completion_times.append(self.clock())
            return

    async def run(self, stack: DevStack, client: Any) -> None:
        c = self.config
        self.start_worker()
        await self.worker_ready  # type: ignore[misc]
        self.t0 = time.monotonic()
        self.log(f"starting {c.runs} runs (the clock restarts at 0)")
        handles = await asyncio.gather(
            *(
                Agent(model=plan.model, tools=[c.record_tool], max_agent_steps=c.steps + 2).start(
                    client, [ChatMessage.from_user(f"go {plan.run_id}")], run_id=plan.run_id, task_queue=QUEUE
                )
                for plan in self.plans.values()
            )
        )
        monitor = asyncio.create_task(self.monitor())
        chaos = asyncio.create_task(self.chaos(stack))
        followers = [asyncio.create_task(self.follow(h)) for h in handles]
        try:
            remaining = max(1.0, c.deadline - self.clock())
            done, pending = await asyncio.wait([chaos, *followers], timeout=remaining)
            if chaos in done and chaos.exception() is not None:
                self.report.failures.append(f"chaos: {chaos.exception()!r}")
            elif chaos in pending:
                self.report.failures.append(
                    f"chaos: only {len(self.report.disruptions)} of {c.worker_kills + c.server_kills + c.s3_outages} events fired"
                )
            for task in followers:
                if task in done and task.exception() is not None:
                    self.report.failures.append(f"follow: {task.exception()!r}")
            if pending:
                for task in pending:
                    task.cancel()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.diagnose_unfinished(handles), timeout=15)
        finally:
            monitor.cancel()
            self.ledgers.poll()
        self.report.wall_seconds = self.clock()
        last = self.report.disruptions[-1] if self.report.disruptions else None
        if last is not None and last.progress_at is None:
            last.progress_at = self.progress_after(last.back_at or last.down_at)
            if last.progress_at is None and len(self.completion_times) == len(self.plans):
                last.after_the_runs = max(self.completion_times) <= last.down_at
        await self.check(handles)

    async def diagnose_unfinished(self, handles: list[AgentRunHandle]) -> None:
        for handle in handles:
            if handle.run_id in self.results:
                continue
            try:
                health = await asyncio.wait_for(handle.health(), timeout=5)
                events = [EventType.Name(e.event_type) async for e in handle.workflow.fetch_history_events()]
                detail = f"{health.model_dump_json()}; last events {events[-6:]}"
            except Exception as err:
                detail = f"(could not describe it: {err!r})"
            self.report.failures.append(
                f"run {handle.run_id} did not finish within {self.config.deadline:.0f} s: {detail}"
            )

    # -- checks ------------------------------------------------------------------------------------

    async def check(self, handles: list[AgentRunHandle]) -> None:
        report, failures = self.report, self.report.failures
        by_run = {plan.run_id: plan for plan in self.plans.values()}
        result_keys: set[str] = set()
        for run_id, plan in by_run.items():
            result = self.results.get(run_id)
            if not isinstance(result, AgentRunResult):
                failures.append(
                    f"run {run_id} failed: {result!r}" if result is not None else f"run {run_id}: no result"
                )
                continue
            calls = {c.id: c for m in result.messages for c in m.tool_calls}
            results = {
                m.tool_call_result.origin.id: m.tool_call_result.result for m in result.messages if m.tool_call_result
            }
            result_keys |= {f"{run_id}/{call_id}" for call_id in calls}
            got = (result.exit_reason, result.last_message.text if result.last_message else None, result.step_count)
            want = ("text", plan.answer, len(plan.steps) + 1)
            problems = []
            if got != want:
                problems.append(f"(exit_reason, answer, steps) {got} != {want}")
            if result.tool_call_counts != {TOOL_NAME: len(plan.keys())}:
                problems.append(f"tool_call_counts {result.tool_call_counts}")
            if results != plan.tool_results():
                problems.append(f"tool results {results} != {plan.tool_results()}")
            if problems:
                failures.append(f"run {run_id}: " + "; ".join(problems))
            else:
                report.completed_runs += 1

        planned = set().union(*(plan.keys() for plan in by_run.values()))
        report.planned_calls = len(planned)
        report.planned_model_calls = sum(len(plan.steps) + 1 for plan in by_run.values())
        report.model_calls = sum(self.model.calls.values())
        started, completed = self.ledgers.entries["started"], self.ledgers.entries["completed"]
        report.start_lines, report.completion_lines = len(started), len(completed)
        if result_keys - planned:
            failures.append(f"calls in results that were not planned: {sorted(result_keys - planned)[:5]}")
        unexpected = {e["key"] for e in started + completed} - planned
        if unexpected:
            failures.append(f"ledger lines for calls that were not planned: {sorted(unexpected)[:5]}")
        starts: dict[str, list[int]] = defaultdict(list)
        completions: dict[str, list[int]] = defaultdict(list)
        for entry in started:
            starts[entry["key"]].append(entry["attempt"])
        for entry in completed:
            completions[entry["key"]].append(entry["attempt"])
        report.calls_started_twice = sum(1 for attempts in starts.values() if len(attempts) > 1)

        # What Temporal recorded: per tool call, how often it was scheduled and which attempt completed.
        scheduled: Counter[str] = Counter()
        completed_attempt: dict[str, int] = {}
        for handle in handles:
            try:
                history = await asyncio.wait_for(handle.workflow.fetch_history(), timeout=30)
            except Exception as err:
                failures.append(f"history of {handle.run_id}: {err!r}")
                continue
            self.count_history(handle.run_id, history, scheduled, completed_attempt)
        for key in sorted(planned & result_keys):
            done = completed_attempt.get(key)
            lines = completions.get(key, [])
            if scheduled[key] != 1:
                failures.append(f"{key}: scheduled {scheduled[key]} times in history")
            if done is None:
                failures.append(f"{key}: no completed activity in history")
                continue
            report.lost_results += sum(1 for a in lines if a < done)
            if sum(1 for a in lines if a >= done) > 1 or scheduled[key] > 1:
                report.calls_completed_twice += 1
                failures.append(
                    f"{key}: completed twice (completion attempts {lines}, Temporal completed attempt {done})"
                )
            if lines.count(done) == 0:
                failures.append(
                    f"{key}: Temporal completed attempt {done} but the ledger has no completion of it ({lines})"
                )
            after = [a for a in starts.get(key, []) + lines if a > done]
            if after:
                report.calls_run_after_completion += 1
                failures.append(f"{key}: ran again after attempt {done} completed (attempts {after})")
        missing = planned - set(completions)
        if missing and report.completed_runs == len(by_run):
            failures.append(f"planned calls with no completion line: {sorted(missing)[:5]}")

    def count_history(
        self, run_id: str, history: Any, scheduled: Counter[str], completed_attempt: dict[str, int]
    ) -> None:
        report = self.report
        call_keys: dict[int, str] = {}
        attempts: dict[int, int] = {}
        for event in history.events:
            kind = event.event_type
            if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
                timeout = event.workflow_task_timed_out_event_attributes.timeout_type
                if timeout == TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE:
                    report.workflow_tasks_killed += 1
                else:
                    report.sticky_tasks_moved += 1
            elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                report.workflow_tasks_failed += 1
            elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                attrs = event.activity_task_scheduled_event_attributes
                if attrs.activity_type.name == INVOKE_TOOL_ACTIVITY:
                    data = json.loads(attrs.input.payloads[0].data)
                    key = f"{data['run_id']}/{data['call_key']}"
                    call_keys[event.event_id] = key
                    scheduled[key] += 1
                elif attrs.activity_type.name != CHAT_COMPLETION_ACTIVITY:
                    continue
            elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
                attrs = event.activity_task_started_event_attributes
                attempts[attrs.scheduled_event_id] = attrs.attempt
                if attrs.attempt > 1:
                    if attrs.scheduled_event_id in call_keys:
                        report.tool_retries += attrs.attempt - 1
                    else:
                        report.model_retries += attrs.attempt - 1
            elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                scheduled_id = event.activity_task_completed_event_attributes.scheduled_event_id
                if scheduled_id in call_keys:
                    completed_attempt[call_keys[scheduled_id]] = attempts[scheduled_id]

    # -- set-up and tear-down ----------------------------------------------------------------------

    async def main(self) -> DrillReport:
        c = self.config
        self.log(
            f"seed {c.seed}: {c.runs} runs, {c.worker_kills} worker kills, {c.server_kills} server kills, {c.s3_outages} S3 outages"
        )
        stack = DevStack(self.dir / "stack", with_ui=False, persist_s3=True)
        self.model = PlannedModel(self.plans).start()
        effects = self.ledgers.paths["completed"]
        extra = {
            "OPENAI_BASE_URL": self.model.base_url,
            "OPENAI_API_KEY": "scripted-model",
            "SIDE_EFFECTS_FILE": str(effects),
        }
        previous = {key: os.environ.get(key) for key in extra}
        try:
            stack.start()  # blocks a few seconds; nothing else runs yet
            previous = {**stack.apply_env(), **previous}
            os.environ.update(extra)
            self.worker_env = {**stack.env, **extra}
            self.log(
                f"stack up: Temporal {stack.temporal.address}, S3 {stack.s3.endpoint_url}, model {self.model.base_url}"
            )
            client = await connect(stack.temporal.address, stack.temporal.namespace)
            await self.run(stack, client)
        finally:
            for process in self.workers:
                process.stop(timeout=10)
            self.model.stop()
            stack.stop()
            DevStack.restore_env(previous)
        return self.report


async def run_drill(config: DrillConfig, data_dir: Path) -> DrillReport:
    """Run the drill with its files under ``data_dir``; returns the report (``report.ok``, ``report.failures``)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    return await _Drill(config, data_dir).main()


__all__ = ["CHAOS_TOOLS", "DrillConfig", "DrillReport", "PlannedModel", "RunPlan", "record", "run_drill", "steps_for"]

"""The peers side by side: one agent task on one dev server and one scripted model, in one run.

Systems: the bare floor (bench/bare_floor.py, a hand-written loop on temporalio alone), our
activities with no agent logic (bench.floor_workflow, "floor"), our agent, pydantic-ai's durable agent
(``TemporalDurability``, the successor of ``TemporalAgent``) and Temporal's OpenAI Agents
integration (``OpenAIAgentsPlugin``). The task: the model calls ``big_text`` once a step for S
steps (each call returns N bytes of text), then answers text.

Each system runs in its own worker process (own task queue, own plugins and sandbox): the parent
starts the stack and the scripted model, scripts each run's model by name and starts
``python -m bench.peers --child ...`` once per case and system; the child starts the worker, makes
one short warm-up run, then the measured run, and prints one JSON line (bench.peer_common.PeerResult).
Figures per step: wall time, worker-side work (workflow-task + activity spans from the history's
timestamps) and its ratio to the bare floor, the worker process's CPU time, history bytes.

A run that stops making progress (no new history event for ``--stall`` s) or passes ``--deadline``
is reported as stalled with the reason Temporal records (a failing workflow task, an activity being
retried) and terminated; a run that fails is reported with its failure.

Needs the ``[bench]`` extra: pip install -e '.[bench]'.

With ``--rounds N`` every case and system runs N times (each round starting with the next
system) and the table gives medians of the finished rounds, with the spread of wall times.

Run: python -m bench.peers [--cases 20x2048,100x2048,40x51200] [--steps 10] [--systems bare,ours]
     [--rounds N] [--s3-latency [MS]] [--model-latency [MS]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import importlib
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHistory
from temporalio.service import RPCError

from bench.common import add_latency_arguments, bench_stack, chain_events, latency_label, worker_spans
from bench.peer_common import SYSTEMS, PeerResult, best_peer_lines, classify, markdown_table, median_results, script

ROOT = Path(__file__).resolve().parents[1]
MODULES = {
    "bare": "bench.peer_bare",
    "floor": "bench.peer_floor",
    "ours": "bench.peer_ours",
    "pydantic-ai": "bench.peer_pydantic_ai",
    "openai-agents": "bench.peer_openai_agents",
}
#: 50 KiB results: at 40 steps pydantic-ai's last model input passes Temporal's 2 MiB payload limit.
DEFAULT_CASES = "20x2048,100x2048,40x51200"
WARMUP_STEPS, WARMUP_BYTES = 3, 100
POLL_S = 1.0


def parse_cases(text: str) -> list[tuple[int, int]]:
    """``"20x2048,40x51200"`` -> ``[(20, 2048), (40, 51200)]`` (steps x tool-result bytes).

    :raises ValueError: On an entry that is not ``STEPSxBYTES`` with both at least 1.
    """
    cases = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        steps, sep, size = entry.lower().partition("x")
        if not (sep and steps.isdigit() and size.isdigit() and int(steps) >= 1 and int(size) >= 1):
            raise ValueError(f"Case {entry!r} is not STEPSxBYTES with both at least 1, e.g. 20x2048.")
        cases.append((int(steps), int(size)))
    if not cases:
        raise ValueError(f"No case in {text!r}; give STEPSxBYTES entries separated by commas.")
    return cases


def parse_systems(text: str) -> list[str]:
    """``"floor,ours"`` -> ``["floor", "ours"]``, in table order.

    :raises ValueError: On an unknown system name.
    """
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown or not names:
        raise ValueError(f"Unknown systems {unknown or text!r}; choose from {', '.join(SYSTEMS)}.")
    return [s for s in SYSTEMS if s in names]


# ---------------------------------------------------------------- child: one worker process, one case


async def _stall_reason(client: Client, handle) -> str | None:
    """What Temporal records about a run that does not progress: a failing workflow task, retried activities."""
    raw = (await handle.describe()).raw_description
    reasons = []
    if raw.HasField("pending_workflow_task") and raw.pending_workflow_task.attempt > 1:
        history = await client.get_workflow_handle(handle.id).fetch_history()
        failed = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
        message = failed[-1].workflow_task_failed_event_attributes.failure.message if failed else "no failure recorded"
        reasons.append(f"workflow task failing (attempt {raw.pending_workflow_task.attempt}): {message}")
    for activity in raw.pending_activities:
        if activity.last_failure.message:
            reasons.append(
                f"activity {activity.activity_type.name} retried (attempt {activity.attempt}): "
                f"{activity.last_failure.message}"
            )
    return "; ".join(reasons) or None


async def _watch(client: Client, handle, deadline_s: float, stall_s: float) -> tuple[str, str | None, float]:
    """Wait for the run's result, checking progress every second. Returns (outcome, error, wall seconds)."""
    started = time.perf_counter()
    result = asyncio.ensure_future(handle.result())
    last_length, last_change = -1, started
    try:
        while True:
            done, _ = await asyncio.wait({result}, timeout=POLL_S)
            now = time.perf_counter()
            completed, failure = False, None
            if done:
                try:
                    result.result()
                    completed = True
                except WorkflowFailureError as err:
                    failure = str(err.cause or err)
            else:
                length = (await handle.describe()).history_length
                if length != last_length:  # any change: continue-as-new resets the length
                    last_length, last_change = length, now
            verdict = classify(
                completed=completed,
                failure=failure,
                elapsed_s=now - started,
                idle_s=now - last_change,
                deadline_s=deadline_s,
                stall_s=stall_s,
            )
            if verdict is not None:
                outcome, error = verdict
                if outcome == "stalled":
                    reason = await _stall_reason(client, handle)
                    error = f"{reason} ({error})" if reason else error
                    await handle.terminate(f"bench.peers: {error}")
                return outcome, error, now - started
    finally:
        result.cancel()


async def _run_once(module, client: Client, queue: str, system: str, model: str, steps: int, size: int, args):
    run_id = f"peers-{model}"
    cpu_started = time.process_time()
    handle = await module.start(client, queue, run_id, model, steps)
    outcome, error, wall_s = await _watch(client, handle, args.deadline, args.stall)
    cpu_s = time.process_time() - cpu_started
    events = await chain_events(client, run_id)
    scheduled = {
        e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    steps_done = sum(
        1
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
        and scheduled.get(e.activity_task_completed_event_attributes.scheduled_event_id, "").endswith(
            module.TOOL_ACTIVITY
        )
    )
    # Event ids restart with each run of a continue-as-new chain; spans are matched per run.
    spans = _chain_spans(run_id, events)
    per = max(1, steps_done)
    finished = outcome == "finished"
    return PeerResult(
        system=system,
        steps=steps,
        result_bytes=size,
        outcome=outcome,
        error=error,
        steps_done=steps_done,
        wall_ms=wall_s * 1000 / per if finished else None,
        work_ms=(spans["workflow_task_ms"] + spans["activity_ms"]) / per if steps_done else None,
        cpu_ms=cpu_s * 1000 / per if finished else None,
        history_bytes=sum(e.ByteSize() for e in events) / per if steps_done else None,
    )


def _chain_spans(workflow_id: str, events: list) -> dict[str, float]:
    """worker_spans over each run of a chain (event ids restart at 1 in every run), summed."""
    runs: list[list] = []
    for event in events:
        if event.event_id == 1:
            runs.append([])
        runs[-1].append(event)
    total: dict[str, float] = {"workflow_task_ms": 0.0, "activity_ms": 0.0, "events": 0.0}
    for run in runs:
        for key, value in worker_spans(WorkflowHistory(workflow_id, run)).items():
            total[key] = total.get(key, 0.0) + value
    return total


async def child(args: argparse.Namespace) -> PeerResult:
    """One worker process: the system's worker, a warm-up run, then the measured run."""
    module = importlib.import_module(MODULES[args.child])
    client = await module.connect(args.address)
    queue = f"peers-{args.child}-{uuid.uuid4().hex[:6]}"
    async with module.worker(client, queue):
        # The first run pays for imports into the workflow sandbox; measure the second.
        warm = await _run_once(module, client, queue, args.child, args.warmup_model, WARMUP_STEPS, WARMUP_BYTES, args)
        if warm.outcome != "finished":
            return warm.model_copy(
                update={"steps": args.steps, "result_bytes": args.size, "error": f"warm-up: {warm.error}"}
            )
        return await _run_once(module, client, queue, args.child, args.model, args.steps, args.size, args)


# ---------------------------------------------------------------- parent: the stack, one child per case and system


async def _run_child(
    client: Client, system: str, steps: int, size: int, scripted, address: str, args, logs: Path
) -> PeerResult:
    tag = f"{system}-{steps}x{size}-{uuid.uuid4().hex[:6]}"
    scripted.script(tag, script(steps, size))
    scripted.script(f"{tag}-warm", script(WARMUP_STEPS, WARMUP_BYTES))
    log = logs / f"{tag}.log"
    run_ids = [f"peers-{tag}", f"peers-{tag}-warm"]
    command = [sys.executable, "-m", "bench.peers", "--child", system, "--address", address]
    command += ["--model", tag, "--warmup-model", f"{tag}-warm", "--steps", str(steps), "--size", str(size)]
    command += ["--deadline", str(args.deadline), "--stall", str(args.stall)]
    with log.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=stderr, env=dict(os.environ)
        )
        try:
            # Warm-up and measured run, each within the deadline, plus start-up and history fetches.
            stdout, _ = await asyncio.wait_for(process.communicate(), timeout=2 * args.deadline + 120)
        except TimeoutError:
            process.kill()  # this child only, by its PID
            await process.wait()
            stdout = b""
    await _terminate_if_running(client, run_ids)
    lines = stdout.decode().strip().splitlines()
    if process.returncode == 0 and lines:
        return PeerResult.model_validate_json(lines[-1])
    tail = " / ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
    error = f"worker process exited {process.returncode}: {tail[-300:]}"
    return PeerResult(system=system, steps=steps, result_bytes=size, outcome="failed", error=error)


async def _terminate_if_running(client: Client, workflow_ids: list[str]) -> None:
    """Terminate a run a killed worker process left running (none when the child ended normally)."""
    for workflow_id in workflow_ids:
        handle = client.get_workflow_handle(workflow_id)
        with contextlib.suppress(RPCError):  # never started: nothing to stop
            if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                await handle.terminate("bench.peers: left running by a worker process that was stopped")


async def main(args: argparse.Namespace) -> None:
    cases, systems = args.case_list, args.system_list
    started = time.monotonic()
    print(f"peers, {datetime.date.today()}: {os.cpu_count()} cores, dev server, scripted model on loopback", flush=True)
    print(f"load before: {Path('/proc/loadavg').read_text().strip()}", flush=True)
    results: list[PeerResult] = []
    print(f"latencies: {latency_label(args.s3_latency, args.model_latency)}", flush=True)
    with tempfile.TemporaryDirectory() as tmp, bench_stack(args.s3_latency, args.model_latency) as (stack, scripted):
        address = stack.temporal.address
        client = await Client.connect(address)
        for round_number in range(args.rounds):
            # Each round starts with the next system, so none always runs first (or last) in a case.
            order = systems[round_number % len(systems) :] + systems[: round_number % len(systems)]
            for steps, size in cases:
                for system in order:
                    t = time.monotonic()
                    result = await _run_child(client, system, steps, size, scripted, address, args, Path(tmp))
                    results.append(result)
                    wall = f", {result.wall_ms:.1f} ms/step" if result.wall_ms else ""
                    print(
                        f"  round {round_number + 1}/{args.rounds} {steps}x{size} {system}: {result.status}{wall} "
                        f"({time.monotonic() - t:.0f} s)",
                        flush=True,
                    )
    print(f"load after: {Path('/proc/loadavg').read_text().strip()}; took {time.monotonic() - started:.0f} s")
    print()
    merged = median_results(results)
    if args.rounds > 1:
        print(f"medians of {args.rounds} rounds (finished rounds only; the others are named in the table)")
    print(markdown_table(merged))
    print()
    print("wall per step, ours against the fastest peer and the bare floor:")
    for line in best_peer_lines(merged):
        print(f"  {line}")


def _arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=DEFAULT_CASES, help="STEPSxBYTES entries, comma-separated")
    parser.add_argument("--steps", type=int, help="shortcut: one case of this many steps with 2 KiB results")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, from {', '.join(SYSTEMS)}")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of every case and system; medians are printed")
    parser.add_argument("--deadline", type=float, default=120.0, help="seconds a run may take in all")
    parser.add_argument("--stall", type=float, default=20.0, help="seconds a run may go without a new history event")
    add_latency_arguments(parser)
    # The worker process's own arguments (set by the parent).
    parser.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--warmup-model", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        args.case_list = [(args.steps, 2_048)] if args.steps is not None else parse_cases(args.cases)
        args.system_list = parse_systems(args.systems)
    except ValueError as err:
        parser.error(str(err))
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}.")
    if args.deadline <= 0 or args.stall <= 0:
        parser.error("--deadline and --stall must be positive.")
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}.")
    return args


if __name__ == "__main__":
    arguments = _arguments()
    if arguments.child:
        print(asyncio.run(child(arguments)).model_dump_json(), flush=True)
        # temporalio's native runtime can abort in interpreter shutdown (PyGILState_Release,
        # sdk-python#300) after the result is out: seen as "exited -6" in 3 of ~25 children.
        sys.stderr.flush()
        os._exit(0)
    else:
        asyncio.run(main(arguments))

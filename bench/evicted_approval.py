"""Approval of an evicted run next to the bare floor's: Update sent -> tool started, for our agent
and a hand-written workflow side by side on one worker, for runs the worker still caches and for
runs it has evicted (which it rebuilds by replaying their history before the Update can run).

    .venv/bin/python -m bench.evicted_approval [--runs 300] [--cache 100] [--approve 30]

An in-memory dev server, the scripted model (loopback, labelled as such) and one worker process
(``python -m bench.evicted_approval --serve QUEUE``: the parking tools, ``AgentWorkflow`` and
``ParkedFloorWorkflow`` from bench/floor_workflow.py, workflow cache ``--cache``). ``--runs`` runs
of each kind park on one ``stamp`` call; they start alternately, so both kinds age alike, and with
more parked than the cache holds the earliest parked are evicted. Then, one at a time and each
waited to its end, alternating ours and the floor: ``--approve`` of each kind among the latest
parked (cached), then ``--approve`` of each among the earliest (evicted). Latency: the Update sent
-> the tool starting in the worker (its wall-clock stamp; same machine). Whether the worker had
evicted a run is read from its own ``temporal_sticky_cache_miss`` counter (Prometheus, read before
and after each approval), not assumed: the server sends the Update's task to the worker's sticky
queue either way, and a worker that no longer caches the run fetches its history and replays it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agent import ChatMessage
from bench.common import percentile, serve_worker
from bench.floor_workflow import ParkedFloorWorkflow
from bench.parking import PARKING_TOOLS, ParkingLot, approval_task_ms, bounded, parking_lot, read_stamps, stamp
from hooks.human_in_the_loop.dataclasses import PendingSummary
from hooks.human_in_the_loop.wire import PENDING_MEMO_KEY
from runtime.worker import MAX_CACHED_WORKFLOWS_ENV

#: The floor's model name: its replies carry a fixed call id, so the bench knows what to approve.
FLOOR_MODEL = "bench-parking-floor"
FLOOR_CALL_ID = "call_park"


@dataclass(frozen=True)
class Approval:
    """One approval: when its Update was sent (wall clock) and whether the worker had evicted the
    run (it missed the run in its cache and replayed the history)."""

    sent: float
    evicted: bool


def floor_script(runs: int) -> list[dict]:
    """The floor's replies: ``runs`` ``stamp`` calls (id ``FLOOR_CALL_ID``), then ``runs`` texts."""
    call = {"name": "stamp", "arguments": {"note": "parked"}, "id": FLOOR_CALL_ID}
    return [{"tool_calls": [call], "times": runs}, {"text": "ok", "times": runs}]


async def park_both(lot: ParkingLot, runs: int) -> tuple[list[str], list[str]]:
    """Start ``runs`` of ours and of the floor, alternately; wait until all are listed as waiting."""
    ours = [f"{lot.prefix}-ours-{i:05d}" for i in range(runs)]
    floor = [f"{lot.prefix}-floor-{i:05d}" for i in range(runs)]

    async def start(kind: str, run_id: str) -> None:
        if kind == "ours":
            await lot.agent.start(lot.client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=lot.task_queue)
        else:
            await lot.client.start_workflow(
                ParkedFloorWorkflow.run,
                args=[FLOOR_MODEL, [stamp.spec], "go"],
                id=run_id,
                task_queue=lot.task_queue,
            )

    await bounded(
        start(kind, run_id)
        for pair in zip(ours, floor, strict=True)
        for kind, run_id in zip(("ours", "floor"), pair, strict=True)
    )
    lot.run_ids.extend(ours + floor)
    await lot.wait_parked(2 * runs)
    return ours, floor


async def pending_call_id(lot: ParkingLot, run_id: str) -> str:
    """Our run's pending call id, from the memo it publishes (``describe``: no query, so the worker
    does not load the run; the waiting listing would query the floor's runs, which have no memo)."""
    description = await lot.client.get_workflow_handle(run_id).describe()
    summaries = await description.memo_value(PENDING_MEMO_KEY, type_hint=list[PendingSummary])
    return summaries[0].tool_call_id


async def approve(lot: ParkingLot, kind: str, run_id: str) -> Approval:
    """Approve ``run_id``'s call, wait for the run's end, and tell whether the worker had evicted it."""
    handle = lot.client.get_workflow_handle(run_id)
    call_id = await pending_call_id(lot, run_id) if kind == "ours" else FLOOR_CALL_ID
    misses = lot.cache_misses()
    sent = time.time()
    if kind == "ours":
        await lot.handle(run_id).confirm(call_id, approver="bench")
    else:
        await handle.execute_update(ParkedFloorWorkflow.approve, call_id)
    await handle.result()
    # the Update's workflow task is the run's first since it parked: a miss there = evicted
    return Approval(sent=sent, evicted=lot.cache_misses() > misses)


def _line(name: str, ms: list[float]) -> str:
    if not ms:
        return f"  {name:<40} (none)"
    return f"  {name:<40} p50 {percentile(ms, 50):6.1f} ms   p95 {percentile(ms, 95):6.1f} ms   (n={len(ms)})"


async def measure(runs: int, cache: int, approvals: int) -> None:
    t_bench = time.perf_counter()
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    async with parking_lot(
        runs,
        worker_env={MAX_CACHED_WORKFLOWS_ENV: str(cache)},
        persisted=False,
        worker_module="bench.evicted_approval",
    ) as lot:
        lot.scripted.script(FLOOR_MODEL, floor_script(runs))
        ours, floor = await park_both(lot, runs)
        # the latest parked first (cached: approving them frees cache slots and evicts nothing),
        # then the earliest parked (evicted long ago)
        order = [
            (kind, run_id)
            for group in (slice(-approvals, None), slice(0, approvals))
            for pair in zip(ours[group], floor[group], strict=True)
            for kind, run_id in zip(("ours", "floor"), pair, strict=True)
        ]
        done = {run_id: await approve(lot, kind, run_id) for kind, run_id in order}
        stamps = read_stamps(lot.stamps_file)
        tasks = {run_id: await approval_task_ms(lot.client, run_id) for _, run_id in order}
    latency: dict[tuple[str, bool], list[float]] = {}
    task_ms: dict[tuple[str, bool], list[float]] = {}
    for kind, run_id in order:
        task_ran_ms, approval = tasks[run_id], done[run_id]
        if task_ran_ms is None or run_id not in stamps:
            raise RuntimeError(f"{run_id}: no accepted Update or no tool start on record")
        latency.setdefault((kind, approval.evicted), []).append((stamps[run_id] - approval.sent) * 1000)
        task_ms.setdefault((kind, approval.evicted), []).append(task_ran_ms)

    print(
        f"Approval latency, evicted and cached, ours vs the bare floor: dev server in memory, "
        f"{datetime.now(UTC):%Y-%m-%d}, 2 shared cores, pid {os.getpid()};"
    )
    print(
        f"{runs:,} runs of each kind parked, worker cache {cache:,}; model: scripted, loopback; load average "
        f"before {' '.join(load_before)}, after {' '.join(Path('/proc/loadavg').read_text().split()[:3])}; "
        f"whole bench {(time.perf_counter() - t_bench) / 60:.1f} min"
    )
    for evicted in (False, True):
        state = "evicted" if evicted else "cached"
        for kind in ("floor", "ours"):
            print(_line(f"Update sent -> tool started, {state}, {kind}", latency.get((kind, evicted), [])))
            print(_line("  its workflow task ran (history)", task_ms.get((kind, evicted), [])))
        if latency.get(("ours", evicted)) and latency.get(("floor", evicted)):
            ratio = percentile(latency[("ours", evicted)], 50) / percentile(latency[("floor", evicted)], 50)
            print(f"  ours / floor, p50, {state}: {ratio:.2f}x")


async def serve(queue: str) -> None:
    """The worker process: the parking tools, ``AgentWorkflow`` and ``ParkedFloorWorkflow``, until SIGTERM."""
    await serve_worker(queue, PARKING_TOOLS, [ParkedFloorWorkflow])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="runs of each kind to park")
    parser.add_argument("--cache", type=int, default=100, help="the worker's max_cached_workflows")
    parser.add_argument("--approve", type=int, default=30, help="runs of each kind approved, cached and evicted")
    parser.add_argument("--serve", metavar="QUEUE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return
    if args.cache // 2 < args.approve or args.runs - args.cache < args.approve:
        parser.error("need --approve <= --cache / 2 (cached ones) and <= --runs - --cache (evicted ones)")
    asyncio.run(measure(args.runs, args.cache, args.approve))


if __name__ == "__main__":
    main()

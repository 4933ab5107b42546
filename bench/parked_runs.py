"""Parked runs: many runs waiting for approval at once on one worker process: how fast they start
and park (and where a park's time goes), the worker's memory as they pile up, approval latency
while the rest stay parked (evicted runs included), and how fast they drain once all are approved.

    .venv/bin/python -m bench.parked_runs [--runs 5000] [--approve 60] [--cache N] [--persisted]

A headless dev stack (``bench_stack``), the scripted model (loopback, labelled as such) and
``python worker.py --tools bench.parking.PARKING_TOOLS`` in its own process, whose RSS is read
from ``/proc/<pid>/status`` (VmRSS) and CPU from ``/proc/<pid>/stat``. Each run asks for one
``stamp`` call that ``DurableConfirmationStrategy(AlwaysAskPolicy())`` parks; "parked" =
visibility lists it by ``AgentWaitingForApproval`` (so the park time includes visibility lag).
Starts go ``CONCURRENCY`` at a time. The worker's workflow cache is its default
(``runtime.worker.DEFAULT_MAX_CACHED_WORKFLOWS``) unless ``--cache`` sets
``AGENT_MAX_CACHED_WORKFLOWS``; with more runs parked than the cache holds, the least recently
used (the earliest parked) are evicted.

Where a park's time goes: the workflow-task and activity spans of a sample of runs, from their
history timestamps (median over the sample), and worker and server CPU per parked run.

Approval latency: ``AgentRunHandle.confirm`` sent -> the tool starting in the worker process (its
wall-clock stamp; same machine), one run at a time, ``--approve`` runs spread over the parked
ones while the others stay parked. Whether the worker still cached a run is read from its own
``temporal_sticky_cache_miss`` counter (Prometheus), before and after each approval: the server
sends the Update's task to the worker's sticky queue either way, and a worker that no longer
caches the run fetches its history and replays it within that task. Drain: confirm all the
rest (``CONCURRENCY`` Updates in flight) and wait for every run to finish.

Default ``--runs``: 5,000, about the most that fits in 10 minutes on this machine (2 cores shared
with other work: ~27 runs/s parked, ~22 runs/s drained; ``--runs 10000``, the issue's target,
takes about 14 minutes). ``bench.evicted_approval`` puts the approval latency next to a bare
workflow's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from temporalio.api.enums.v1 import EventType

from bench.common import percentile
from bench.parking import CONCURRENCY, ParkingLot, approval_task_ms, bounded, cpu_seconds, parking_lot, read_stamps
from runtime.worker import DEFAULT_MAX_CACHED_WORKFLOWS, MAX_CACHED_WORKFLOWS_ENV

#: Runs are parked in batches of this many, RSS read after each (the issue's "at 1k", then every 1k).
FIRST_BATCH = 1_000
#: Runs whose histories give the park spans.
SPAN_SAMPLE = 40


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _ms_line(name: str, seconds: list[float]) -> str:
    if not seconds:
        return f"  {name:<44} (none)"
    ms = sorted(s * 1000 for s in seconds)
    return (
        f"  {name:<44} p50 {percentile(ms, 50):7.1f} ms   p95 {percentile(ms, 95):7.1f} ms   "
        f"max {ms[-1]:7.1f} ms (n={len(ms)})"
    )


def _ms(event) -> float:
    return event.event_time.ToMilliseconds()


async def park_spans(lot: ParkingLot, run_ids: list[str]) -> dict[str, float]:
    """Median ms of each step from the start to the park (the memo published), over ``run_ids``."""
    spans: dict[str, list[float]] = {}
    for run_id in run_ids:
        history = await lot.client.get_workflow_handle(run_id).fetch_history()
        events = list(history.events)
        start = _ms(events[0])
        pending: dict[int, tuple[str, float]] = {}
        wft = activity = 0
        for event in events:
            kind = event.event_type
            if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
                wft += 1
                pending[event.event_id] = (f"workflow task {wft}", _ms(event))
            elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                activity += 1
                name = event.activity_task_scheduled_event_attributes.activity_type.name
                pending[event.event_id] = (f"activity {activity} ({name})", _ms(event))
            elif kind in (EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED):
                attrs = (
                    event.workflow_task_started_event_attributes
                    if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED
                    else event.activity_task_started_event_attributes
                )
                label, scheduled = pending[attrs.scheduled_event_id]
                spans.setdefault(f"{label}: queued", []).append(_ms(event) - scheduled)
                pending[event.event_id] = (label, _ms(event))
            elif kind in (EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED):
                attrs = (
                    event.workflow_task_completed_event_attributes
                    if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
                    else event.activity_task_completed_event_attributes
                )
                label, started = pending[attrs.started_event_id]
                spans.setdefault(f"{label}: ran", []).append(_ms(event) - started)
            elif kind == EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:  # the memo: parked
                spans.setdefault("start -> parked (memo published)", []).append(_ms(event) - start)
                break
    return {f"{label} (n={len(values)})": statistics.median(values) for label, values in spans.items()}


async def measure(runs: int, approve: int, cache: int | None, persisted: bool) -> None:
    approve = min(approve, runs)
    cache_size = DEFAULT_MAX_CACHED_WORKFLOWS if cache is None else cache
    worker_env = {} if cache is None else {MAX_CACHED_WORKFLOWS_ENV: str(cache)}
    load_before = _load()
    t_bench = time.perf_counter()
    async with parking_lot(runs, worker_env=worker_env, persisted=persisted) as lot:
        server_pid = lot.server.pid
        assert server_pid is not None
        await asyncio.sleep(1.0)
        rss = {"idle (worker ready, no run)": lot.worker_rss_mib()}
        batches = [min(FIRST_BATCH, runs - done) for done in range(0, runs, FIRST_BATCH)]
        start_s = park_s = 0.0
        worker_cpu0, server_cpu0 = cpu_seconds(lot.worker_pid), cpu_seconds(server_pid)
        for size in batches:
            s, p = await lot.park(size)
            start_s, park_s = start_s + s, park_s + p
            await asyncio.sleep(1.0)  # let the worker settle (cache, GC) before reading
            rss[f"{len(lot.run_ids):,} parked"] = lot.worker_rss_mib()
        park_cpu = (cpu_seconds(lot.worker_pid) - worker_cpu0, cpu_seconds(server_pid) - server_cpu0)
        load_parked = _load()
        spans = await park_spans(lot, lot.run_ids[:: max(1, runs // SPAN_SAMPLE)][:SPAN_SAMPLE])

        t0 = time.perf_counter()
        call_ids = await lot.pending_call_ids()
        listing_s = time.perf_counter() - t0
        missing = set(lot.run_ids) - set(call_ids)
        if missing:
            raise RuntimeError(f"{len(missing)} parked runs not in the waiting listing")

        # approval latency, one at a time, the others parked
        step = max(1, runs // approve) if approve else 1
        chosen = lot.run_ids[::step][:approve]
        sent: dict[str, float] = {}
        update_rtt: dict[str, float] = {}
        evicted: list[str] = []
        for run_id in chosen:
            handle = lot.handle(run_id)
            misses = lot.cache_misses()
            t_send = time.time()
            await handle.confirm(call_ids[run_id], approver="bench")
            update_rtt[run_id] = time.time() - t_send
            sent[run_id] = t_send
            await handle.result()
            if lot.cache_misses() > misses:  # the Update's task found the run evicted
                evicted.append(run_id)
        stamps = read_stamps(lot.stamps_file)
        task_ms = {run_id: await approval_task_ms(lot.client, run_id) for run_id in chosen}
        rss[f"after {len(chosen)} approved ({runs - len(chosen):,} parked)"] = lot.worker_rss_mib()

        # drain: approve every other run
        rest = [r for r in lot.run_ids if r not in sent]

        async def approve_and_finish(run_id: str) -> bool:
            handle = lot.handle(run_id)
            await handle.confirm(call_ids[run_id], approver="bench")
            try:
                await handle.result()
                return True
            except Exception:
                return False

        worker_cpu0 = cpu_seconds(lot.worker_pid)
        t0 = time.perf_counter()
        done = await bounded(approve_and_finish(r) for r in rest)
        drain_s = time.perf_counter() - t0
        drain_cpu = cpu_seconds(lot.worker_pid) - worker_cpu0
        failures = done.count(False)
        await asyncio.sleep(1.0)
        rss["after drain (0 parked)"] = lot.worker_rss_mib()
    total_s = time.perf_counter() - t_bench

    print(
        f"Parked runs on the Temporal dev server ({'SQLite file, moto S3' if persisted else 'in memory'}), "
        f"{datetime.now(UTC):%Y-%m-%d}: {runs:,} runs, "
        f"one worker process (workflow cache {cache_size:,}), 2 shared cores;"
    )
    print(f"model: scripted, loopback; {CONCURRENCY} client calls in flight. Load average before {load_before}, ")
    print(f"with all parked {load_parked}, after {_load()}; whole bench {total_s / 60:.1f} min")
    print(f"  started                                    {runs / start_s:7.1f} runs/s ({start_s:.1f} s)")
    print(f"  parked (listed as waiting)                 {runs / park_s:7.1f} runs/s ({park_s:.1f} s from first start)")
    print(
        f"  CPU per parked run                         worker {park_cpu[0] / runs * 1000:.1f} ms, "
        f"dev server {park_cpu[1] / runs * 1000:.1f} ms"
    )
    print(f"  a park, median of {SPAN_SAMPLE} runs' histories (ms):")
    for label, ms in spans.items():
        print(f"    {label:<46} {ms:8.1f}")
    print(f"  list_waiting_runs (call ids)               {len(call_ids):,} runs in {listing_s:.2f} s")
    print("  worker RSS (VmRSS):")
    base = next(iter(rss.values()))
    for label, mib in rss.items():
        print(f"    {label:<40} {mib:8.1f} MiB  ({mib - base:+.1f})")
    for label, mib in rss.items():
        parked = label.split()[0].replace(",", "")
        if parked.isdigit() and int(parked) > 0:
            print(f"    per parked run at {label:<22} {(mib - base) * 1024 / int(parked):6.1f} KiB")
    if chosen:
        to_tool = {r: stamps[r] - sent[r] for r in chosen}
        in_cache = [r for r in chosen if r not in evicted]
        print(
            f"  approval ({len(chosen)} runs spread over the parked ones, one at a time, the others parked; "
            f"{len(evicted)} evicted, {len(in_cache)} cached, by the worker's cache-miss counter):"
        )
        print(_ms_line("Update round trip (confirm), all", list(update_rtt.values())))
        print(_ms_line("Update sent -> tool started, all", list(to_tool.values())))
        for label, ids in (("evicted", evicted), ("cached", in_cache)):
            print(_ms_line(f"Update sent -> tool started, {label}", [to_tool[r] for r in ids]))
            tasks = [task_ms[r] / 1000 for r in ids if task_ms[r] is not None]
            print(_ms_line(f"  its workflow task ran (history), {label}", tasks))
    print(
        f"  drain: {len(rest):,} approved at once -> {len(rest) - failures:,} completed in {drain_s:.1f} s "
        f"= {(len(rest) - failures) / drain_s:.1f} runs/s, worker CPU {drain_cpu / max(1, len(rest)) * 1000:.1f} ms a run"
        + (f" ({failures} failed)" if failures else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5_000, help="runs to park (the issue's target: 10,000)")
    parser.add_argument("--approve", type=int, default=60, help="runs approved one at a time for the latency")
    parser.add_argument(
        "--cache",
        type=int,
        default=None,
        help=f"the worker's max_cached_workflows (default: the worker's, {DEFAULT_MAX_CACHED_WORKFLOWS})",
    )
    parser.add_argument(
        "--persisted",
        action="store_true",
        help="Temporal on a SQLite file with moto S3 (bench_stack) instead of the in-memory dev server",
    )
    args = parser.parse_args()
    if args.runs < 1 or args.approve < 0 or (args.cache is not None and args.cache < 0):
        parser.error("--runs must be >= 1, --approve and --cache >= 0")
    asyncio.run(measure(args.runs, args.approve, args.cache, args.persisted))


if __name__ == "__main__":
    main()

"""Parked runs: many runs waiting for approval at once on one worker process: how fast they start
and park, the worker's memory as they pile up, approval latency while the rest stay parked, and
how fast they drain once all are approved.

    .venv/bin/python -m bench.parked_runs [--runs 2000] [--approve 50]

A headless dev stack (``bench_stack``), the scripted model (loopback, labelled as such) and
``python worker.py --tools bench.parking.PARKING_TOOLS`` in its own process, whose RSS is read
from ``/proc/<pid>/status`` (VmRSS). Each run asks for one ``stamp`` call that
``DurableConfirmationStrategy(AlwaysAskPolicy())`` parks; "parked" = visibility lists it by
``AgentWaitingForApproval`` (so the park time includes visibility lag). Starts go
``CONCURRENCY`` at a time. Approval latency: ``AgentRunHandle.confirm`` sent -> the tool starting
in the worker process (its wall-clock stamp; same machine), one run at a time, ``--approve`` runs
spread over the parked ones while the others stay parked. Drain: confirm all the rest
(``CONCURRENCY`` Updates in flight) and wait for every run to finish.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from bench.common import percentile
from bench.parking import CONCURRENCY, bounded, parking_lot, read_stamps

#: RSS is also read once this many runs are parked (the issue's "at 1k").
FIRST_BATCH = 1_000


def _ms_line(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    return f"  {name:<38} p50 {percentile(ms, 50):7.1f} ms   p95 {percentile(ms, 95):7.1f} ms   max {ms[-1]:7.1f} ms (n={len(ms)})"


async def measure(runs: int, approve: int) -> None:
    approve = min(approve, runs)
    async with parking_lot(runs) as lot:
        await asyncio.sleep(1.0)
        rss = {"idle (worker ready, no run)": lot.worker_rss_mib()}
        batches = [min(FIRST_BATCH, runs)] + ([runs - FIRST_BATCH] if runs > FIRST_BATCH else [])
        start_s = park_s = 0.0
        for size in batches:
            s, p = await lot.park(size)
            start_s, park_s = start_s + s, park_s + p
            await asyncio.sleep(1.0)  # let the worker settle (cache, GC) before reading
            rss[f"{len(lot.run_ids):,} parked"] = lot.worker_rss_mib()

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
        update_rtt: list[float] = []
        for run_id in chosen:
            handle = lot.handle(run_id)
            t_send = time.time()
            await handle.confirm(call_ids[run_id], approver="bench")
            update_rtt.append(time.time() - t_send)
            sent[run_id] = t_send
            await handle.result()
        stamps = read_stamps(lot.stamps_file)
        to_tool = [stamps[r] - sent[r] for r in chosen]
        rss[f"after {len(chosen)} approved ({runs - len(chosen):,} parked)"] = lot.worker_rss_mib()

        # drain: approve every other run
        rest = [r for r in lot.run_ids if r not in sent]
        failures = 0

        async def approve_and_finish(run_id: str) -> bool:
            handle = lot.handle(run_id)
            await handle.confirm(call_ids[run_id], approver="bench")
            try:
                await handle.result()
                return True
            except Exception:
                return False

        t0 = time.perf_counter()
        done = await bounded(approve_and_finish(r) for r in rest)
        drain_s = time.perf_counter() - t0
        failures = done.count(False)
        await asyncio.sleep(1.0)
        rss["after drain (0 parked)"] = lot.worker_rss_mib()

    print(f"Parked runs on the Temporal dev server ({runs:,} runs, one worker process, 2 shared cores;")
    print(f"model: scripted, loopback; {CONCURRENCY} client calls in flight)")
    print(f"  started                                 {runs / start_s:7.1f} runs/s ({start_s:.1f} s)")
    print(f"  parked (listed as waiting)              {runs / park_s:7.1f} runs/s ({park_s:.1f} s from first start)")
    print(f"  list_waiting_runs (call ids)            {len(call_ids):,} runs in {listing_s:.2f} s")
    print("  worker RSS (VmRSS):")
    base = next(iter(rss.values()))
    for label, mib in rss.items():
        print(f"    {label:<36} {mib:8.1f} MiB  ({mib - base:+.1f})")
    for label, mib in rss.items():
        parked = label.split()[0].replace(",", "")
        if parked.isdigit() and int(parked) > 0:
            print(f"    per parked run at {label:<18} {(mib - base) * 1024 / int(parked):6.1f} KiB")
    if chosen:
        print(f"  approval ({len(chosen)} runs, one at a time, the others parked):")
        print(_ms_line("Update round trip (confirm)", update_rtt))
        print(_ms_line("Update sent -> tool activity started", to_tool))
    print(
        f"  drain: {len(rest):,} approved at once -> {len(rest) - failures:,} completed in {drain_s:.1f} s "
        f"= {(len(rest) - failures) / drain_s:.1f} runs/s" + (f" ({failures} failed)" if failures else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2_000, help="runs to park (the issue's target: 10,000)")
    parser.add_argument("--approve", type=int, default=50, help="runs approved one at a time for the latency")
    args = parser.parse_args()
    asyncio.run(measure(args.runs, args.approve))


if __name__ == "__main__":
    main()

"""Pending listing: ``list_waiting_runs`` over many runs waiting for approval at once (one
visibility listing; each run's pending calls come from its memo, no run is queried).

    .venv/bin/python -m bench.pending_listing [--runs 2000] [--repeat 3]

Parks ``--runs`` runs as ``bench.parked_runs`` does (``bench.parking``: dev stack, scripted model,
a worker process), waits until visibility lists all of them, then times ``list_waiting_runs`` by
the ``AgentWaitingForApproval`` search attribute and with ``use_search_attribute=False`` (every
open agent run's memo), each ``--repeat`` times (page size 1,000). The issue's target: 10,000
waiting runs listed in under 3 s.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from bench.parking import count_waiting, parking_lot
from hooks.human_in_the_loop.client import list_waiting_runs


async def measure(runs: int, repeat: int) -> None:
    async with parking_lot(runs) as lot:
        start_s, park_s = await lot.park(runs)
        t0 = time.perf_counter()
        counted = await count_waiting(lot.client)
        count_s = time.perf_counter() - t0
        results: dict[str, list[tuple[int, float]]] = {}
        for label, by_attribute in (("by search attribute", True), ("memo of every open run", False)):
            for _ in range(repeat):
                t0 = time.perf_counter()
                listed = await list_waiting_runs(lot.client, use_search_attribute=by_attribute)
                results.setdefault(label, []).append((len(listed.runs), time.perf_counter() - t0))
        worker_rss = lot.worker_rss_mib()

    print(f"list_waiting_runs on the Temporal dev server ({runs:,} runs waiting; 2 shared cores, SQLite visibility)")
    print(
        f"  parked in {park_s:.1f} s ({runs / park_s:.1f} runs/s; starts {runs / start_s:.1f} runs/s); worker RSS {worker_rss:.0f} MiB"
    )
    print(f"  count_workflows(waiting)                {counted:,} in {count_s * 1000:.0f} ms")
    for label, rows in results.items():
        times = ", ".join(f"{s:.2f}" for _, s in rows)
        counts = {n for n, _ in rows}
        best = min(s for _, s in rows)
        print(
            f"  {label:<38} listed {'/'.join(f'{n:,}' for n in sorted(counts))} in {times} s "
            f"(best {best:.2f} s, {best / max(1, runs) * 1e6:.0f} us/run; "
            f"~{best * 10_000 / max(1, runs):.1f} s per 10,000 if linear)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2_000, help="runs to park (the issue's target: 10,000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed listings of each kind")
    args = parser.parse_args()
    asyncio.run(measure(args.runs, args.repeat))


if __name__ == "__main__":
    main()

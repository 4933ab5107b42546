"""Whether a worker serves a run: the run's task queue and the pollers the server has seen on it.

A command that needs a worker (a query, an Update) asks here first, so it can say "no worker
polls task queue 'agent'" at once instead of waiting for a deadline. The server remembers a
poller for about five minutes after its last poll; a live worker polls again at least once a
minute (its long poll ends after a minute at most), so a last poll older than
:data:`LIVE_POLL_SECONDS` means the worker is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from temporalio.api.enums.v1 import TaskQueueKind, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

#: A poller seen this recently counts as a live worker (a long poll lasts a minute at most).
LIVE_POLL_SECONDS = 75.0


@dataclass(frozen=True)
class QueueWorkers:
    """What the server knows of the workers on one task queue.

    :param task_queue: The queue.
    :param pollers: How many distinct pollers the server remembers (about five minutes' worth).
    :param last_poll_seconds: Seconds since the most recent poll, None when it remembers none.
    """

    task_queue: str
    pollers: int
    last_poll_seconds: float | None

    @property
    def alive(self) -> bool:
        """Whether a worker polled recently enough to be running."""
        return self.last_poll_seconds is not None and self.last_poll_seconds <= LIVE_POLL_SECONDS

    def describe(self) -> str:
        """``no worker polls task queue 'agent' (...)`` or ``a worker polls task queue 'agent'``."""
        if self.alive:
            return f"a worker polls task queue '{self.task_queue}'"
        if self.last_poll_seconds is None:
            return f"no worker polls task queue '{self.task_queue}' (the server has seen none in the last 5 minutes)"
        return f"no worker polls task queue '{self.task_queue}' (the last poll was {self.last_poll_seconds:.0f} s ago)"


async def workers_of(client: Client, task_queue: str) -> QueueWorkers:
    """The workflow pollers of ``task_queue``, from the server's ``DescribeTaskQueue``.

    :raises temporalio.service.RPCError: When the server cannot be asked.
    """
    response = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue, kind=TaskQueueKind.TASK_QUEUE_KIND_NORMAL),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        ),
        retry=True,
    )
    now = datetime.now(UTC)
    ages = [
        (now - poller.last_access_time.ToDatetime(tzinfo=UTC)).total_seconds()
        for poller in response.pollers
        if poller.HasField("last_access_time")
    ]
    return QueueWorkers(task_queue, len(response.pollers), max(0.0, min(ages)) if ages else None)


@dataclass(frozen=True)
class RunService:
    """A run as the server describes it, with the workers of its task queue.

    :param run_id: The run (workflow id).
    :param status: Temporal's status name (``RUNNING``, ``COMPLETED``, ``FAILED``, ...).
    :param task_queue: The run's task queue.
    :param workers: What the server knows of the workers on it.
    """

    run_id: str
    status: str
    task_queue: str
    workers: QueueWorkers


async def run_service(client: Client, run_id: str) -> RunService:
    """Describe ``run_id`` and the workers of its task queue (two server calls, no worker needed).

    :raises temporalio.service.RPCError: NOT_FOUND when there is no such run.
    """
    description = await client.get_workflow_handle(run_id).describe()
    workers = await workers_of(client, description.task_queue)
    status = description.status.name if description.status else "UNKNOWN"
    return RunService(run_id, status, description.task_queue, workers)


async def why_no_worker(client: Client, run_id: str, doing: str, ended: str | None = None) -> str | None:
    """Why no worker can take ``doing`` (e.g. "the decision") for ``run_id`` now, in one sentence
    that says nothing was recorded; None when a worker polls the run's task queue.

    The reasons: no such run, the run has ended (``ended`` says what that means for ``doing``;
    default: nothing waits for it), or no worker polls its task queue.
    """
    try:
        service = await run_service(client, run_id)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        return f"No run '{run_id}' in namespace '{client.namespace}'."
    if service.status != "RUNNING":
        return f"run {run_id} is {service.status.lower()}: {ended or f'nothing waits for {doing}'}."
    if not service.workers.alive:
        return (
            f"{service.workers.describe()}, so no worker can take {doing} for run {run_id}: nothing was sent "
            f"(a worker checks {doing} before it reaches the run's history). Start a worker on "
            f"'{service.task_queue}' (`python worker.py`, or `agent dev`), then run this again."
        )
    return None

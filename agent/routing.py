"""Whether a run started on a task queue can start at all (DESIGN.md "Deploys").

A task queue served only by versioned workers routes a new run to its deployment's current (or
ramping) version; with none, the run would wait for an unversioned worker that never comes.
:func:`check_task_queue_routes_new_runs` says so before the run is started, naming the fix.
"""

from __future__ import annotations

import time
from datetime import timedelta

from temporalio.api.enums.v1 import TaskQueueType, WorkerVersioningMode
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from core.settings import ConfigurationError

#: How long a task queue found able to route new runs is not asked again (per client).
ROUTABLE_FOR_SECONDS = 30.0

_routable_until: dict[tuple[int, str], float] = {}


class NoCurrentVersionError(ConfigurationError):
    """The task queue is served only by versioned workers and their deployment has no current version."""


async def check_task_queue_routes_new_runs(client: Client, task_queue: str) -> None:
    """Refuse to start a run that no worker would pick up because of versioning.

    One DescribeTaskQueue (with its pollers) at most every :data:`ROUTABLE_FOR_SECONDS` per client
    and task queue. A queue with no pollers at all passes (its workers may start later).

    :raises NoCurrentVersionError: Every worker polling ``task_queue`` is versioned and the queue
        has neither a current nor a ramping version; the message names the builds and the command.
    """
    key = (id(client), task_queue)
    if _routable_until.get(key, 0.0) > time.monotonic():
        return
    try:
        described = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
                report_pollers=True,
            ),
            timeout=timedelta(seconds=10),
        )
    except RPCError as err:
        if err.status != RPCStatusCode.UNIMPLEMENTED:
            raise
        # A server without task-queue descriptions (Temporal's time-skipping test server) has no
        # Worker Versioning either: every run is routable there.
        _routable_until[key] = float("inf")
        return
    info = described.versioning_info
    has_target = info.HasField("current_deployment_version") or info.HasField("ramping_deployment_version")
    mode = WorkerVersioningMode.WORKER_VERSIONING_MODE_VERSIONED
    only_versioned = bool(described.pollers) and all(
        p.deployment_options.worker_versioning_mode == mode for p in described.pollers
    )
    versioned = {(p.deployment_options.deployment_name, p.deployment_options.build_id) for p in described.pollers}
    if has_target or (described.pollers and not only_versioned):
        _routable_until[key] = time.monotonic() + ROUTABLE_FOR_SECONDS
        return
    if not described.pollers:  # not cached: versioned workers may be about to poll
        return
    builds = ", ".join(f"{name} build {build}" for name, build in sorted(versioned))
    first_name, first_build = sorted(versioned)[0]
    raise NoCurrentVersionError(
        f"Task queue {task_queue!r} is served only by versioned workers ({builds}) and their deployment has no "
        "current version, so a run started now would never be picked up. Make a build current first: "
        f'`agent deploy promote {first_build} --deployment {first_name}` (docs/operations.md, "Deploys").'
    )


async def check_start_or_send_routes(client: Client, task_queue: str, run_id: str) -> None:
    """:func:`check_task_queue_routes_new_runs` for start-or-send: a message to a running run
    ``run_id`` goes to that run's own build, so only a call that would start a run is refused.

    :raises NoCurrentVersionError: As :func:`check_task_queue_routes_new_runs`, when run ``run_id``
        is not running.
    """
    try:
        await check_task_queue_routes_new_runs(client, task_queue)
    except NoCurrentVersionError:
        try:
            running = (await client.get_workflow_handle(run_id).describe()).status == WorkflowExecutionStatus.RUNNING
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            running = False
        if not running:
            raise

"""``agent deploy``: a Worker Deployment's versions and the runs pinned to them, promoting a build,
and moving a parked run to another build (DESIGN.md "Deploys", docs/operations.md).

Everything here goes through Temporal's own Worker Deployment operations (DescribeWorkerDeployment,
SetWorkerDeploymentCurrentVersion / RampingVersion, UpdateWorkflowExecutionOptions) and its
visibility (the ``TemporalWorkerDeploymentVersion`` search attribute the server sets on every
versioned run).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from google.protobuf.field_mask_pb2 import FieldMask
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.deployment.v1 import WorkerDeploymentVersion as VersionProto
from temporalio.api.enums.v1 import VersionDrainageStatus, WorkerDeploymentVersionStatus
from temporalio.api.workflow.v1 import VersioningOverride, WorkflowExecutionOptions
from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    ListWorkerDeploymentsRequest,
    SetWorkerDeploymentCurrentVersionRequest,
    SetWorkerDeploymentRampingVersionRequest,
    UpdateWorkflowExecutionOptionsRequest,
)
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.common import PinnedVersioningOverride, WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode

from core.deploys import REPLAY_PROBE_ID_PREFIX, REPLAY_PROBE_WORKFLOW, ReplayProbeInput, ReplayProbeResult
from core.settings import get_settings
from core.wire import RUNNING_RUNS_QUERY, WAITING_FOR_USER_ATTRIBUTE
from hooks.human_in_the_loop.wire import WAITING_FOR_APPROVAL

#: The search attribute Temporal sets to a versioned run's ``deployment:build``.
VERSION_ATTRIBUTE = "TemporalWorkerDeploymentVersion"
#: How long ``move`` waits for a worker of the target build to replay the run.
DEFAULT_PROBE_TIMEOUT = timedelta(seconds=60)


class DeployError(RuntimeError):
    """A deploy operation that cannot go ahead; the message says why and what to do."""


class MoveRefused(DeployError):
    """``move`` left the run where it was: it does not replay on the target build, or no worker of
    that build answered, or the run is not open."""


def version_query(deployment: str, build_id: str) -> str:
    """The visibility condition of runs whose current version is ``build_id`` of ``deployment``."""
    return f"{VERSION_ATTRIBUTE} = '{deployment}:{build_id}'"


@dataclass
class VersionStatus:
    """One build of a deployment, as ``agent deploy status`` shows it.

    :param build_id: The build id.
    :param role: ``current``, ``ramping`` (with ``ramp_percentage``) or ``-``.
    :param temporal_status: Temporal's status of the version (``inactive``, ``current``,
        ``ramping``, ``draining``, ``drained``); its drainage is refreshed every few minutes by default.
    :param open_runs: Open agent runs pinned to it (visibility; a second or so behind).
    :param waiting_for_approval: Of those, runs waiting for an approval.
    :param waiting_for_user: Of those, sessions waiting for their user.
    :param drained: Neither current nor ramping, and no open run on it: its workers may stop.
    """

    build_id: str
    role: str
    temporal_status: str
    open_runs: int
    waiting_for_approval: int
    waiting_for_user: int
    drained: bool
    ramp_percentage: float | None = None


@dataclass
class DeploymentStatus:
    """A deployment's versions (newest first) and what is routed where."""

    deployment: str
    current_build_id: str | None
    ramping_build_id: str | None
    ramp_percentage: float | None
    versions: list[VersionStatus] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


async def deployment_name(client: Client, deployment: str | None) -> str:
    """``deployment``, else ``AGENT_DEPLOYMENT_NAME``, else the namespace's only deployment.

    :raises DeployError: None given or set, and the namespace has no deployment or several.
    """
    if deployment:
        return deployment
    if get_settings().deployment_name:
        return get_settings().deployment_name  # type: ignore[return-value]
    listed = await client.workflow_service.list_worker_deployments(
        ListWorkerDeploymentsRequest(namespace=client.namespace, page_size=100)
    )
    names = sorted(d.name for d in listed.worker_deployments)
    if len(names) == 1:
        return names[0]
    if not names:
        raise DeployError(
            f"Namespace {client.namespace!r} has no Worker Deployment yet: start versioned workers "
            "(python worker.py --deployment-name NAME --build-id ID) first."
        )
    raise DeployError(f"Namespace {client.namespace!r} has several deployments ({', '.join(names)}); name one.")


def _status_name(status: int, enum: type, prefix: str) -> str:
    return enum.Name(status).removeprefix(prefix).lower()  # type: ignore[attr-defined]


async def _count(client: Client, query: str) -> int:
    return (await client.count_workflows(query)).count


async def deployment_status(client: Client, deployment: str | None = None) -> DeploymentStatus:
    """Each version of ``deployment`` with the open runs pinned to it (see :class:`VersionStatus`).

    :raises DeployError: As :func:`deployment_name`, or the deployment does not exist.
    """
    name = await deployment_name(client, deployment)
    try:
        described = await client.workflow_service.describe_worker_deployment(
            DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=name)
        )
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise DeployError(f"No Worker Deployment {name!r} in namespace {client.namespace!r}.") from err
        raise
    info = described.worker_deployment_info
    routing = info.routing_config
    current = routing.current_deployment_version.build_id if routing.HasField("current_deployment_version") else None
    ramping = routing.ramping_deployment_version.build_id if routing.HasField("ramping_deployment_version") else None
    status = DeploymentStatus(name, current, ramping, routing.ramping_version_percentage if ramping else None)
    summaries = sorted(info.version_summaries, key=lambda v: v.create_time.ToDatetime(), reverse=True)
    for summary in summaries:
        build = summary.deployment_version.build_id
        runs = f"{RUNNING_RUNS_QUERY} AND {version_query(name, build)}"
        open_runs = await _count(client, runs)
        approvals = await _count(client, f"{runs} AND {WAITING_FOR_APPROVAL.name} = true") if open_runs else 0
        users = await _count(client, f"{runs} AND {WAITING_FOR_USER_ATTRIBUTE} = true") if open_runs else 0
        role = "current" if build == current else "ramping" if build == ramping else "-"
        temporal = _status_name(summary.status, WorkerDeploymentVersionStatus, "WORKER_DEPLOYMENT_VERSION_STATUS_")
        if summary.status == WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_UNSPECIFIED:
            temporal = _status_name(summary.drainage_status, VersionDrainageStatus, "VERSION_DRAINAGE_STATUS_")
        status.versions.append(
            VersionStatus(
                build_id=build,
                role=role,
                temporal_status=temporal,
                open_runs=open_runs,
                waiting_for_approval=approvals,
                waiting_for_user=users,
                drained=role == "-" and open_runs == 0,
                ramp_percentage=status.ramp_percentage if role == "ramping" else None,
            )
        )
    return status


async def promote(client: Client, build_id: str, deployment: str | None = None, ramp: float | None = None) -> str:
    """Make ``build_id`` the deployment's current version, or ramp ``ramp`` percent of new runs to it.

    :returns: What was done, in one line.
    :raises ValueError: For a ``ramp`` outside 0-100.
    :raises DeployError: As :func:`deployment_name`, or Temporal refused (typically: no worker of
        that build has polled yet), with Temporal's reason.
    """
    if ramp is not None and not 0 <= ramp <= 100:
        raise ValueError(f"--ramp must be a percentage from 0 to 100, got {ramp}.")
    name = await deployment_name(client, deployment)
    identity = f"agent deploy promote ({client.identity})"
    try:
        if ramp is None:
            await client.workflow_service.set_worker_deployment_current_version(
                SetWorkerDeploymentCurrentVersionRequest(
                    namespace=client.namespace, deployment_name=name, build_id=build_id, identity=identity
                )
            )
            return f"build {build_id} is now the current version of deployment {name}: new runs start on it"
        await client.workflow_service.set_worker_deployment_ramping_version(
            SetWorkerDeploymentRampingVersionRequest(
                namespace=client.namespace, deployment_name=name, build_id=build_id, percentage=ramp, identity=identity
            )
        )
        return f"build {build_id} of deployment {name} now gets {ramp:g}% of new runs (ramping)"
    except RPCError as err:
        if err.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION, RPCStatusCode.INVALID_ARGUMENT):
            raise DeployError(
                f"Temporal refused to promote build {build_id} of deployment {name}: {err.message}. Its workers must "
                f"be polling first: python worker.py --deployment-name {name} --build-id {build_id}."
            ) from err
        raise


@dataclass
class Moved:
    """What :func:`move` did: run ``run_id`` (Temporal run ``temporal_run_id``) moved from build
    ``from_build_id`` to ``to_build_id`` after a worker of that build replayed its ``events`` events."""

    run_id: str
    temporal_run_id: str
    deployment: str
    from_build_id: str | None
    to_build_id: str
    events: int


async def move(
    client: Client,
    run_id: str,
    to_build_id: str,
    deployment: str | None = None,
    probe_timeout: timedelta = DEFAULT_PROBE_TIMEOUT,
) -> Moved:
    """Pin an open run to build ``to_build_id`` (Temporal's versioning override), only after a worker
    of that build has replayed the run's history with its own code.

    The replay runs in a replay probe (``core/deploys.py``) pinned to the target build on the run's
    task queue, so the code that answers is the code the run would move to.

    :raises MoveRefused: The run is not open, is already on that build, no worker of that build
        answered within ``probe_timeout``, or its replay failed (the message names the first mismatch).
    :raises DeployError: As :func:`deployment_name`.
    """
    described = await client.get_workflow_handle(run_id).describe()
    if described.status != WorkflowExecutionStatus.RUNNING:
        status = described.status.name.lower() if described.status else "unknown"
        raise MoveRefused(f"Run {run_id} is {status}; only an open run can move.")
    versioning = described.raw_description.workflow_execution_info.versioning_info
    pinned = versioning.deployment_version if versioning.HasField("deployment_version") else None
    name = deployment or (pinned.deployment_name if pinned else None) or await deployment_name(client, None)
    from_build = pinned.build_id if pinned else None
    if from_build == to_build_id:
        raise MoveRefused(f"Run {run_id} is already on build {to_build_id} of deployment {name}.")
    temporal_run_id = described.run_id or ""
    target = WorkerDeploymentVersion(name, to_build_id)
    try:
        result: ReplayProbeResult = await client.execute_workflow(
            REPLAY_PROBE_WORKFLOW,
            ReplayProbeInput(run_id=run_id, temporal_run_id=temporal_run_id),
            id=f"{REPLAY_PROBE_ID_PREFIX}{run_id}/{uuid.uuid4().hex[:12]}",
            task_queue=described.task_queue,
            versioning_override=PinnedVersioningOverride(target),
            execution_timeout=probe_timeout,
            result_type=ReplayProbeResult,
        )
    except RPCError as err:  # the build is not a version of the deployment, typically
        raise MoveRefused(
            f"Run {run_id} stays on build {from_build}: Temporal refused a replay on build {to_build_id} of "
            f"deployment {name}: {err.message}"
        ) from err
    except WorkflowFailureError as err:
        raise MoveRefused(
            f"Run {run_id} stays on build {from_build}: no worker of build {to_build_id} of deployment {name} on task "
            f"queue {described.task_queue!r} replayed its history within {probe_timeout.total_seconds():g} s "
            f"({err.cause or err}). Start that build's workers (python worker.py --deployment-name {name} "
            f"--build-id {to_build_id}) and try again."
        ) from err
    if result.mismatch is not None:
        raise MoveRefused(
            f"Run {run_id} stays on build {from_build}: build {to_build_id}'s code does not replay its history "
            f"({result.events} events): {result.mismatch}"
        )
    await client.workflow_service.update_workflow_execution_options(
        UpdateWorkflowExecutionOptionsRequest(
            namespace=client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=run_id, run_id=temporal_run_id),
            workflow_execution_options=WorkflowExecutionOptions(
                versioning_override=VersioningOverride(
                    pinned=VersioningOverride.PinnedOverride(
                        behavior=VersioningOverride.PinnedOverrideBehavior.PINNED_OVERRIDE_BEHAVIOR_PINNED,
                        version=VersionProto(deployment_name=name, build_id=to_build_id),
                    )
                )
            ),
            update_mask=FieldMask(paths=["versioning_override"]),
            identity=f"agent deploy move ({client.identity})",
        )
    )
    return Moved(run_id, temporal_run_id, name, from_build, to_build_id, result.events)


async def promote_if_none_current(client: Client, build_id: str, deployment: str, timeout: float = 30.0) -> str | None:
    """Make ``build_id`` current when ``deployment`` has no current version yet (``agent dev``'s
    first start), retrying while the server registers the build's first poll.

    :returns: What was done, or None when another build is already current (it is left alone).
    :raises DeployError: Temporal still refuses after ``timeout`` seconds.
    """
    give_up_at = time.monotonic() + timeout
    while True:
        try:
            described = await client.workflow_service.describe_worker_deployment(
                DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=deployment)
            )
            if described.worker_deployment_info.routing_config.HasField("current_deployment_version"):
                return None
            return await promote(client, build_id, deployment)
        except (DeployError, RPCError):
            if time.monotonic() > give_up_at:
                raise
            await asyncio.sleep(0.5)

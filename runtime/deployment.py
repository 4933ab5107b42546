"""Which Worker Deployment Version a worker is (DESIGN.md "Deploys"): ``--deployment-name`` and
``--build-id``, ``create_worker(deployment_name=, build_id=)`` or ``AGENT_DEPLOYMENT_NAME`` and
``AGENT_BUILD_ID``. Both, or neither (an unversioned worker, as before)."""

from __future__ import annotations

import dataclasses

from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

from core.settings import ConfigurationError, get_settings


def deployment_config(deployment_name: str | None = None, build_id: str | None = None) -> WorkerDeploymentConfig | None:
    """The worker's deployment version: each argument, else its setting.

    Workflows without a versioning behaviour of their own (a caller's ``extra_workflows``) are
    pinned, as ``AgentWorkflow`` is: a run finishes on the build it started on.

    :param deployment_name: The Worker Deployment (no ``.`` in it: Temporal's version strings
        are ``name.build``).
    :param build_id: This worker's build id within it.
    :returns: None for an unversioned worker (neither given nor set).
    :raises core.settings.ConfigurationError: A name without a build id or the reverse, blank
        values, or a name with a ``.``; the message names the options and variables.
    """
    settings = get_settings()
    deployment_name = settings.deployment_name if deployment_name is None else deployment_name
    build_id = settings.build_id if build_id is None else build_id
    where = "a deployment name (--deployment-name, AGENT_DEPLOYMENT_NAME) and a build id (--build-id, AGENT_BUILD_ID)"
    if deployment_name is None and build_id is None:
        return None
    if not deployment_name or not build_id or not deployment_name.strip() or not build_id.strip():
        given, missing = ("a deployment name", "build id") if deployment_name else ("a build id", "deployment name")
        raise ConfigurationError(
            f"Worker versioning needs both {where}: {given} was given without a {missing}. "
            "Give both to make this worker a version of a Worker Deployment, or neither for an unversioned worker."
        )
    if "." in deployment_name:
        raise ConfigurationError(
            f"Deployment name {deployment_name!r} has a '.'; Temporal's version strings are NAME.BUILD_ID, "
            "so a deployment name must not contain one."
        )
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment_name.strip(), build_id.strip()),
        use_worker_versioning=True,
        default_versioning_behavior=VersioningBehavior.PINNED,
    )


def pinned_by_default(config: WorkerDeploymentConfig | None) -> WorkerDeploymentConfig | None:
    """``config`` with PINNED as the default versioning behaviour when it uses versioning and names
    none. The behaviour is the workers' default rather than ``AgentWorkflow``'s own annotation
    because the server refuses a workflow task completed with a behaviour by an unversioned worker."""
    if config is None or not config.use_worker_versioning:
        return config
    if config.default_versioning_behavior != VersioningBehavior.UNSPECIFIED:
        return config
    return dataclasses.replace(config, default_versioning_behavior=VersioningBehavior.PINNED)

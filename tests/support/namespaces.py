"""A namespace of a test's own on the session's Temporal server."""

from __future__ import annotations

import uuid

from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from agent import connect
from tests.support.polling import eventually

_TRANSIENT = (RPCStatusCode.CANCELLED, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.UNAVAILABLE)


async def register_namespace(client: Client, prefix: str) -> str:
    """Register a namespace named ``prefix-<random>`` (one day's retention) and wait until it answers.

    :param client: A client of the server to register it on.
    :param prefix: The start of the name, saying which test it belongs to.
    :returns: The namespace's name.
    :raises AssertionError: When the namespace is still not usable after 30 s.
    """
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    request = RegisterNamespaceRequest(namespace=name, workflow_execution_retention_period=Duration(seconds=86400))
    for attempt in range(3):
        try:
            await client.workflow_service.register_namespace(request)
            break
        except RPCError as err:
            # A busy dev server can cancel the call after registering it; the retry then finds it.
            if attempt > 0 and err.status == RPCStatusCode.ALREADY_EXISTS:
                break
            if attempt == 2 or err.status not in _TRANSIENT:
                raise
    registered = await connect(client.service_client.config.target_host, name)
    # a new namespace refuses calls for a moment after it is registered
    await eventually(
        registered.count_workflows,
        lambda _: True,
        interval=0.1,
        ignoring=(RPCError,),
        message=f"namespace {name} never became usable",
    )
    return name

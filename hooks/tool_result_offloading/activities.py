"""The offloading family's I/O from the workflow: the ``store_tool_result`` activity and the
workflow-side call to it.

``ToolResultOffloadHook`` decides in its turn which results to offload and awaits
:func:`store_result` for each; the activity rebuilds the store from its descriptor on the worker
and writes with ``activities.tool_invocation.write_to_store`` (the same write the tool activity
makes when it offloads a result itself).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from activities.tool_invocation import (
    DEFAULT_WRITE_DEADLINE,
    WRITE_RETRY_INITIAL_SECONDS,
    WRITE_RETRY_MAX_SECONDS,
    write_to_store,
)

#: Activity name (part of the wire contract between workflows and workers).
STORE_TOOL_RESULT_ACTIVITY = "store_tool_result"
#: ``ApplicationError.type`` of store failures retrying cannot fix (bad key, another run's reference).
NON_RETRYABLE_STORE_ERROR = "ToolResultStoreRefused"

STORE_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=WRITE_RETRY_INITIAL_SECONDS),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=WRITE_RETRY_MAX_SECONDS),
    non_retryable_error_types=[NON_RETRYABLE_STORE_ERROR],
)


class StoreToolResultInput(BaseModel):
    """Input of ``store_tool_result``.

    :param store: The store descriptor (``store.to_dict()``, already scoped to the run).
    :param key: The result's key in the store.
    :param content: The result text.
    """

    store: dict[str, Any]
    key: str
    content: str


@activity.defn(name=STORE_TOOL_RESULT_ACTIVITY)
async def store_tool_result(request: StoreToolResultInput) -> str:
    """Write one result; returns its reference. A bad key is not retried; I/O errors are."""
    try:
        return await write_to_store(request.store, request.key, request.content)
    except ValueError as exc:
        raise ApplicationError(str(exc), type=NON_RETRYABLE_STORE_ERROR, non_retryable=True) from exc


async def store_result(request: StoreToolResultInput, deadline: timedelta = DEFAULT_WRITE_DEADLINE) -> str:
    """Workflow side: run ``store_tool_result``, retried with backoff until ``deadline`` (a refused
    key is not retried).

    :raises temporalio.exceptions.ActivityError: When the deadline passed or the key was refused.
    """
    return await workflow.execute_activity(
        store_tool_result,
        request,
        start_to_close_timeout=min(timedelta(minutes=5), deadline),
        schedule_to_close_timeout=deadline,
        retry_policy=STORE_RETRY_POLICY,
        summary=f"offload {request.key}",
    )

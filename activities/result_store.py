"""Writing one result to a store from a workflow: the ``store_tool_result`` activity and the
workflow-side call to it.

Two hook families move results out of the conversation from the workflow: the offloading
family (``ToolResultOffloadHook``) and the compaction family (``ToolResultOffloadCompactor``).
Both await :func:`store_result` for each result; the activity rebuilds the store from its
descriptor on the worker and writes with :func:`activities.tool_invocation.write_to_store` (the
same write the tool activity makes when it offloads a result itself). The worker registers the
activity with the run loop's own (``runtime/plugin.py``).
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


class StoreResultInput(BaseModel):
    """Input of ``store_tool_result``.

    :param store: The store descriptor (``store.to_dict()``, already scoped to the run).
    :param key: The result's key in the store.
    :param content: The result text.
    """

    store: dict[str, Any]
    key: str
    content: str


@activity.defn(name=STORE_TOOL_RESULT_ACTIVITY)
async def store_tool_result(request: StoreResultInput) -> str:
    """Write one result; returns its reference.

    :raises temporalio.exceptions.ApplicationError: Non-retryable, of type
        ``NON_RETRYABLE_STORE_ERROR``, when the store refuses the key; I/O errors are retried.
    """
    try:
        return await write_to_store(request.store, request.key, request.content)
    except ValueError as exc:
        raise ApplicationError(str(exc), type=NON_RETRYABLE_STORE_ERROR, non_retryable=True) from exc


async def store_result(
    request: StoreResultInput, deadline: timedelta = DEFAULT_WRITE_DEADLINE, summary: str | None = None
) -> str:
    """Workflow side: run ``store_tool_result``, retried with backoff until ``deadline`` (a refused
    key is not retried).

    :param request: The store descriptor, key and text to write.
    :param deadline: How long the write may take, retries included.
    :param summary: The activity's summary in the UI; by default ``offload <key>``.
    :raises temporalio.exceptions.ActivityError: When the deadline passed or the key was refused.
    """
    return await workflow.execute_activity(
        store_tool_result,
        request,
        start_to_close_timeout=min(timedelta(minutes=5), deadline),
        schedule_to_close_timeout=deadline,
        retry_policy=STORE_RETRY_POLICY,
        summary=summary if summary is not None else f"offload {request.key}",
    )

"""The compaction family's I/O: the ``store_compacted_result`` activity, which
``ToolResultOffloadCompactor`` awaits (through :func:`store_compacted`) for each result it moves
out of the conversation. The write is ``activities.tool_invocation.write_to_store``, the same one
the tool activity and the offloading family make.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from activities.tool_invocation import WRITE_RETRY_INITIAL_SECONDS, WRITE_RETRY_MAX_SECONDS, write_to_store

#: Activity name (part of the wire contract between workflows and workers).
STORE_COMPACTED_RESULT_ACTIVITY = "store_compacted_result"
#: ``ApplicationError.type`` of a write retrying cannot fix (a key the store refuses).
COMPACTED_RESULT_REFUSED = "CompactedResultRefused"

COMPACTION_STORE_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=WRITE_RETRY_INITIAL_SECONDS),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=WRITE_RETRY_MAX_SECONDS),
    non_retryable_error_types=[COMPACTED_RESULT_REFUSED],
)


class StoreCompactedResultInput(BaseModel):
    """Input of ``store_compacted_result``.

    :param store: The store descriptor (``store.to_dict()``, already scoped to the run).
    :param key: The result's key in the store.
    :param content: The result text.
    """

    store: dict[str, Any]
    key: str
    content: str


@activity.defn(name=STORE_COMPACTED_RESULT_ACTIVITY)
async def store_compacted_result(request: StoreCompactedResultInput) -> str:
    """Write one result; returns its reference. A refused key is not retried; I/O errors are."""
    try:
        return await write_to_store(request.store, request.key, request.content)
    except ValueError as exc:
        raise ApplicationError(str(exc), type=COMPACTED_RESULT_REFUSED, non_retryable=True) from exc


async def store_compacted(request: StoreCompactedResultInput, deadline: timedelta) -> str:
    """Workflow side: run ``store_compacted_result``, retried with backoff until ``deadline``.

    :raises temporalio.exceptions.ActivityError: When the deadline passed or the key was refused.
    """
    return await workflow.execute_activity(
        store_compacted_result,
        request,
        start_to_close_timeout=min(timedelta(minutes=5), deadline),
        schedule_to_close_timeout=deadline,
        retry_policy=COMPACTION_STORE_RETRY_POLICY,
        summary=f"compaction: offload {request.key}",
    )

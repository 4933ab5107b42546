"""The I/O home of tool-result offloading: keys, the pointer text, the offload instruction, and
every write to a ``ToolResultStore``.

Two routes reach the store, and both end in :func:`write_to_store`:

- the ``store_tool_result`` activity, which ``ToolResultOffloadHook`` awaits from the workflow
  (:func:`store_result`) after deciding in its turn;
- :func:`offload_in_activity`, which the tool activity calls when the workflow handed it an
  :class:`OffloadInstruction`, so a big result goes to the store and never enters history.

Stores travel as descriptors (``store.to_dict()``) and are rebuilt here, on the worker.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from core.serialization import object_from_dict
from core.wire import NON_RETRYABLE_STORE_ERROR, STORE_TOOL_RESULT_ACTIVITY

#: Meta key marking an offloaded tool-result message; its value is the list of references written.
OFFLOADED_META_KEY = "tool_result_offloaded"

STORE_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=5,
    non_retryable_error_types=[NON_RETRYABLE_STORE_ERROR],
)


def encode_key_segment(value: str) -> str:
    """Percent-encode ``value`` into one path segment (no ``/``), so distinct values stay distinct.

    :raises ValueError: If ``value`` is empty, ``.`` or ``..``.
    """
    if value in ("", ".", ".."):
        raise ValueError(f"{value!r} cannot be used as a key segment.")
    return quote(value, safe="")


def result_key(step: int, tool_name: str, call_id: str | None, position: int) -> str:
    """The store key of one result: ``step-{step}/{tool}/{call id}.txt``.

    Each part is percent-encoded into one segment, so distinct (step, tool, id) never map to the
    same key. An id-less call uses ``@{position in this step's batch}``, which no encoded id can
    equal (``@`` is always encoded in ids).
    """
    call_part = encode_key_segment(call_id) if call_id else f"@{position}"
    return f"step-{step}/{encode_key_segment(tool_name)}/{call_part}.txt"


def pointer_text(reference: str, content: str, preview_chars: int) -> str:
    """What stays in the conversation in place of an offloaded result."""
    preview = content[:preview_chars] + ("..." if len(content) > preview_chars else "")
    return (
        f"Tool result offloaded: {len(content)} characters at '{reference}'. "
        "Read it with read_tool_result(reference, start/end or start_line/end_line). "
        f"Preview: {preview}"
    )


class OffloadInstruction(BaseModel):
    """Tells the tool activity to offload a big result itself, so it never enters history.

    Set by ``ToolResultOffloadHook`` for tools whose policy needs no State to decide.

    :param store: Store descriptor, already scoped to the run.
    :param policy: The tool's offload policy (``policy.to_dict()``).
    :param key: Store key of this call's result.
    :param preview_chars: Characters of the result kept in the pointer message.
    """

    store: dict[str, Any]
    policy: dict[str, Any]
    key: str
    preview_chars: int = 200


class StoreToolResultInput(BaseModel):
    """Input of ``store_tool_result``.

    :param store: The store descriptor (``store.to_dict()``, already scoped to the run).
    :param key: The result's key in the store.
    :param content: The result text.
    """

    store: dict[str, Any]
    key: str
    content: str


async def write_to_store(descriptor: dict[str, Any], key: str, content: str) -> str:
    """Write ``content`` under ``key`` in the store ``descriptor`` names; returns the reference.

    :raises ValueError: For a key the store refuses (outside the run, traversal).
    """
    return await asyncio.to_thread(object_from_dict(descriptor).write, key=key, content=content)


@activity.defn(name=STORE_TOOL_RESULT_ACTIVITY)
async def store_tool_result(request: StoreToolResultInput) -> str:
    """Write one result; returns its reference. A bad key is not retried; I/O errors are."""
    try:
        return await write_to_store(request.store, request.key, request.content)
    except ValueError as exc:
        raise ApplicationError(str(exc), type=NON_RETRYABLE_STORE_ERROR, non_retryable=True) from exc


async def store_result(request: StoreToolResultInput) -> str:
    """Workflow side: run ``store_tool_result`` (retried a few times; a refused key is not)."""
    return await workflow.execute_activity(
        store_tool_result,
        request,
        start_to_close_timeout=timedelta(minutes=5),
        retry_policy=STORE_RETRY_POLICY,
        summary=f"offload {request.key}",
    )


async def offload_in_activity(tool_name: str, text: str, instruction: OffloadInstruction) -> tuple[str, dict]:
    """Inside the tool activity: apply the policy and, if it says so, write the result to the store.

    :returns: ``(text for the conversation, message meta)``: the pointer and the reference when the
        result was offloaded; the result itself when it stays inline. A failed write keeps the
        result inline (nothing is lost) and is logged.
    """
    policy = object_from_dict(instruction.policy)
    if not text or not policy.should_offload(tool_name, text, None):
        return text, {}
    try:
        reference = await write_to_store(instruction.store, instruction.key, text)
    except Exception as exc:
        activity.logger.warning("Offloading the result of %s failed; returning it inline: %r", tool_name, exc)
        return text, {}
    return pointer_text(reference, text, instruction.preview_chars), {OFFLOADED_META_KEY: [reference]}

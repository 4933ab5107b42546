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

from activities.heartbeat import with_heartbeats
from core.serialization import object_from_dict
from core.wire import NON_RETRYABLE_STORE_ERROR, STORE_TOOL_RESULT_ACTIVITY

#: Meta key marking an offloaded tool-result message; its value is the list of references written.
OFFLOADED_META_KEY = "tool_result_offloaded"

#: How long a store write is retried (an S3 outage) before the result is given up; after that the
#: conversation gets :func:`unstored_text` in its place, never the result itself.
DEFAULT_WRITE_DEADLINE = timedelta(minutes=10)
#: Backoff between write attempts: 0.5 s doubling to at most 10 s.
WRITE_RETRY_INITIAL_SECONDS, WRITE_RETRY_MAX_SECONDS = 0.5, 10.0

STORE_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(seconds=WRITE_RETRY_INITIAL_SECONDS),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=WRITE_RETRY_MAX_SECONDS),
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


def unstored_text(tool_name: str, content: str, deadline: timedelta, error: object) -> str:
    """What the conversation gets when a result over the policy's threshold could not be stored:
    an error, not the result (the policy promised it would not sit in the context)."""
    return (
        f"The result of '{tool_name}' ({len(content)} characters) could not be stored: the tool-result store "
        f"kept failing for {deadline} ({error}). It was not kept in the conversation; call the tool again "
        "later if you need it."
    )


class OffloadInstruction(BaseModel):
    """Tells the tool activity to offload a big result itself, so it never enters history.

    Set by ``ToolResultOffloadHook`` when that gives the outcome of running the ``after_tool`` hooks
    in order: no hook registered before it reads tool results, and the tool's policy needs no State.

    :param store: Store descriptor, already scoped to the run.
    :param policy: The tool's offload policy (``policy.to_dict()``).
    :param key: Store key of this call's result.
    :param preview_chars: Characters of the result kept in the pointer message.
    :param write_deadline_seconds: How long the write is retried before the result is given up.
    """

    store: dict[str, Any]
    policy: dict[str, Any]
    key: str
    preview_chars: int = 200
    write_deadline_seconds: float = DEFAULT_WRITE_DEADLINE.total_seconds()


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


async def offload_in_activity(
    tool_name: str, text: str, instruction: OffloadInstruction
) -> tuple[str, dict[str, Any], bool]:
    """Inside the tool activity: apply the policy and, if it says so, write the result to the store.

    A failing write is retried with backoff (the activity heartbeats meanwhile) until the
    instruction's deadline; the tool is not run again.

    :returns: ``(text for the conversation, message meta, error)``: the pointer when the result was
        stored; the result itself when the policy keeps it inline; :func:`unstored_text` (an error)
        when the store kept failing until the deadline, so a big result never sits in the context.
    """
    policy = object_from_dict(instruction.policy)
    if not text or not policy.should_offload(tool_name, text, None):
        return text, {}, False
    deadline = timedelta(seconds=instruction.write_deadline_seconds)
    try:
        reference = await with_heartbeats(_write_until(instruction.store, instruction.key, text, deadline, tool_name))
    except _GaveUp as gave_up:
        return unstored_text(tool_name, text, deadline, gave_up.error), {}, True
    return pointer_text(reference, text, instruction.preview_chars), {OFFLOADED_META_KEY: [reference]}, False


class _GaveUp(Exception):
    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


async def _write_until(descriptor: dict[str, Any], key: str, content: str, deadline: timedelta, tool_name: str) -> str:
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + deadline.total_seconds()
    delay = WRITE_RETRY_INITIAL_SECONDS
    while True:
        try:
            return await write_to_store(descriptor, key, content)
        except ValueError as exc:  # a refused key: retrying cannot help
            raise _GaveUp(exc) from exc
        except Exception as exc:
            if loop.time() + delay > give_up_at:
                raise _GaveUp(exc) from exc
            activity.logger.warning("Writing the result of %s failed; retrying in %.1f s: %r", tool_name, delay, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, WRITE_RETRY_MAX_SECONDS)

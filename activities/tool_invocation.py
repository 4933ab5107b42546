"""Tool invocation: one activity per tool call, on the worker that holds the tool functions.

Worker side: :class:`ToolActivities` (the ``invoke_tool`` activity). Workflow side:
:func:`call_tool`, which the run loop awaits once per call.

A call may carry an :class:`OffloadInstruction` (an ``after_tool`` hook asked for it through
``hooks.protocol.OffloadsInToolActivity``): the activity then writes a big result to the store
itself (:func:`offload_in_activity`), so the result never enters history and only the pointer
comes back. :func:`write_to_store` is the one write to a ``ToolResultStore``; the families that
write results from the workflow (offloading, compaction) call it from their own activities.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field
from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from activities.heartbeat import HEARTBEAT_TIMEOUT, with_heartbeats
from core.agent_tool import AgentTool
from core.messages import ToolCall
from core.serialization import object_from_dict
from core.tool_records import OFFLOADED_META_KEY, pointer_text, unstored_text
from core.tools import Tool, ToolContext, flatten_tools, tool_context_set
from core.trust import Slot, UntrustedPathError
from core.wire import INVOKE_TOOL_ACTIVITY, TOOL_NOT_SERVED

#: How long the tool activity retries a store write (an S3 outage) before the result is given up;
#: after that the conversation gets ``unstored_text`` in its place, never the result itself.
DEFAULT_WRITE_DEADLINE = timedelta(minutes=10)
#: Backoff between write attempts: 0.5 s doubling to at most 10 s.
WRITE_RETRY_INITIAL_SECONDS, WRITE_RETRY_MAX_SECONDS = 0.5, 10.0

TOOL_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
)


class OffloadInstruction(BaseModel):
    """Tells the tool activity to offload a big result itself, so it never enters history.

    Set by an ``after_tool`` hook (``ToolResultOffloadHook``) when that gives the outcome of running
    the ``after_tool`` hooks in order: no hook registered before it reads tool results, and the
    tool's policy needs no State.

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


class ToolInvocationInput(BaseModel):
    """Input of the ``invoke_tool`` activity: one call of one tool.

    :param call_key: The call's id, or a deterministic stand-in for id-less calls; the tool's
        idempotency key is ``{run_id}/{call_key}``.
    :param offload: When set, the activity offloads a big result itself (:func:`offload_in_activity`).
    """

    run_id: str
    tool_call: ToolCall
    call_key: str
    step: int = 0
    offload: OffloadInstruction | None = None


class ToolInvocationOutput(BaseModel):
    """What one tool call produced: text for the model, or an error text."""

    result: str
    error: bool = False
    meta: dict[str, Any] = Field(default_factory=dict)


def result_to_text(result: Any) -> str:
    """What the model sees of a tool's return value."""
    if isinstance(result, str):
        return result
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    return json.dumps(result, default=str)


class ToolActivities:
    """The worker's tool registry; ``invoke_tool`` is the activity.

    :param tools: The tool functions this worker can run.
    :raises ValueError: On duplicate tool names or an object that is not a ``Tool`` (an
        ``Agent.as_tool`` sub-agent included: serve its agent's ``tool_functions``).
    """

    def __init__(self, tools: list[Tool]) -> None:
        self.tools: dict[str, Tool] = {}
        for t in flatten_tools(tools):
            if isinstance(t, AgentTool):
                raise ValueError(
                    f"{t!r} is a sub-agent: its calls run as child runs, not in invoke_tool. Serve its "
                    "tools instead: create_worker(tools=agent.tool_functions) or --tools module:agent."
                )
            if not isinstance(t, Tool):
                raise ValueError(f"{t!r} is not a Tool; decorate the function with @tool.")
            if t.name in self.tools:
                raise ValueError(f"Duplicate tool name '{t.name}' on this worker.")
            self.tools[t.name] = t

    @activity.defn(name=INVOKE_TOOL_ACTIVITY)
    async def invoke_tool(self, request: ToolInvocationInput) -> ToolInvocationOutput:
        """Run one tool call. Failures the model can act on come back as error results, not exceptions.

        Tools run at least once: after a crash this activity runs again with the same
        ``idempotency_key`` in the tool's context.

        :raises ApplicationError: Non-retryable, type ``ToolNotServed`` (details: the tool's name
            and the names this worker serves), when this worker has no such tool: a deployment
            error the model cannot act on, so the run fails saying so (``workflows/tool_dispatch.py``).
        """
        call = request.tool_call
        tool = self.tools.get(call.tool_name)
        if tool is None:
            raise ApplicationError(
                f"Tool '{call.tool_name}' is not served by this worker (task queue "
                f"'{activity.info().task_queue}'); it serves: {', '.join(self.tools) or 'no tools'}.",
                call.tool_name,
                list(self.tools),
                type=TOOL_NOT_SERVED,
                non_retryable=True,
            )
        call_id = request.call_key
        context = ToolContext(
            run_id=request.run_id,
            tool_call_id=call_id,
            idempotency_key=f"{request.run_id}/{call_id}",
            attempt=activity.info().attempt,
        )
        try:
            arguments = tool.validate_arguments(call.arguments)
        except ValueError as exc:
            return ToolInvocationOutput(result=str(exc), error=True)
        try:
            with tool_context_set(context):
                result = await with_heartbeats(tool.invoke(arguments))
        except Exception as exc:  # the model sees the failure and decides what to do
            activity.logger.warning("Tool %s failed: %r", call.tool_name, exc)
            return ToolInvocationOutput(
                result=f"Tool '{call.tool_name}' failed: {type(exc).__name__}: {exc}", error=True
            )
        text = result_to_text(result)
        if request.offload is None:
            return ToolInvocationOutput(result=text)
        text, meta, error = await offload_in_activity(call.tool_name, text, request.offload)
        return ToolInvocationOutput(result=text, meta=meta, error=error)


async def call_tool(request: ToolInvocationInput) -> ToolInvocationOutput:
    """Workflow side: run one tool call in ``invoke_tool``; heartbeats catch a crashed worker.

    A cancelled run waits for the activity to acknowledge the cancel (the activity heartbeats
    every second, so a running tool gets ``asyncio.CancelledError`` within a beat or two)."""
    return await workflow.execute_activity_method(
        ToolActivities.invoke_tool,
        request,
        start_to_close_timeout=timedelta(hours=1),
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        retry_policy=TOOL_RETRY_POLICY,
        cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        summary=request.tool_call.tool_name,
    )


#: A local tool call's own timeout: it holds the run's workflow task, so it must be short.
LOCAL_TOOL_TIMEOUT = timedelta(minutes=1)
#: What the offload instruction may name (core.trust checks it again here, on the worker).
RESULT_STORE_SLOT = Slot("tool result store", methods=("write",))
OFFLOAD_POLICY_SLOT = Slot("offload policy", methods=("should_offload",))
UNTRUSTED_PATH = "UntrustedPath"


def _trusted_object(descriptor: dict[str, Any], slot: Slot) -> Any:
    """Rebuild ``descriptor`` through the trust gate; a refusal fails the call for good."""
    try:
        return object_from_dict(descriptor, slot)
    except UntrustedPathError as exc:
        raise ApplicationError(str(exc), type=UNTRUSTED_PATH, non_retryable=True) from exc


async def call_tool_local(request: ToolInvocationInput) -> ToolInvocationOutput:
    """Workflow side: run one call of a ``Tool(local=True)`` as a local activity (the same
    ``invoke_tool``, in this worker, recorded as a marker when the workflow task completes).

    No heartbeats (a local activity has none), and a cancelled run waits for the call to end."""
    return await workflow.execute_local_activity_method(
        ToolActivities.invoke_tool,
        request,
        start_to_close_timeout=LOCAL_TOOL_TIMEOUT,
        retry_policy=TOOL_RETRY_POLICY,
        cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        summary=request.tool_call.tool_name,
    )


async def write_to_store(descriptor: dict[str, Any], key: str, content: str) -> str:
    """Write ``content`` under ``key`` in the store ``descriptor`` names (rebuilt here, on the
    worker); returns the reference.

    :raises ValueError: For a key the store refuses (outside the run, traversal).
    """
    store = _trusted_object(descriptor, RESULT_STORE_SLOT)
    return await asyncio.to_thread(store.write, key=key, content=content)


async def offload_in_activity(
    tool_name: str, text: str, instruction: OffloadInstruction
) -> tuple[str, dict[str, Any], bool]:
    """Inside the tool activity: apply the policy and, if it says so, write the result to the store.

    A failing write is retried with backoff (the activity heartbeats meanwhile) until the
    instruction's deadline; the tool is not run again.

    :returns: ``(text for the conversation, message meta, error)``: the pointer when the result was
        stored; the result itself when the policy keeps it inline; ``unstored_text`` (an error)
        when the store kept failing until the deadline, so a big result never sits in the context.
    """
    policy = _trusted_object(instruction.policy, OFFLOAD_POLICY_SLOT)
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
        except ApplicationError:  # an untrusted store: the run's input named code this worker refuses
            raise
        except ValueError as exc:  # a refused key: retrying cannot help
            raise _GaveUp(exc) from exc
        except Exception as exc:
            if loop.time() + delay > give_up_at:
                raise _GaveUp(exc) from exc
            activity.logger.warning("Writing the result of %s failed; retrying in %.1f s: %r", tool_name, delay, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, WRITE_RETRY_MAX_SECONDS)

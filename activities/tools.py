"""Tool invocation: one activity per tool call, on the worker that holds the tool functions.

Worker side: :class:`ToolActivities` (the ``invoke_tool`` activity). Workflow side:
:func:`call_tool`, which the run loop awaits once per call.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field
from temporalio import activity, workflow
from temporalio.common import RetryPolicy

from activities.heartbeat import HEARTBEAT_TIMEOUT, with_heartbeats
from activities.tool_results import OffloadInstruction, offload_in_activity
from core.messages import ToolCall
from core.tools import Tool, ToolContext, flatten_tools, tool_context_set
from core.wire import INVOKE_TOOL_ACTIVITY

TOOL_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
)


class ToolInvocationInput(BaseModel):
    """Input of the ``invoke_tool`` activity: one call of one tool.

    :param call_key: The call's id, or a deterministic stand-in for id-less calls; the tool's
        idempotency key is ``{run_id}/{call_key}``.
    :param offload: When set, the activity offloads a big result itself (see activities/tool_results.py).
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
    :raises ValueError: On duplicate tool names or an object that is not a ``Tool``.
    """

    def __init__(self, tools: list[Tool]) -> None:
        self.tools: dict[str, Tool] = {}
        for t in flatten_tools(tools):
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
        """
        call = request.tool_call
        tool = self.tools.get(call.tool_name)
        if tool is None:
            return ToolInvocationOutput(
                result=(
                    f"Tool '{call.tool_name}' is not available on this worker (task queue '{activity.info().task_queue}'). "
                    f"Available: {', '.join(self.tools)}. Start a worker with your tools: "
                    "`agent dev --agent mymodule:agent` or `python worker.py --tools mymodule:TOOLS`."
                ),
                error=True,
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
    """Workflow side: run one tool call in ``invoke_tool``; heartbeats catch a crashed worker."""
    return await workflow.execute_activity_method(
        ToolActivities.invoke_tool,
        request,
        start_to_close_timeout=timedelta(hours=1),
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        retry_policy=TOOL_RETRY_POLICY,
        summary=request.tool_call.tool_name,
    )

"""Tool invocation: one activity per tool call, on the worker that holds the tool functions."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from temporalio import activity

from activities.heartbeat import with_heartbeats
from activities.tool_results import write_to_store
from agent.payloads import OffloadInstruction, ToolInvocationInput, ToolInvocationOutput
from agent.tools import Tool, ToolContext, _tool_context
from hooks.serialization import object_from_dict
from hooks.tool_result_offloading.hook import OFFLOADED_META_KEY, pointer_text


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
    :raises ValueError: On duplicate tool names.
    """

    def __init__(self, tools: list[Tool]) -> None:
        self.tools: dict[str, Tool] = {}
        for t in tools:
            if not isinstance(t, Tool):
                raise ValueError(f"{t!r} is not a Tool; decorate the function with @tool.")
            if t.name in self.tools:
                raise ValueError(f"Duplicate tool name '{t.name}' on this worker.")
            self.tools[t.name] = t

    @activity.defn(name="invoke_tool")
    async def invoke_tool(self, request: ToolInvocationInput) -> ToolInvocationOutput:
        """Run one tool call. Failures the model can act on come back as error results, not exceptions.

        Tools run at least once: after a crash this activity runs again with the same
        ``idempotency_key`` in the tool's context.
        """
        call = request.tool_call
        tool = self.tools.get(call.tool_name)
        if tool is None:
            return ToolInvocationOutput(
                result=f"Tool '{call.tool_name}' is not available on this worker. Available: {', '.join(self.tools)}.",
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
        token = _tool_context.set(context)
        try:
            result = await with_heartbeats(tool.invoke(arguments))
        except Exception as exc:  # the model sees the failure and decides what to do
            activity.logger.warning("Tool %s failed: %r", call.tool_name, exc)
            return ToolInvocationOutput(
                result=f"Tool '{call.tool_name}' failed: {type(exc).__name__}: {exc}", error=True
            )
        finally:
            _tool_context.reset(token)
        text = result_to_text(result)
        if request.offload is not None:
            return await offload_in_activity(call.tool_name, text, request.offload)
        return ToolInvocationOutput(result=text)


async def offload_in_activity(tool_name: str, text: str, instruction: OffloadInstruction) -> ToolInvocationOutput:
    """Apply the offload policy here, so a big result goes to the store instead of into history.

    A failed write keeps the result in the output (nothing is lost); the hook may retry later.
    """
    policy = object_from_dict(instruction.policy)
    if not text or not policy.should_offload(tool_name, text, None):
        return ToolInvocationOutput(result=text)
    try:
        reference = await write_to_store(instruction.store, instruction.key, text)
    except Exception as exc:
        activity.logger.warning("Offloading the result of %s failed; returning it inline: %r", tool_name, exc)
        return ToolInvocationOutput(result=text)
    return ToolInvocationOutput(
        result=pointer_text(reference, text, instruction.preview_chars), meta={OFFLOADED_META_KEY: [reference]}
    )

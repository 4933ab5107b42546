"""How workflow code (the run loop and hooks) calls activities: names, timeouts, retries.

Hooks import from here so every activity call of a run shares one set of durable options.
Timeouts are short on heartbeats so that a crashed worker's activities are retried on
another worker within seconds (measured: see README "Crash recovery").
"""

from __future__ import annotations

from contextvars import ContextVar
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from agent.payloads import (
        NON_RETRYABLE_MODEL_ERROR,
        ModelCallInput,
        ModelCallOutput,
        TokenUsage,
        ToolInvocationInput,
        ToolInvocationOutput,
    )

CHAT_COMPLETION = "chat_completion"
INVOKE_TOOL = "invoke_tool"

HEARTBEAT_TIMEOUT = timedelta(seconds=3)

MODEL_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    non_retryable_error_types=[NON_RETRYABLE_MODEL_ERROR],
)

TOOL_RETRY_POLICY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
)


# Token usage of model calls made by hooks (summaries), kept apart from the agent's own
# ``token_usage`` as in Haystack. The run loop sets a fresh holder per run; a ContextVar keeps
# runs that share a worker apart.
_hook_usage: ContextVar[list[TokenUsage] | None] = ContextVar("agent_hook_token_usage", default=None)


def reset_hook_token_usage(initial: TokenUsage | None = None) -> list[TokenUsage]:
    """Start accounting hook model calls for the current run (called by the run loop).

    :returns: The one-item holder, so the run's query handlers can read it from any context.
    """
    holder = [initial or TokenUsage()]
    _hook_usage.set(holder)
    return holder


def hook_token_usage() -> TokenUsage:
    """Total usage of the model calls hooks made in this run so far."""
    holder = _hook_usage.get()
    return holder[0] if holder else TokenUsage()


async def call_model(request: ModelCallInput) -> ModelCallOutput:
    """Run the ``chat_completion`` activity; transient errors are retried with backoff.

    Calls with ``purpose="hook"`` are added to :func:`hook_token_usage`.
    """
    output = await _execute_model_call(request)
    holder = _hook_usage.get()
    if request.purpose == "hook" and holder is not None:
        holder[0] = holder[0] + output.usage
    return output


async def _execute_model_call(request: ModelCallInput) -> ModelCallOutput:
    return await workflow.execute_activity(
        CHAT_COMPLETION,
        request,
        result_type=ModelCallOutput,
        start_to_close_timeout=timedelta(minutes=5),
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        retry_policy=MODEL_RETRY_POLICY,
        summary=f"{request.purpose} model call",
    )


async def call_tool(request: ToolInvocationInput) -> ToolInvocationOutput:
    """Run one tool call in the ``invoke_tool`` activity."""
    return await workflow.execute_activity(
        INVOKE_TOOL,
        request,
        result_type=ToolInvocationOutput,
        start_to_close_timeout=timedelta(hours=1),
        heartbeat_timeout=HEARTBEAT_TIMEOUT,
        retry_policy=TOOL_RETRY_POLICY,
        summary=request.tool_call.tool_name,
    )

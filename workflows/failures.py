"""How a run fails (a hook's error, a model call given up), why a reply ends it, and its initial State."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from pydantic import TypeAdapter
from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, FailureError, RetryState, TimeoutError

with workflow.unsafe.imports_passed_through():
    from core.messages import ChatMessage, ChatRole
    from core.payloads import AgentRunInput
    from core.serialization import hook_import_path
    from core.spec import AgentSpec
    from core.state import State
    from core.wire import HOOK_ERROR, MODEL_CALL_FAILED


def hook_failure(hook: Any, point: str, step: int, err: Exception) -> ApplicationError:
    """The run's failure when a hook raised: names the hook, the point, the step and the error."""
    name = hook_import_path(hook)
    cause = err.cause if isinstance(err, ActivityError) and err.cause is not None else err
    return ApplicationError(
        f"Hook {name} failed at {point} (step {step}): {type(cause).__name__}: {cause}",
        {"hook": name, "hook_point": point, "step": step, "error_type": type(cause).__name__},
        type=HOOK_ERROR,
        non_retryable=True,
    )


def model_call_failure(err: ActivityError, retry_timeout: timedelta) -> ApplicationError:
    """The run's failure when a model call failed for good: non-retryable, or retried until the
    agent's ``model_retry_timeout``. The message ends with the last attempt's error."""
    last = err.cause  # what the activity's last attempt raised (its own causes are details)
    last_error = last.message if isinstance(last, FailureError) else str(last or err)
    if err.retry_state == RetryState.TIMEOUT or isinstance(last, TimeoutError):
        why = f"it kept failing for {retry_timeout} (model_retry_timeout)"
    else:
        why = "retrying cannot fix it"
    return ApplicationError(
        f"The model call was given up: {why}. Last error: {last_error}",
        {"retry_state": err.retry_state.name if err.retry_state else None},
        type=MODEL_CALL_FAILED,
        non_retryable=True,
    )


EXIT_TEXT = "text"
EXIT_MAX_STEPS = "max_agent_steps"
_INCOMPLETE_FINISH_REASONS = ("length", "content_filter")


def model_exit_reason(reply: ChatMessage) -> str | None:
    """Why a tool-call-free reply ends the run, or None (an empty reply does not), as in Haystack."""
    if reply.tool_calls:
        return None
    finish_reason = reply.meta.get("finish_reason")
    if finish_reason in _INCOMPLETE_FINISH_REASONS:
        return finish_reason
    return EXIT_TEXT if reply.text else None


def initial_state(agent: AgentSpec, run_input: AgentRunInput) -> State:
    """The run's State: from the snapshot of a continue-as-new, else from the input (the system
    prompt first, the reserved keys at their start values, the ``state_schema`` values given)."""
    if run_input.snapshot is not None:
        data = dict(run_input.snapshot.state)
        data["messages"] = [ChatMessage.model_validate(m) for m in data.get("messages", [])]
        data["tools"] = list(agent.tool_specs)
        # The snapshot went through JSON: give state_schema keys their declared types back.
        for key, definition in agent.state_schema.items():
            if data.get(key) is not None:
                data[key] = TypeAdapter(definition["type"]).validate_python(data[key])
        return State(schema=agent.state_schema, data=data)
    messages = list(run_input.messages)
    if agent.system_prompt and not (messages and messages[0].role.value == "system"):
        messages.insert(0, ChatMessage.from_system(agent.system_prompt))
    data: dict[str, Any] = {
        "messages": messages,
        "step_count": 0,
        "token_usage": {},
        "tool_call_counts": {t.name: 0 for t in agent.tool_specs},  # as Haystack: every tool, from 0
        "exit_reason": None,
        "continue_run": False,
        "stop_run": None,
        "tools": list(agent.tool_specs),
        "hook_context": dict(run_input.hook_context),
        "context_tokens": 0,
    }
    data.update(run_input.state)
    return State(schema=agent.state_schema, data=data)


def final_output(agent: AgentSpec, messages: list[ChatMessage], exit_reason: str | None) -> Any:
    """With ``output_type``, the final answer's JSON value (the model activity checked it against
    the schema); None when the agent has none or the run ended without a final text answer."""
    if agent.output_schema is None or exit_reason != EXIT_TEXT or not messages:
        return None
    last = messages[-1]
    if last.role != ChatRole.ASSISTANT or last.tool_calls:
        return None
    try:
        return json.loads(last.text or "")
    except ValueError:
        return None

"""Pydantic payloads of the workflow itself: its input, its snapshot across continue-as-new, its
result and its status. (Each activity's payloads live beside the activity.)"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, Field

from core.messages import ChatMessage


def add_usage(total: dict[str, Any], usage: dict[str, Any] | None) -> dict[str, Any]:
    """Cumulative token usage, as Haystack sums it: numbers are added, nested details
    (``prompt_tokens_details``, ...) are merged key by key, anything else takes the newer value.

    The one way usage is summed: the agent's ``token_usage`` and hooks' model calls.
    """
    out = dict(total)
    for key, value in (usage or {}).items():
        out[key] = _accumulate(out[key], value) if key in out else copy.deepcopy(value)
    return out


def _accumulate(current: Any, new: Any) -> Any:
    if isinstance(current, dict) and isinstance(new, dict):
        return add_usage(current, new)
    if _is_number(current) and _is_number(new):
        return current + new
    return new


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class RunSnapshot(BaseModel):
    """Everything a run carries across continue-as-new.

    :param state: The State's data (messages, counters, extra keys).
    :param hook_memory: What hooks with ``snapshot()`` returned, keyed ``"point/index"``.
    :param hook_token_usage: Usage of model calls made by hooks so far.
    :param continuations: How many times this run has continued as new.
    :param conversation: ``(message count, head digest)`` of the stored conversation prefix.
    """

    state: dict[str, Any]
    hook_memory: dict[str, Any] = Field(default_factory=dict)
    hook_token_usage: dict[str, Any] = Field(default_factory=dict)
    continuations: int = 0
    conversation: tuple[int, str] | None = None


class AgentRunInput(BaseModel):
    """Input of ``AgentWorkflow``.

    :param agent: ``Agent.to_dict()``: model, tools by spec, hooks by reference.
    :param messages: The conversation to start from.
    :param hook_context: JSON data for hooks (``state["hook_context"]``).
    :param state: Initial values of ``state_schema`` keys.
    :param snapshot: Set only when the run continues as new.
    """

    agent: dict[str, Any]
    messages: list[ChatMessage] = Field(default_factory=list)
    hook_context: dict[str, Any] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)
    snapshot: RunSnapshot | None = None


class AgentRunResult(BaseModel):
    """What a finished run returns.

    :param tool_call_counts: Tool calls per tool name, as in Haystack.
    :param token_usage: The agent's own model calls (cumulative).
    :param hook_token_usage: Model calls made by hooks (summaries), counted apart.
    :param state: The values of the ``state_schema`` keys.
    :param continuations: How many times the run continued as new.
    """

    messages: list[ChatMessage]
    last_message: ChatMessage | None = None
    exit_reason: str | None = None
    step_count: int = 0
    token_usage: dict[str, Any] = Field(default_factory=dict)
    hook_token_usage: dict[str, Any] = Field(default_factory=dict)
    tool_call_counts: dict[str, int] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)
    continuations: int = 0


class RunStatus(BaseModel):
    """Answer of the ``run_status`` query."""

    run_id: str
    step_count: int
    phase: str
    waiting_for_approval: bool = False
    pending_confirmations: int = 0
    exit_reason: str | None = None
    done: bool = False
    token_usage: dict[str, Any] = Field(default_factory=dict)
    hook_token_usage: dict[str, Any] = Field(default_factory=dict)
    continuations: int = 0


class ActivityRetry(BaseModel):
    """An activity of the run that has failed at least once and is being retried.

    :param activity_type: ``chat_completion``, ``invoke_tool``, ...
    :param attempt: The attempt now scheduled or running (2 after one failure).
    :param last_error: The last attempt's failure message.
    """

    activity_type: str
    attempt: int
    last_error: str | None = None


class FailingWorkflowTask(BaseModel):
    """A workflow task that keeps failing: the run waits for fixed code rather than failing.

    :param attempt: The pending workflow task's attempt (2 or more).
    :param error: The last failure, from the history's last ``WorkflowTaskFailed`` event.
    :param task_queue: The run's task queue (the workers that need the fixed code).
    :param fix: What to do about it, in one sentence.
    :param hint: For a sandbox restriction or non-determinism, what workflow code uses instead;
        None for any other error.
    """

    attempt: int
    error: str
    task_queue: str
    fix: str
    hint: str | None = None


class RunHealth(BaseModel):
    """What Temporal knows about a run beyond its own status query (from ``describe()``).

    :param status: ``RUNNING``, ``COMPLETED``, ``FAILED``, ``CANCELED``, ``TERMINATED``,
        ``CONTINUED_AS_NEW`` or ``TIMED_OUT``.
    :param failure: Why the run failed, when it did (the innermost message).
    :param workflow_task_attempts: Attempt of the pending workflow task (above 1: it keeps failing).
    :param workflow_task_error: The last workflow-task failure's message, when the task is failing.
    :param retrying_activities: Activities on their second or later attempt.
    :param failing_workflow_task: The workflow task that keeps failing, with how to fix it; None
        while the run's workflow tasks succeed.
    """

    status: str
    failure: str | None = None
    workflow_task_attempts: int = 0
    workflow_task_error: str | None = None
    retrying_activities: list[ActivityRetry] = Field(default_factory=list)
    failing_workflow_task: FailingWorkflowTask | None = None

    @property
    def stuck(self) -> bool:
        """Whether something is failing and being retried right now."""
        return self.workflow_task_attempts > 1 or bool(self.retrying_activities)

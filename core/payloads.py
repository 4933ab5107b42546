"""Pydantic payloads of the workflow itself: its input, its snapshot across continue-as-new, its
result and its status. (Each activity's payloads live beside the activity.)"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, Field
from temporalio.contrib.workflow_streams import WorkflowStreamState

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


#: Longest text a ``UserMessage`` may carry, in characters.
MAX_USER_MESSAGE_CHARS = 32_000
#: Longest ``sender`` and ``message_id`` of a ``UserMessage``, and ``approver`` of a decision, in
#: characters: names and ids, kept in history with every message and decision.
MAX_NAME_CHARS = 200
#: Longest ``CancelRequest.reason``, in characters (it is copied into each cancelled tool result).
MAX_CANCEL_REASON_CHARS = 1_000
#: ``exit_reason`` of a run ended by ``cancel_run`` or Temporal's own cancel.
EXIT_CANCELLED = "cancelled"
#: ``exit_reason`` of a session whose ``wait_for_user`` passed with no message.
EXIT_IDLE = "idle"


class UserMessage(BaseModel):
    """A person's message into a running or waiting run (Update ``send_message``, Signal ``user_message``).

    :param text: What they say; non-empty, at most :data:`MAX_USER_MESSAGE_CHARS` characters.
    :param sender: Who says it (at most :data:`MAX_NAME_CHARS` characters); must be one of the
        agent's ``participants`` when it names them.
    :param message_id: An id of the sender's choosing (at most :data:`MAX_NAME_CHARS` characters):
        a repeated id gets the first receipt and adds nothing. None: the workflow assigns a
        deterministic one.
    """

    text: str
    sender: str | None = None
    message_id: str | None = None


class MessageReceipt(BaseModel):
    """What the run answers an accepted message.

    :param message_id: The message's id (the sender's, or the one the workflow assigned).
    :param turn: The turn that sees the message (``wait_turn(turn)`` waits for its answer).
    """

    message_id: str
    turn: int


class TurnResult(BaseModel):
    """How one turn (one ``Agent.run`` over the conversation so far) ended.

    :param turn: The turn's number, from 1.
    :param last_message: The last message of the conversation when the turn ended.
    :param exit_reason: ``text``, a tool name, ``max_agent_steps``, ``cancelled``, ...
    :param step_count: Steps of this turn.
    """

    turn: int
    last_message: ChatMessage | None = None
    exit_reason: str | None = None
    step_count: int = 0


class CancelRequest(BaseModel):
    """Input of Update ``cancel_run``.

    :param reason: Why (at most :data:`MAX_CANCEL_REASON_CHARS` characters); it goes into the
        cancelled tool results and the closed confirmations.
    """

    reason: str | None = None


class SessionSnapshot(BaseModel):
    """What a conversation carries across continue-as-new.

    :param turn: The current (or last finished) turn.
    :param between_turns: True when the previous run continued as new after a turn ended.
    :param inbox: Accepted messages not yet delivered, with their receipts, in arrival order.
    :param receipts: Receipts of recent messages by id (bounded), for de-duplication.
    :param turn_results: The latest finished turns (bounded), for ``turn_result``.
    :param message_count: How many ids the workflow has assigned (keeps them unique).
    """

    turn: int = 1
    between_turns: bool = False
    inbox: list[tuple[UserMessage, MessageReceipt]] = Field(default_factory=list)
    receipts: dict[str, MessageReceipt] = Field(default_factory=dict)
    turn_results: list[TurnResult] = Field(default_factory=list)
    message_count: int = 0


class RunSnapshot(BaseModel):
    """Everything a run carries across continue-as-new.

    :param state: The State's data (messages, counters, extra keys).
    :param hook_memory: What hooks with ``snapshot()`` returned, keyed ``"point/index"``.
    :param hook_token_usage: Usage of model calls made by hooks so far.
    :param continuations: How many times this run has continued as new.
    :param conversation: ``(message count, head digest)`` of the stored conversation prefix.
    :param session: The conversation's turn, inbox and receipts (None for runs that got no message).
    """

    state: dict[str, Any]
    hook_memory: dict[str, Any] = Field(default_factory=dict)
    hook_token_usage: dict[str, Any] = Field(default_factory=dict)
    continuations: int = 0
    conversation: tuple[int, str] | None = None
    session: SessionSnapshot | None = None


class AgentRunInput(BaseModel):
    """Input of ``AgentWorkflow``.

    :param agent: ``Agent.to_dict()``: model, tools by spec, hooks by reference.
    :param messages: The conversation to start from.
    :param hook_context: JSON data for hooks (``state["hook_context"]``).
    :param state: Initial values of ``state_schema`` keys.
    :param snapshot: Set only when the run continues as new.
    :param wait_for_user_seconds: A session: after each turn, wait this long for the next message
        (then end with ``exit_reason="idle"``). None: the run ends after its first turn.
    :param last_message_only: The result's ``messages`` hold only the last message: a sub-agent's
        run (``Agent.as_tool``), whose result goes into its parent's history.
    :param stream_state: The run's event stream, carried across continue-as-new (workflows/live.py).
    """

    agent: dict[str, Any]
    messages: list[ChatMessage] = Field(default_factory=list)
    hook_context: dict[str, Any] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)
    snapshot: RunSnapshot | None = None
    wait_for_user_seconds: float | None = None
    last_message_only: bool = False
    stream_state: WorkflowStreamState | None = None


class AgentRunResult(BaseModel):
    """What a finished run returns.

    :param tool_call_counts: Tool calls per tool name, as in Haystack.
    :param token_usage: The agent's own model calls (cumulative).
    :param hook_token_usage: Model calls made by hooks (summaries), counted apart.
    :param state: The values of the ``state_schema`` keys.
    :param continuations: How many times the run continued as new.
    :param turn: The last turn (a session's count of turns; 1 otherwise). ``step_count`` and
        ``exit_reason`` are that turn's.
    :param output: With ``Agent(output_type=...)``, the final answer as JSON (the model activity
        checked it against the schema); ``AgentRunHandle.result()`` turns it into the typed value
        when the handle knows the type. None when the run ended without a final answer.
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
    turn: int = 1
    output: Any = None


class RunStatus(BaseModel):
    """Answer of the ``run_status`` query.

    :param turn: The current turn (from 1); a session's turns count up.
    :param waiting_for_user: True while a session waits for the user's next message.
    """

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
    turn: int = 1
    waiting_for_user: bool = False


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
    :param history_length: Events in the run's history (a watcher asks the run again only when it grew).
    :param failing_workflow_task: The workflow task that keeps failing, with how to fix it; None
        while the run's workflow tasks succeed.
    :param waiting_activities: Activities scheduled and not yet started (a model call held by the
        model task queue's rate limit, or a queue no worker polls), by type.
    """

    status: str
    failure: str | None = None
    workflow_task_attempts: int = 0
    workflow_task_error: str | None = None
    retrying_activities: list[ActivityRetry] = Field(default_factory=list)
    failing_workflow_task: FailingWorkflowTask | None = None
    waiting_activities: list[str] = Field(default_factory=list)
    history_length: int = 0

    @property
    def stuck(self) -> bool:
        """Whether something is failing and being retried right now."""
        return self.workflow_task_attempts > 1 or bool(self.retrying_activities)

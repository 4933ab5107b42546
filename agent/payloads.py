"""Pydantic payloads that cross the workflow/activity boundary (and so go into history)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.messages import ChatMessage, ToolCall
from agent.tools import ToolSpec

#: ``ApplicationError.type`` of model failures retrying cannot fix (HTTP 400/401/403/404/422);
#: the model activity raises it and the workflow's retry policy lists it as non-retryable.
NON_RETRYABLE_MODEL_ERROR = "ModelClientError"


class TokenUsage(BaseModel):
    """Token counts of one model call or a sum of them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


class ModelCallInput(BaseModel):
    """Input of the ``chat_completion`` activity.

    :param model: Model name at the OpenAI-compatible endpoint.
    :param messages: The conversation to send.
    :param tools: Tools the model may call (empty: none).
    :param settings: Extra Chat Completions parameters (temperature, max_tokens, ...).
    :param purpose: ``"agent"`` for the agent's own step, ``"hook"`` for calls made by hooks
        (summaries); token accounting keeps the two apart.
    :param conversation_head: When set, ``messages`` are only the messages after the stored
        conversation this digest names (see activities/conversation.py).
    """

    model: str
    messages: list[ChatMessage]
    conversation_head: str | None = None
    tools: list[ToolSpec] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)
    purpose: Literal["agent", "hook"] = "agent"


class ModelCallOutput(BaseModel):
    """The model's reply (``meta`` holds ``usage``, ``finish_reason``, ``model``).

    :param conversation_head: Digest of the stored conversation including the reply, when the
        worker stores conversations; the next call can then send only what comes after it.
    """

    message: ChatMessage
    usage: TokenUsage = Field(default_factory=TokenUsage)
    conversation_head: str | None = None


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


class ToolInvocationInput(BaseModel):
    """Input of the ``invoke_tool`` activity: one call of one tool.

    :param call_key: The call's id, or a deterministic stand-in for id-less calls; the tool's
        idempotency key is ``{run_id}/{call_key}``.
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
    hook_token_usage: TokenUsage = Field(default_factory=TokenUsage)
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
    token_usage: dict[str, int] = Field(default_factory=dict)
    hook_token_usage: TokenUsage = Field(default_factory=TokenUsage)
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
    token_usage: dict[str, int] = Field(default_factory=dict)
    hook_token_usage: TokenUsage = Field(default_factory=TokenUsage)
    continuations: int = 0

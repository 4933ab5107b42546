"""Pydantic payloads that cross the workflow/activity boundary (and so go into history)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.messages import ChatMessage, ToolCall
from agent.tools import ToolSpec


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
    """

    model: str
    messages: list[ChatMessage]
    tools: list[ToolSpec] = Field(default_factory=list)
    settings: dict[str, Any] = Field(default_factory=dict)
    purpose: Literal["agent", "hook"] = "agent"


class ModelCallOutput(BaseModel):
    """The model's reply (``meta`` holds ``usage``, ``finish_reason``, ``model``)."""

    message: ChatMessage
    usage: TokenUsage = Field(default_factory=TokenUsage)


class ToolInvocationInput(BaseModel):
    """Input of the ``invoke_tool`` activity: one call of one tool."""

    run_id: str
    tool_call: ToolCall
    step: int = 0


class ToolInvocationOutput(BaseModel):
    """What one tool call produced: text for the model, or an error text."""

    result: str
    error: bool = False
    meta: dict[str, Any] = Field(default_factory=dict)

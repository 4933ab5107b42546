"""Chat messages shaped like Haystack's ``ChatMessage``, as pydantic v2 models.

Every workflow input and output goes through ``pydantic_data_converter``, so these models are
the wire format of a run as well as the objects hooks read and rewrite.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ChatRole(StrEnum):
    """Who a message is from."""

    USER = "user"
    SYSTEM = "system"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ToolCall(BaseModel):
    """A call the model asked for.

    :param tool_name: Name of the tool to call.
    :param arguments: Parsed JSON arguments.
    :param id: The provider's id for the call; it binds results and approvals to the call.
    :param extra: Provider-specific data kept for the round trip (e.g. the raw, unparsable
        arguments string under ``"invalid_arguments"``).
    """

    model_config = ConfigDict(frozen=True)

    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    extra: dict[str, Any] | None = None


class ToolCallResult(BaseModel):
    """The result of running one tool call.

    :param result: The tool's output as text (what the model sees).
    :param origin: The call that produced it.
    :param error: True when the tool failed, was unknown, got bad arguments or was rejected.
    """

    model_config = ConfigDict(frozen=True)

    result: str
    origin: ToolCall
    error: bool = False


class ChatMessage(BaseModel):
    """One message of the conversation.

    Build messages with the ``from_*`` class methods rather than the constructor.
    """

    model_config = ConfigDict(frozen=True)

    role: ChatRole
    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_results: list[ToolCallResult] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    name: str | None = None

    @classmethod
    def from_user(cls, text: str, meta: dict[str, Any] | None = None, name: str | None = None) -> ChatMessage:
        """A message from the user."""
        return cls(role=ChatRole.USER, text=text, meta=meta or {}, name=name)

    @classmethod
    def from_system(cls, text: str, meta: dict[str, Any] | None = None, name: str | None = None) -> ChatMessage:
        """A system instruction."""
        return cls(role=ChatRole.SYSTEM, text=text, meta=meta or {}, name=name)

    @classmethod
    def from_assistant(
        cls,
        text: str | None = None,
        tool_calls: list[ToolCall] | None = None,
        meta: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> ChatMessage:
        """A model reply: text, tool calls, or both."""
        return cls(role=ChatRole.ASSISTANT, text=text, tool_calls=tool_calls or [], meta=meta or {}, name=name)

    @classmethod
    def from_tool(
        cls, tool_result: str, origin: ToolCall, error: bool = False, meta: dict[str, Any] | None = None
    ) -> ChatMessage:
        """The result of one tool call, answered to the model."""
        return cls(
            role=ChatRole.TOOL,
            tool_call_results=[ToolCallResult(result=tool_result, origin=origin, error=error)],
            meta=meta or {},
        )

    @property
    def tool_call(self) -> ToolCall | None:
        """The first tool call, or None."""
        return self.tool_calls[0] if self.tool_calls else None

    @property
    def tool_call_result(self) -> ToolCallResult | None:
        """The first tool call result, or None."""
        return self.tool_call_results[0] if self.tool_call_results else None

    @property
    def texts(self) -> list[str]:
        """The message's texts as a list (empty when it has none), as in Haystack."""
        return [self.text] if self.text is not None else []

    def is_from(self, role: ChatRole | str) -> bool:
        """Whether the message comes from ``role``."""
        return self.role == ChatRole(role)

    def with_updates(self, **changes: Any) -> ChatMessage:
        """A copy with the given fields replaced (messages are immutable)."""
        return self.model_copy(update=changes)

"""Public API of the durable, hook-driven agent."""

from agent.agent import Agent
from agent.messages import ChatMessage, ChatRole, ToolCall, ToolCallResult
from agent.state import State
from agent.tools import Tool, ToolContext, ToolSpec, current_tool_context, tool

__all__ = [
    "Agent",
    "ChatMessage",
    "ChatRole",
    "State",
    "Tool",
    "ToolCall",
    "ToolCallResult",
    "ToolContext",
    "ToolSpec",
    "current_tool_context",
    "tool",
]

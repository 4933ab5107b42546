"""Public API of the durable, hook-driven agent."""

from agent.agent import Agent
from agent.client import AgentRunHandle, connect, get_run
from agent.messages import ChatMessage, ChatRole, ToolCall, ToolCallResult
from agent.payloads import AgentRunResult, RunStatus
from agent.plugin import AgentPlugin
from agent.state import State
from agent.tools import Tool, ToolContext, ToolSpec, current_tool_context, tool

__all__ = [
    "Agent",
    "AgentPlugin",
    "AgentRunHandle",
    "AgentRunResult",
    "RunStatus",
    "connect",
    "get_run",
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

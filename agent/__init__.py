"""Public API of the durable, hook-driven agent (the facade: the top layer, see DESIGN.md "Layers").

The data model is defined in ``core`` and re-exported here, so ``from agent import ChatMessage``
keeps working; ``Agent``, the client handle and the CLI live in this package.
"""

from agent.agent import Agent
from agent.client import AgentRunHandle, connect, get_run
from core.messages import ChatMessage, ChatRole, ToolCall, ToolCallResult
from core.payloads import AgentRunResult, RunStatus
from core.state import State
from core.tools import Tool, ToolContext, ToolSpec, current_tool_context, tool
from runtime.plugin import AgentPlugin

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

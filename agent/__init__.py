"""Public API of the durable, hook-driven agent (the facade: the top layer, see DESIGN.md "Layers").

The data model is defined in ``core`` and re-exported here, so ``from agent import ChatMessage``
keeps working; ``Agent``, the client handle and the CLI live in this package.

Names are imported on first use (PEP 562), as Haystack's packages do: importing a submodule such
as ``agent.dev.stack`` does not import the run loop, the hooks or the ``openai`` SDK, which keeps
workflow sandboxes that import it (tests define workflows next to it) and the CLI's start-up light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.agent import Agent
    from agent.client import AgentRunHandle, connect, get_run
    from core.events import ReplyText, RunEvent
    from core.mcp import MCPTool, MCPToolset, StdioServerInfo, StreamableHttpServerInfo
    from core.messages import ChatMessage, ChatRole, ToolCall, ToolCallResult
    from core.models import Fallback, Model
    from core.payloads import AgentRunResult, RunStatus
    from core.state import State
    from core.tools import Tool, ToolContext, Toolset, ToolSpec, current_tool_context, tool
    from runtime.plugin import AgentPlugin

_EXPORTS: dict[str, str] = {
    "Agent": "agent.agent",
    "AgentPlugin": "runtime.plugin",
    "AgentRunHandle": "agent.client",
    "AgentRunResult": "core.payloads",
    "RunStatus": "core.payloads",
    "RunEvent": "core.events",
    "ReplyText": "core.events",
    "connect": "agent.client",
    "Fallback": "core.models",
    "MCPTool": "core.mcp",
    "Model": "core.models",
    "MCPToolset": "core.mcp",
    "StdioServerInfo": "core.mcp",
    "StreamableHttpServerInfo": "core.mcp",
    "get_run": "agent.client",
    "ChatMessage": "core.messages",
    "ChatRole": "core.messages",
    "State": "core.state",
    "Tool": "core.tools",
    "ToolCall": "core.messages",
    "ToolCallResult": "core.messages",
    "ToolContext": "core.tools",
    "ToolSpec": "core.tools",
    "Toolset": "core.tools",
    "current_tool_context": "core.tools",
    "tool": "core.tools",
}

__all__ = [
    "Agent",
    "AgentPlugin",
    "AgentRunHandle",
    "AgentRunResult",
    "RunStatus",
    "RunEvent",
    "ReplyText",
    "connect",
    "get_run",
    "Fallback",
    "MCPTool",
    "MCPToolset",
    "Model",
    "StdioServerInfo",
    "StreamableHttpServerInfo",
    "ChatMessage",
    "ChatRole",
    "State",
    "Tool",
    "ToolCall",
    "ToolCallResult",
    "ToolContext",
    "ToolSpec",
    "Toolset",
    "current_tool_context",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])

"""MCP tools' activities: list a server's tools once per run, and run one call.

Worker side: :class:`MCPActivities`, over the worker's :class:`MCPConnections` (the servers it was
given, ``runtime/mcp_servers.py``). The workflow side is ``workflows/mcp_tools.py``.

A call's failures the model can act on (the tool's own error, an unknown tool, arguments the
server refuses, a call past its ``invocation_timeout``) come back as error results. A server
that died comes back as a retryable failure: Temporal runs the attempt again and the worker
restarts the server for it.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeat import with_heartbeats
from activities.tool_invocation import ToolInvocationInput, ToolInvocationOutput, offload_in_activity
from core.mcp import (
    MCP_CALL_TOOL_ACTIVITY,
    MCP_LIST_TOOLS_ACTIVITY,
    MCP_SERVER_ERROR,
    MCPServerError,
    MCPSource,
    mcp_result_text,
)
from core.tools import ToolSpec


class MCPServerLost(Exception):
    """The server's connection closed during a request (the process died, the HTTP session ended)."""


class MCPCallRefused(Exception):
    """The server answered the call with a protocol error (an unknown tool, invalid arguments)."""


class MCPConnections(Protocol):
    """The MCP servers a worker holds (implemented by ``runtime.mcp_servers.MCPServers``)."""

    def serves(self, server: str) -> bool:
        """Whether this worker was given the server named ``server``."""
        ...

    async def list_tools(self, server: str, timeout: float) -> list[Any]:
        """The server's tools (``mcp_types.Tool``), starting or reconnecting it when needed.

        :raises core.mcp.MCPServerError: It cannot be started, reached or listed within ``timeout``.
        """
        ...

    async def call_tool(
        self, server: str, name: str, arguments: dict[str, Any], timeout: float, connect_timeout: float
    ) -> Any:
        """One ``tools/call`` (an ``mcp_types.CallToolResult``).

        :raises core.mcp.MCPServerError: The server cannot be started or reached.
        :raises MCPServerLost: The connection closed during the call (the server is restarted next time).
        :raises MCPCallRefused: A protocol error in answer (unknown tool, invalid parameters).
        :raises TimeoutError: No answer within ``timeout``.
        """
        ...


class MCPListInput(BaseModel):
    """Input of ``mcp_list_tools``: the recorded source of one toolset."""

    source: MCPSource


class MCPListOutput(BaseModel):
    """The toolset's tools as the model sees them, filtered by ``tool_names``."""

    tools: list[ToolSpec]


class MCPCallInput(BaseModel):
    """Input of ``mcp_call_tool``: which server, and the call as ``invoke_tool`` gets it."""

    source: MCPSource
    invocation: ToolInvocationInput


def listed_specs(source: MCPSource, tools: list[Any]) -> list[ToolSpec]:
    """The specs of ``tools`` that ``source`` asks for, in the server's order.

    :raises core.mcp.MCPServerError: A name in ``tool_names`` that the server does not list.
    """
    by_name = {t.name: t for t in tools}
    wanted = source.tool_names if source.tool_names is not None else list(by_name)
    missing = [n for n in wanted if n not in by_name]
    if missing:
        raise MCPServerError(
            f"MCP server `{source.server}` has no tool {', '.join(map(repr, missing))}; it offers "
            f"{', '.join(sorted(by_name)) or 'no tools'}. Fix tool_names=[...]."
        )
    return [
        ToolSpec(
            name=name,
            description=source.descriptions.get(name) or by_name[name].description or "",
            parameters=by_name[name].input_schema or {"type": "object", "properties": {}},
        )
        for name in by_name
        if name in wanted
    ]


class MCPActivities:
    """``mcp_list_tools`` and ``mcp_call_tool`` over the worker's servers.

    :param connections: The servers this worker was given (only those: a run names a server, the
        worker never starts one it was not configured with).
    """

    def __init__(self, connections: MCPConnections) -> None:
        self.connections = connections

    def _require_served(self, source: MCPSource) -> None:
        if not self.connections.serves(source.server):
            raise ApplicationError(
                f"This worker (task queue '{activity.info().task_queue}') was not given the MCP server "
                f"`{source.server}`: build it with create_worker(client, tools=[MCPToolset(...)]) "
                "with the same server info as the agent's.",
                type=MCP_SERVER_ERROR,
                non_retryable=True,
            )

    @activity.defn(name=MCP_LIST_TOOLS_ACTIVITY)
    async def list_mcp_tools(self, request: MCPListInput) -> MCPListOutput:
        """List the source's tools (the run records the answer, so a replay never reconnects).

        :raises ApplicationError: Non-retryable when the worker lacks the server or ``tool_names``
            names a tool the server does not list; retryable when the server cannot start.
        """
        source = request.source
        self._require_served(source)
        try:
            tools = await with_heartbeats(self.connections.list_tools(source.server, source.connection_timeout))
        except MCPServerError as err:
            raise ApplicationError(str(err), type=MCP_SERVER_ERROR) from err
        try:
            return MCPListOutput(tools=listed_specs(source, tools))
        except MCPServerError as err:
            raise ApplicationError(str(err), type=MCP_SERVER_ERROR, non_retryable=True) from err

    @activity.defn(name=MCP_CALL_TOOL_ACTIVITY)
    async def call_mcp_tool(self, request: MCPCallInput) -> ToolInvocationOutput:
        """Run one call of an MCP tool; offloads a big result itself when the run asks (as ``invoke_tool``).

        :raises ApplicationError: Retryable when the server died or cannot start (the next attempt
            restarts it); non-retryable when the worker lacks the server.
        """
        source, invocation = request.source, request.invocation
        self._require_served(source)
        call = invocation.tool_call
        where = f"MCP tool '{call.tool_name}' (server `{source.server}`)"
        try:
            result = await with_heartbeats(
                self.connections.call_tool(
                    source.server, call.tool_name, call.arguments, source.invocation_timeout, source.connection_timeout
                )
            )
        except TimeoutError:
            return ToolInvocationOutput(
                result=f"{where} did not answer within {source.invocation_timeout:g} s.", error=True
            )
        except MCPCallRefused as err:
            return ToolInvocationOutput(result=f"{where} refused the call: {err}", error=True)
        except (MCPServerLost, MCPServerError) as err:
            raise ApplicationError(f"{where}: {err}", type=MCP_SERVER_ERROR) from err
        text = mcp_result_text(result.content, getattr(result, "structured_content", None))
        if result.is_error:
            return ToolInvocationOutput(result=text or f"{where} failed without a message.", error=True)
        if invocation.offload is None:
            return ToolInvocationOutput(result=text)
        text, meta, error = await offload_in_activity(call.tool_name, text, invocation.offload)
        return ToolInvocationOutput(result=text, meta=meta, error=error)

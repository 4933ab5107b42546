"""MCP servers as tools: what an agent and a worker say about a Model Context Protocol server.

Names as Haystack's MCP integration (``mcp-haystack``): :class:`StdioServerInfo` and
:class:`StreamableHttpServerInfo` say how to reach a server, :class:`MCPToolset` offers its
tools (``tool_names`` filters them) and :class:`MCPTool` one of them. The same object goes to
``Agent(tools=[...])`` and to ``create_worker(client, tools=[...])``.

What travels in a run's history is an :class:`MCPSource`: the server's *name* (its command line,
or its URL) and the filter, never an environment value or a header (they may hold secrets). The
tool list is read once per run by an activity and recorded (``workflows/mcp_tools.py``), so a
replay never reconnects. The worker holds the full server info and starts or reaches the server
(``runtime/mcp_servers.py``); a run's source names a server the worker must have been given, so a
client can never make a worker start a command of its choosing.

Nothing here imports the ``mcp`` SDK (importing it loads its server side, starlette and uvicorn,
which a worker without MCP tools does not need).
"""

from __future__ import annotations

import json
import shlex
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: Activity names (the wire names a client's workflow and a worker agree on).
MCP_LIST_TOOLS_ACTIVITY = "mcp_list_tools"
MCP_CALL_TOOL_ACTIVITY = "mcp_call_tool"
#: ``ApplicationError.type`` of a run that failed because an MCP server could not list its tools.
MCP_SERVER_ERROR = "MCPServerError"

DEFAULT_CONNECTION_TIMEOUT = 30.0
DEFAULT_INVOCATION_TIMEOUT = 30.0


class MCPServerError(RuntimeError):
    """An MCP server could not be started, reached or listed; the message names its command or URL."""


class StdioServerInfo(BaseModel):
    """An MCP server the worker runs as a subprocess and talks to over stdin/stdout.

    :param command: The executable (found on ``PATH``), e.g. ``"mcp-server-time"``.
    :param args: Its arguments.
    :param env: Extra environment variables for the process (merged over a safe default set:
        ``HOME``, ``PATH``, ...). Used on the worker only; never recorded in a run's history.
    :param cwd: Working directory of the process.
    """

    model_config = ConfigDict(frozen=True)

    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None

    @property
    def transport(self) -> Literal["stdio"]:
        return "stdio"

    @property
    def server_name(self) -> str:
        """The command line: how errors, the history and the worker name this server."""
        return shlex.join([self.command, *self.args])


class StreamableHttpServerInfo(BaseModel):
    """An MCP server reached over streamable HTTP.

    :param url: The endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
    :param headers: HTTP headers sent with every request (authentication). Used on the worker
        only; never recorded in a run's history.
    :param token: Shorthand for ``headers={"Authorization": "Bearer <token>"}`` (``headers`` wins).
    :param timeout: Seconds for connecting and for each HTTP request but the server's event stream.
    """

    model_config = ConfigDict(frozen=True)

    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] | None = None
    token: str | None = None
    timeout: float = Field(default=DEFAULT_CONNECTION_TIMEOUT, gt=0)

    @property
    def transport(self) -> Literal["streamable_http"]:
        return "streamable_http"

    @property
    def server_name(self) -> str:
        """The URL: how errors, the history and the worker name this server."""
        return self.url

    def request_headers(self) -> dict[str, str]:
        """The headers every request carries."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return {**headers, **(self.headers or {})}


ServerInfo = StdioServerInfo | StreamableHttpServerInfo


class MCPSource(BaseModel):
    """What a run records of a toolset: which server, which of its tools, how long to wait.

    :param server: The server's name (``server_name``: its command line or URL).
    :param transport: ``"stdio"`` or ``"streamable_http"``.
    :param tool_names: The tools to offer the model; None: every tool the server lists.
    :param descriptions: Descriptions that replace the server's, by tool name (``MCPTool``).
    :param connection_timeout: Seconds to start or reach the server and list its tools.
    :param invocation_timeout: Seconds one tool call may take.
    """

    model_config = ConfigDict(frozen=True)

    server: str
    transport: Literal["stdio", "streamable_http"]
    tool_names: list[str] | None = None
    descriptions: dict[str, str] = Field(default_factory=dict)
    connection_timeout: float = DEFAULT_CONNECTION_TIMEOUT
    invocation_timeout: float = DEFAULT_INVOCATION_TIMEOUT


class MCPToolset:
    """The tools of one MCP server, as Haystack's ``MCPToolset``.

    Give the same object to the agent (``Agent(tools=[toolset])``: each run lists the tools once)
    and to the worker (``create_worker(client, tools=[toolset])``: it starts or reaches the server
    and runs each call).

    :param server_info: A :class:`StdioServerInfo` or :class:`StreamableHttpServerInfo`.
    :param tool_names: Only these tools; None (default): all the server lists. A name the server
        does not list fails the worker's start (and a run's listing), naming what it offers.
    :param connection_timeout: Seconds to start or reach the server and list its tools.
    :param invocation_timeout: Seconds one tool call may take; past it the model gets an error.
    :raises ValueError: For a server info of another type, an empty or repeated ``tool_names``,
        or a timeout that is not positive.
    """

    def __init__(
        self,
        server_info: ServerInfo,
        tool_names: list[str] | None = None,
        connection_timeout: float = DEFAULT_CONNECTION_TIMEOUT,
        invocation_timeout: float = DEFAULT_INVOCATION_TIMEOUT,
    ) -> None:
        if not isinstance(server_info, (StdioServerInfo, StreamableHttpServerInfo)):
            raise ValueError(f"server_info must be a StdioServerInfo or StreamableHttpServerInfo, got {server_info!r}.")
        if tool_names is not None:
            if isinstance(tool_names, str) or not tool_names or len(set(tool_names)) != len(tool_names):
                raise ValueError(f"tool_names must be a non-empty list of distinct names, or None; got {tool_names!r}.")
        for label, value in (("connection_timeout", connection_timeout), ("invocation_timeout", invocation_timeout)):
            if not value > 0:
                raise ValueError(f"{label} must be a positive number of seconds, got {value!r}.")
        self.server_info = server_info
        self.tool_names = list(tool_names) if tool_names is not None else None
        self.connection_timeout = float(connection_timeout)
        self.invocation_timeout = float(invocation_timeout)
        self.descriptions: dict[str, str] = {}

    @property
    def server_name(self) -> str:
        """The server's command line or URL."""
        return self.server_info.server_name

    def source(self) -> MCPSource:
        """What a run records of this toolset (no environment values, no headers)."""
        return MCPSource(
            server=self.server_name,
            transport=self.server_info.transport,
            tool_names=self.tool_names,
            descriptions=self.descriptions,
            connection_timeout=self.connection_timeout,
            invocation_timeout=self.invocation_timeout,
        )

    def __repr__(self) -> str:
        names = f", tool_names={self.tool_names!r}" if self.tool_names is not None else ""
        return f"{type(self).__name__}({self.server_name!r}{names})"


class MCPTool(MCPToolset):
    """One tool of an MCP server, as Haystack's ``MCPTool``: a toolset of that one tool.

    :param name: The tool's name on the server.
    :param server_info: How to reach the server.
    :param description: Replaces the server's description of the tool, when given.
    :param connection_timeout: As :class:`MCPToolset`.
    :param invocation_timeout: As :class:`MCPToolset`.
    :raises ValueError: As :class:`MCPToolset`, or for an empty name.
    """

    def __init__(
        self,
        name: str,
        server_info: ServerInfo,
        description: str | None = None,
        connection_timeout: float = DEFAULT_CONNECTION_TIMEOUT,
        invocation_timeout: float = DEFAULT_INVOCATION_TIMEOUT,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"MCPTool needs the tool's name, got {name!r}.")
        super().__init__(server_info, [name], connection_timeout, invocation_timeout)
        self.name = name
        if description:
            self.descriptions = {name: description}


def split_mcp(tools: list[Any] | None) -> tuple[list[Any], list[Any]]:
    """``tools`` parted into (everything else, the MCP toolsets and recorded sources), in order."""
    others: list[Any] = []
    mcp: list[Any] = []
    for item in tools or []:
        (mcp if isinstance(item, (MCPToolset, MCPSource)) else others).append(item)
    return others, mcp


def mcp_result_text(content: list[Any], structured: Any = None) -> str:
    """What the model sees of an MCP tool's result: its text blocks, one a line; any other block
    (an image, a resource) as its JSON; the structured content when there is no block at all."""
    parts: list[str] = []
    for block in content:
        text = getattr(block, "text", None)
        if getattr(block, "type", None) == "text" and isinstance(text, str):
            parts.append(text)
        else:
            dump = getattr(block, "model_dump_json", None)
            parts.append(dump(by_alias=True, exclude_none=True) if dump else str(block))
    if not parts and structured is not None:
        return structured if isinstance(structured, str) else json.dumps(structured, default=str)
    return "\n".join(parts)

"""The MCP servers of one worker: one connection per distinct server, shared by every run and call.

How many live, and when they stop:

- **stdio**: one process per distinct server (its command line) per worker process, however many
  toolsets, runs and concurrent calls use it (an MCP session answers concurrent requests). It
  starts when the worker starts (so a command that cannot start stops the worker at once, named),
  is restarted by the next call or listing after it dies, and is stopped when the worker shuts
  down (stdin closed, then SIGTERM, then SIGKILL, each wait bounded by the SDK).
- **streamable HTTP**: one session per distinct URL per worker, opened at worker start, reopened
  after the connection is lost, closed at shutdown.

Every wait is bounded: starting and listing by the toolset's ``connection_timeout``, a call by its
``invocation_timeout``.

``mcp`` is imported inside the functions that connect: ``import mcp`` loads the SDK's server side
too (starlette, uvicorn), which a worker without MCP tools must not load.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from temporalio.plugin import SimplePlugin
from temporalio.worker import Worker

from activities.mcp import MCPCallRefused, MCPServerLost, listed_specs
from core.mcp import MCPServerError, MCPToolset, ServerInfo, StdioServerInfo
from runtime.worker_start import release_shutdown_waiters

logger = logging.getLogger(__name__)

#: JSON-RPC's "connection closed" code, which the SDK raises for every request once the server's
#: stream has ended (a stdio server that exited, an HTTP session that was lost).
CONNECTION_CLOSED = -32000
#: JSON-RPC's "invalid request", and the words of a streamable HTTP server that no longer knows the
#: session (it restarted, or dropped an idle one): the session is gone, a new one is opened.
INVALID_REQUEST = -32600
SESSION_GONE = ("Session not found", "Session terminated")


class _Connection:
    """One server's live client session, held open by its own task (the SDK's transports are
    task-scoped: the task that enters them must exit them)."""

    def __init__(self, info: ServerInfo) -> None:
        self.info = info
        self.name = info.server_name
        self.client: Any = None
        self.starts = 0
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock = asyncio.Lock()

    def _transport(self) -> Any:
        import mcp  # here, not at the top: see the module docstring
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        if isinstance(self.info, StdioServerInfo):
            return mcp.StdioServerParameters(
                command=self.info.command, args=self.info.args, env=self.info.env, cwd=self.info.cwd
            )
        http = create_mcp_http_client(headers=self.info.request_headers())
        return streamable_http_client(self.info.url, http_client=http), http

    async def _hold(self, ready: asyncio.Future[Any], stop: asyncio.Event) -> None:
        import mcp

        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = self._transport()
                if isinstance(transport, tuple):  # streamable HTTP: the httpx client closes last
                    transport, http = transport
                    await stack.enter_async_context(http)
                client = await stack.enter_async_context(mcp.Client(transport, mode="legacy"))
                if not ready.done():
                    ready.set_result(client)
                await stop.wait()
        except BaseException as err:
            if not ready.done():
                ready.set_exception(err)
            elif not isinstance(err, asyncio.CancelledError):
                logger.warning("MCP server `%s` closed with an error: %r", self.name, err)

    async def get(self, timeout: float) -> Any:
        """The live client, starting the server first when it is not running.

        :raises core.mcp.MCPServerError: It does not start or answer the handshake within ``timeout``.
        """
        async with self._lock:
            if self.client is not None:
                return self.client
            await self._close_task()
            ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._task = asyncio.create_task(self._hold(ready, self._stop), name=f"mcp-server {self.name}")
            self.starts += 1
            try:
                self.client = await asyncio.wait_for(asyncio.shield(ready), timeout)
            except TimeoutError:
                await self._close_task()
                raise MCPServerError(
                    f"MCP server `{self.name}` did not start and answer within {timeout:g} s"
                ) from None
            except Exception as err:
                await self._close_task()
                raise MCPServerError(f"MCP server `{self.name}` could not be started: {_describe(err)}") from err
            return self.client

    def lost(self, client: Any) -> None:
        """Forget ``client`` (its connection closed); the next :meth:`get` starts the server again."""
        if self.client is client:
            self.client = None
            if self._stop is not None:
                self._stop.set()

    async def _close_task(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        if self._stop is not None:
            self._stop.set()
        try:  # the SDK bounds its own shutdown (stdin close, SIGTERM, SIGKILL: about 6 s at most)
            await asyncio.wait_for(task, 10)
        except BaseException:
            task.cancel()

    async def close(self) -> None:
        async with self._lock:
            self.client = None
            await self._close_task()


def _describe(err: BaseException) -> str:
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in err.exceptions)
    return f"{type(err).__name__}: {err}"


class MCPServers:
    """The MCP servers a worker was given, by name (``server_name``: command line or URL).

    :param toolsets: The worker's toolsets; two with one server share its connection.
    :raises ValueError: Two toolsets name one server with different settings (env, headers, cwd), or
        an item is not an ``MCPToolset`` (a recorded ``MCPSource`` has no server info to start).
    """

    def __init__(self, toolsets: list[MCPToolset]) -> None:
        for toolset in toolsets:
            if not isinstance(toolset, MCPToolset):
                raise ValueError(f"{toolset!r} is not an MCPToolset; a worker needs the server info to start it.")
        self.toolsets = list(toolsets)
        self.connections: dict[str, _Connection] = {}
        for toolset in self.toolsets:
            existing = self.connections.get(toolset.server_name)
            if existing is None:
                self.connections[toolset.server_name] = _Connection(toolset.server_info)
            elif existing.info != toolset.server_info:
                raise ValueError(
                    f"Two MCP toolsets name the server `{toolset.server_name}` with different settings; "
                    "give both the same server info."
                )

    def serves(self, server: str) -> bool:
        return server in self.connections

    def _connection(self, server: str) -> _Connection:
        connection = self.connections.get(server)
        if connection is None:
            raise MCPServerError(f"This worker was not given the MCP server `{server}`.")
        return connection

    async def start(self) -> None:
        """Start (or reach) every server and list its tools, each within its toolset's
        ``connection_timeout``, all at once.

        :raises core.mcp.MCPServerError: The first server that fails, named, with the cause; or a
            toolset whose ``tool_names`` the server does not list. Servers already started are stopped.
        """
        results = await asyncio.gather(*(self._check(t) for t in self.toolsets), return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            await self.stop()
            raise failures[0]

    async def _check(self, toolset: MCPToolset) -> None:
        tools = await self.list_tools(toolset.server_name, toolset.connection_timeout)
        listed_specs(toolset.source(), tools)

    async def stop(self) -> None:
        """Stop every server (bounded waits); idempotent."""
        await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)

    async def list_tools(self, server: str, timeout: float) -> list[Any]:
        connection = self._connection(server)
        try:
            async with asyncio.timeout(timeout):
                client = await connection.get(timeout)
                tools: list[Any] = []
                cursor = None
                while True:  # pages, at most 100 of them (a server that never ends its listing cannot hang a run)
                    page = await self._request(connection, client, client.list_tools(cursor=cursor))
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None or len(tools) > 100_000:
                        return tools
        except TimeoutError:
            raise MCPServerError(f"MCP server `{server}` did not list its tools within {timeout:g} s") from None
        except (MCPServerLost, MCPCallRefused) as err:
            raise MCPServerError(f"MCP server `{server}` failed to list its tools: {err}") from err

    async def call_tool(
        self, server: str, name: str, arguments: dict[str, Any], timeout: float, connect_timeout: float
    ) -> Any:
        connection = self._connection(server)
        client = await connection.get(connect_timeout)
        async with asyncio.timeout(timeout):
            return await self._request(connection, client, client.call_tool(name, arguments))

    @staticmethod
    async def _request(connection: _Connection, client: Any, request: Awaitable[Any]) -> Any:
        from mcp import MCPError  # here, not at the top: see the module docstring

        try:
            return await request
        except MCPError as err:
            if err.code == CONNECTION_CLOSED or (
                err.code == INVALID_REQUEST and any(w in str(err) for w in SESSION_GONE)
            ):
                connection.lost(client)
                raise MCPServerLost(f"the connection to the server closed ({err}); it is restarted") from err
            raise MCPCallRefused(str(err)) from err
        except (OSError, EOFError) as err:
            connection.lost(client)
            raise MCPServerLost(f"{type(err).__name__}: {err}") from err


class MCPServersPlugin(SimplePlugin):
    """A worker's MCP servers: started before the worker polls, stopped when it shuts down.

    :param servers: The worker's servers.
    """

    def __init__(self, servers: MCPServers) -> None:
        self.servers = servers
        super().__init__("durable-agent.MCPServers", run_context=self._serve)

    @contextlib.asynccontextmanager
    async def _serve(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await self.servers.stop()

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Start the servers, then run the worker; a server that cannot start stops it at once
        (``async with worker`` raises the :class:`~core.mcp.MCPServerError`)."""
        try:
            await self.servers.start()
        except BaseException:
            release_shutdown_waiters(worker)
            raise
        await super().run_worker(worker, next)

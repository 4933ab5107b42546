"""Fixtures of the MCP tests: a worker with the time server (stdio) and our HTTP server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from core.mcp import MCPToolset, StreamableHttpServerInfo
from tests.support.mcp_servers import TIME_SERVER, HttpServer, http_server, venv_bin_on_path
from tests.tools import TEST_TOOLS
from worker import create_worker

venv_bin_on_path()

TIME = MCPToolset(TIME_SERVER)


@pytest.fixture(scope="session")
def http() -> Iterator[HttpServer]:
    with http_server() as server:
        yield server


@pytest.fixture(scope="session")
def http_toolset(http: HttpServer) -> MCPToolset:
    return MCPToolset(StreamableHttpServerInfo(url=http.url, token=http.token))


@pytest.fixture(scope="session")
async def mcp_queue(client, http_toolset) -> AsyncIterator[str]:
    """A worker with the test tools, the time server and our HTTP server; yields its queue."""
    queue = f"mcp-{uuid.uuid4().hex[:8]}"
    async with create_worker(client, tools=[*TEST_TOOLS, TIME, http_toolset], task_queue=queue):
        yield queue

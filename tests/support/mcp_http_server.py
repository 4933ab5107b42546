"""An MCP server over streamable HTTP, built with the ``mcp`` SDK, that asks for a bearer token.

``python -m tests.support.mcp_http_server TOKEN [PORT]`` binds PORT (default: a free one) on 127.0.0.1, prints
``ready PORT`` and serves ``/mcp`` until it is stopped. A request without
``Authorization: Bearer TOKEN`` gets 401, so a test sees that the worker's headers arrive.
Tools: ``add``, ``echo``, ``big`` (a long text, for offloading) and ``slow`` (for timeouts).
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("test-http-server")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def big(n: int) -> str:
    """A text of n characters."""
    return "x" * n


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after the given number of seconds."""
    await asyncio.sleep(seconds)
    return "late"


def bearer_only(app: Any, token: str) -> Any:
    """The ASGI app, answering 401 to any HTTP request without the bearer token."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
            return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    token = sys.argv[1]
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restarted server takes its old port again
    sock.bind(("127.0.0.1", int(sys.argv[2]) if len(sys.argv) > 2 else 0))
    app = bearer_only(server.streamable_http_app(), token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    sock.listen(128)  # connections wait in the backlog from now on, before uvicorn accepts them
    print(f"ready {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()

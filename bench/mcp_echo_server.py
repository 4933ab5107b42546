"""The MCP benchmark's server: one ``mcp_echo`` tool, as ``bench.workloads.echo`` is one plain tool.

``python -m bench.mcp_echo_server stdio`` serves it over stdin/stdout; ``python -m
bench.mcp_echo_server http`` binds a free port on 127.0.0.1, prints ``ready PORT`` and serves
``/mcp`` over streamable HTTP until it is stopped.
"""

from __future__ import annotations

import socket
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-echo")


@server.tool()
def mcp_echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def main() -> None:
    if sys.argv[1:] == ["stdio"]:
        server.run("stdio")
        return
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog from now on, before uvicorn accepts them
    print(f"ready {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()

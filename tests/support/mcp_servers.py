"""MCP servers for the tests: the PyPI servers over stdio (their commands on ``PATH``), our own
streamable HTTP server in a subprocess, and a look at a process's live MCP server children."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from core.mcp import StdioServerInfo

#: ``mcp-server-time`` and ``mcp-server-git`` are console scripts of the test extra, next to the
#: interpreter; the tests name them by their bare command, as a person with the venv active does.
VENV_BIN = str(Path(sys.executable).parent)
TIME_SERVER = StdioServerInfo(command="mcp-server-time", args=["--local-timezone", "UTC"])


def venv_bin_on_path() -> None:
    """Put the interpreter's directory first on ``PATH`` (a no-op when it is there)."""
    parts = os.environ.get("PATH", "").split(os.pathsep)
    if VENV_BIN not in parts:
        os.environ["PATH"] = os.pathsep.join([VENV_BIN, *parts])


@dataclass
class HttpServer:
    """Our streamable HTTP MCP server (``tests/support/mcp_http_server.py``)."""

    url: str
    token: str
    process: subprocess.Popen[str]


@contextmanager
def http_server(token: str | None = None, port: int | None = None) -> Iterator[HttpServer]:
    """Start the server on ``port`` (default: a free loopback port); stop it (by its PID) at the end.

    :param token: The bearer token it asks for (default: a fresh one).
    """
    token = token or secrets.token_hex(8)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.mcp_http_server", token, *([str(port)] if port else [])],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        line = process.stdout.readline() if process.stdout else ""
        if not line.startswith("ready "):
            raise RuntimeError(f"the MCP HTTP server did not start: {line!r}")
        yield HttpServer(f"http://127.0.0.1:{int(line.split()[1])}/mcp", token, process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def server_children(command: str, parent: int | None = None) -> list[int]:
    """PIDs of live child processes of ``parent`` (this process by default) whose command line
    holds ``command`` (Linux /proc)."""
    parent = os.getpid() if parent is None else parent
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == parent and fields[0] != "Z" and command in cmdline:
            found.append(int(entry.name))
    return found

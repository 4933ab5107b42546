"""Loopback ports and executables of the dev tooling: pick a free port, fail early on a taken
one, remember a port across restarts, find a console executable a PyPI package installed."""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

from agent.dev.processes import DevServerError

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it; another process may take it later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def ensure_port_free(port: int, what: str, host: str = LOOPBACK, *, hint: str | None = None) -> None:
    """Fail early when something already listens on ``host:port`` (a readiness probe would reach it instead).

    :param hint: Appended to the error message, e.g. how to choose another port.
    :raises DevServerError: When the port is taken.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Same semantics as the servers' own listeners: TIME_WAIT leftovers of a stopped server are no conflict.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as err:
            message = f"Port {port} on {host} ({what}) is already in use: {err.strerror}."
            raise DevServerError(f"{message} {hint}" if hint else message) from err


def find_executable(name: str, package: str) -> str:
    """The path of a console executable installed by a PyPI package.

    Looks next to ``sys.executable`` first (the active virtualenv's ``bin``), then on ``PATH``.

    :param name: Executable name, e.g. ``"temporal"``.
    :param package: The PyPI package that provides it, named in the error.
    :raises DevServerError: When it is in neither place.
    """
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found:
        return found
    raise DevServerError(
        f"The {name!r} executable was not found next to {sys.executable} or on PATH. "
        f"Install the development extra, which brings {package}: pip install 'durable-agent[dev]'"
    )


def port_open(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def read_port_file(path: Path) -> int | None:
    """The port remembered in ``path`` (one integer), or ``None`` (no file, or not a valid port)."""
    try:
        port = int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None
    return port if 0 < port < 65536 else None


def write_port_file(path: Path, port: int) -> None:
    """Remember ``port`` in ``path`` for the next start (so an ``env.sh`` naming it stays valid)."""
    Path(path).write_text(f"{port}\n")

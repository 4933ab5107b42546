"""Run the inbox app with uvicorn inside the caller's event loop (``agent inbox``, ``agent dev``,
the browser tests), so it shares the loop, and the Temporal client, with everything else."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

#: ``agent inbox``'s default port.
DEFAULT_PORT = 8765


class InboxBindError(RuntimeError):
    """The inbox's address cannot be bound."""


class _EmbeddedServer(uvicorn.Server):
    """uvicorn without its signal handlers: the host process (``agent dev``, pytest) owns Ctrl-C."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class InboxServer:
    """uvicorn serving ``app`` on ``host:port`` as a task of the running loop.

    :param app: The app from :func:`agent.inbox.create_app`.
    :param host: Address to bind (127.0.0.1 by default: reach it from elsewhere through a proxy).
    :param port: Port; 0 picks a free one (read :attr:`url` after :meth:`start`).
    :param name: What it serves, for errors and the task's name (the codec server reuses it).
    """

    def __init__(self, app: Starlette, host: str = "127.0.0.1", port: int = DEFAULT_PORT, name: str = "inbox") -> None:
        self.app = app
        self.name = name
        self.host = host
        self.port = port
        self._server: _EmbeddedServer | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` once started."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> InboxServer:
        """Bind and start serving; returns once the socket listens.

        :raises InboxBindError: If the address cannot be bound (a port taken, an unknown host).
        """
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as exc:
            sock.close()
            raise InboxBindError(
                f"The {self.name} cannot listen on {self.host}:{self.port}: {exc.strerror or exc}. Choose another --port."
            ) from exc
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = _EmbeddedServer(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]), name=f"agent-{self.name}")
        while not self._server.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
            await asyncio.sleep(0.01)
        return self

    async def stop(self) -> None:
        """Stop serving and wait for the task to end."""
        if self._server is None or self._task is None:
            return
        self._server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._server = self._task = None

    async def __aenter__(self) -> InboxServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

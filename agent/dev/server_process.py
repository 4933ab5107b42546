"""A server run as one managed child process (the Temporal dev server, moto's S3 server)."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Self

from agent.dev.processes import ChildProcess


class ProcessBackedServer:
    """A server run as one managed child process: start, stop, PID, liveness, log file.

    Subclasses provide ``launch()`` and ``wait_ready()``.
    """

    _process: ChildProcess

    def launch(self) -> None:
        raise NotImplementedError

    def wait_ready(self, timeout: float | None = None) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        """Launch the server and wait until it is ready. Returns ``self``.

        :raises DevServerError: As ``wait_ready`` (the half-started process is stopped first).
        """
        self.launch()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server by PID (SIGTERM, then SIGKILL after ``timeout`` seconds). Idempotent."""
        self._process.stop(timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @property
    def process(self) -> ChildProcess:
        """The child process (for :mod:`agent.dev.supervision`)."""
        return self._process

    @property
    def running(self) -> bool:
        return self._process.running

    @property
    def log_file(self) -> Path:
        return self._process.log_file

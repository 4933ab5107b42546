"""A worker process that a test can freeze (SIGSTOP) and thaw (SIGCONT) by its PID: the server still
sees it as polling (its last poll was recent), but it takes nothing, as a worker stuck in a long
pause, a debugger or a swapped-out machine does."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from agent.dev.processes import ChildProcess, start_worker

#: What a deadline may overrun by: a tenth of it for the event loop and the page, plus 2 s for a
#: shared, busy test machine.
MARGIN_FRACTION, MARGIN_SECONDS = 0.1, 2.0


def bound(deadline: float) -> float:
    """The most a call with ``deadline`` seconds may take, margin included."""
    return deadline * (1 + MARGIN_FRACTION) + MARGIN_SECONDS


@dataclass
class FrozenWorker:
    """A ``python worker.py`` child serving ``tests.tools.TEST_TOOLS`` on ``task_queue``."""

    process: ChildProcess
    task_queue: str

    def freeze(self) -> None:
        """SIGSTOP the worker by its PID."""
        assert self.process.pid is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT the worker by its PID."""
        if self.process.pid is not None:
            os.kill(self.process.pid, signal.SIGCONT)


@contextlib.asynccontextmanager
async def worker_to_freeze(log_dir: Path, task_queue: str) -> AsyncIterator[FrozenWorker]:
    """Start the worker (waiting until it polls); thaw and stop it by PID at the end."""
    process = await asyncio.to_thread(start_worker, log_dir / f"{task_queue}.log", "tests.tools.TEST_TOOLS", task_queue)
    worker = FrozenWorker(process, task_queue)
    try:
        yield worker
    finally:
        with contextlib.suppress(ProcessLookupError):
            worker.thaw()
        await asyncio.to_thread(process.stop)

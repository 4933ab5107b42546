"""Workers in their own processes (``python worker.py --tools tests.tools.TEST_TOOLS``), for
tests that ``kill -9`` one and start another."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def spawn_worker(queue: str, log: Path, env: dict[str, str] | None = None, wait_ready: bool = True) -> subprocess.Popen:
    """Start a worker with the test tools on ``queue`` (environment: this process's plus ``env``).

    :param wait_ready: Return only once the worker prints ``worker ready`` (it polls); with
        False return at once, so a measurement can include the worker's start-up.
    """
    command = [sys.executable, str(ROOT / "worker.py"), "--tools", "tests.tools.TEST_TOOLS", "--task-queue", queue]
    with log.open("ab") as out:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            stdout=subprocess.PIPE if wait_ready else out,
            stderr=out,
        )
    if wait_ready:
        line = process.stdout.readline().decode()
        if not line.startswith("worker ready"):
            process.kill()
            process.wait()
            raise AssertionError(f"worker did not start: {line!r}; log: {log.read_text()[-2000:]}")
    return process


def stop_worker(process: subprocess.Popen) -> None:
    """SIGTERM (graceful shutdown), then SIGKILL if it has not exited within 15 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

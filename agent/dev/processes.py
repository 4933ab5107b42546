"""Child processes of the dev tooling, in one place: the Temporal dev server, moto's S3 server
and workers (``python worker.py``) for the demo and the crash tests.

Each is started in its own session (Ctrl-C in a terminal reaches only the parent, which stops
the children in order), logs to a file, and is stopped by PID: SIGTERM, a wait, then SIGKILL.
On Linux a child also gets SIGTERM if the parent dies, so a crashed run leaves no servers behind.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

#: The repository root, where ``worker.py`` lives.
ROOT = Path(__file__).parents[2]  # no resolve(): workflow sandboxes may import this module


class DevServerError(RuntimeError):
    """A child process could not be started, or did not become ready."""


def _set_parent_death_signal() -> None:
    """Linux: the child gets SIGTERM if the parent dies (so a crashed test run leaves no servers behind)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # best effort, not available everywhere
        pass


class ChildProcess:
    """A child process with a log file, started in its own session and stopped by PID."""

    def __init__(self, name: str, log_file: Path | None) -> None:
        self._name = name
        if log_file is None:
            fd, path = tempfile.mkstemp(prefix=f"{name}-", suffix=".log")
            os.close(fd)
            log_file = Path(path)
        self.log_file = Path(log_file)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """PID of the running process, or ``None`` when it is not running."""
        return self._proc.pid if self.running else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def died(self) -> tuple[int, int] | None:
        """``(pid, exit code)`` when the process exited by itself (not by :meth:`stop` or
        :meth:`kill`, which forget it); None while it runs or after it was stopped."""
        if self._proc is None or self._proc.poll() is None:
            return None
        return self._proc.pid, self._proc.returncode

    def last_lines(self, count: int = 8) -> list[str]:
        """The last ``count`` non-empty lines it wrote since its last launch."""
        lines = [line for line in self._log_since_launch().splitlines() if line.strip()]
        if lines and lines[0].startswith("--- "):  # the launch's own header line
            lines = lines[1:]
        return lines[-count:]

    def launch(self, command: list[str], env: dict[str, str], cwd: Path | None = None) -> int:
        """Start ``command`` with ``env``; returns its PID.

        :raises DevServerError: If it is already running.
        """
        if self.running:
            raise DevServerError(f"{self._name} is already running (pid {self._proc.pid}).")
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "ab") as log:
            log.write(f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(command)}\n".encode())
            log.flush()
            # PR_SET_PDEATHSIG fires when the *thread* that forked exits, so only use it from the main thread.
            preexec = (
                _set_parent_death_signal
                if (sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread())
                else None
            )
            self._proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=preexec,
                cwd=cwd,
            )
        return self._proc.pid

    def check_alive(self) -> None:
        """:raises DevServerError: If the process has exited (with the tail of its log)."""
        if self._proc is not None and self._proc.poll() is not None:
            raise DevServerError(
                f"{self._name} exited with code {self._proc.returncode} while starting.\n{self.log_tail()}"
            )

    def kill(self) -> int | None:
        """SIGKILL the process by PID (a crash, for drills and the demo); returns its exit status."""
        proc, self._proc = self._proc, None
        if proc is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        return proc.wait(timeout=15)

    def wait_for_line(self, prefix: str, timeout: float = 60.0) -> str:
        """Wait until a line of the log (written since the last launch) starts with ``prefix``.

        :raises DevServerError: If the process exits or ``timeout`` seconds pass first.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self._log_since_launch().splitlines():
                if line.startswith(prefix):
                    return line
            self.check_alive()
            time.sleep(0.05)
        raise DevServerError(
            f"{self._name} printed no line starting with {prefix!r} in {timeout} s.\n{self.log_tail()}"
        )

    def _log_since_launch(self) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return ""
        return text[text.rfind("\n--- ") :] if "\n--- " in text else text

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process by PID, wait up to ``timeout`` seconds, then SIGKILL it. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the process log, labelled with its path."""
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return f"(no log at {self.log_file})"
        tail = "\n".join(text.splitlines()[-lines:])
        return f"--- last lines of {self.log_file} ---\n{tail}"


def start_worker(
    log_file: Path,
    tools: str | None = None,
    task_queue: str | None = None,
    env: dict[str, str] | None = None,
    wait_ready: bool = True,
) -> ChildProcess:
    """Start ``python worker.py`` as a child process (environment: this process's plus ``env``).

    :param log_file: Where its output goes (appended).
    :param tools: Its ``--tools`` spec, ``module:attr`` (default: the demo's tools).
    :param task_queue: Its task queue (default: ``AGENT_TASK_QUEUE`` or ``agent``).
    :param wait_ready: Return once it prints ``worker ready`` (it polls); with False return at
        once, so a measurement can include the worker's start-up.
    :raises DevServerError: If it exits or prints nothing within a minute while being waited for.
    """
    command = [sys.executable, str(ROOT / "worker.py")]
    if tools:
        command += ["--tools", tools]
    if task_queue:
        command += ["--task-queue", task_queue]
    process = ChildProcess("worker", log_file)
    process.launch(command, {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}, cwd=ROOT)
    if wait_ready:
        try:
            process.wait_for_line("worker ready")
        except BaseException:
            process.stop()
            raise
    return process

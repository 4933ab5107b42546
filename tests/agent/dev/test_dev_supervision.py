"""``agent dev`` watches its children: a worker that cannot start (an MCP server command that does not
exist) or a Temporal server killed by PID is said on the console at once, with its last log lines,
and ``agent dev`` keeps running; a fixed file brings the worker back."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.dev.test_agent_dev import DevProcess, _clean_env, _dev_command

pytestmark = pytest.mark.integration  # starts agent dev and its servers itself

BROKEN = """
from agent import Agent, MCPToolset, StdioServerInfo

clock = MCPToolset(StdioServerInfo(command="no-such-mcp-server-xyz"))
agent = Agent(model="user-model", tools=[clock])
"""

FIXED = """
from agent import Agent, tool


@tool
def now() -> str:
    \"\"\"The time.\"\"\"
    return "noon"


agent = Agent(model="user-model", tools=[now])
"""


def _start(project: Path) -> DevProcess:
    process = subprocess.Popen(
        _dev_command(project / ".agent-dev", "--agent", "mine:agent"),
        cwd=project,
        env=_clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    dev = DevProcess(process, project / ".agent-dev")

    def pump() -> None:
        for line in process.stdout:
            dev._queue.put(line)
        dev._queue.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return dev


@pytest.fixture
def dev_with(tmp_path: Path) -> Iterator[tuple[Path, list[DevProcess]]]:
    project = tmp_path / "project"
    project.mkdir()
    started: list[DevProcess] = []
    yield project, started
    for dev in started:
        dev.process.send_signal(signal.SIGINT)
        try:
            dev.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            dev.process.kill()
            dev.process.wait()


def _temporal_pid(data_dir: Path) -> int:
    """The PID of the dev Temporal server agent dev started on ``data_dir`` (its command names the db)."""
    db = str(data_dir / "temporal.db")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(part.decode(errors="replace") == db for part in command) and b"start-dev" in command:
            return int(entry.name)
    raise AssertionError(f"no Temporal server with {db} is running")


@pytest.mark.slow
def test_a_worker_whose_mcp_server_cannot_start_is_said_at_once_and_a_fix_brings_it_back(dev_with) -> None:
    project, started = dev_with
    (project / "mine.py").write_text(BROKEN)
    dev = _start(project)
    started.append(dev)
    died = dev.read_until("agent dev: the worker (pid ")
    assert "exited with code 1. Its last lines (" in died, died
    cause = dev.read_until("  | worker: MCP server")
    assert "no-such-mcp-server-xyz" in cause and "could not be started: FileNotFoundError" in cause, cause
    dev.read_until("agent dev: Fix the cause and save a *.py file under")
    waiting = dev.read_until("Worker: not running")
    assert not any(line.startswith("Worker polling") for line in dev.lines), "".join(dev.lines)
    assert "it failed to start" in waiting
    assert dev.process.poll() is None  # still up

    (project / "mine.py").write_text(FIXED)
    reloaded = dev.read_until("Reloaded the worker", timeout=90)
    assert "mine.py" in reloaded

    # The Temporal server killed by PID: said at once, agent dev goes on.
    pid = _temporal_pid(dev.data_dir)
    os.kill(pid, signal.SIGKILL)
    began = time.monotonic()
    gone = dev.read_until("agent dev: the Temporal server (pid ", timeout=30)
    assert f"(pid {pid}) was killed by signal 9" in gone, gone
    assert time.monotonic() - began < 10
    dev.read_until("agent dev: Runs wait, kept in ")
    assert dev.process.poll() is None
    dev.process.send_signal(signal.SIGINT)
    assert dev.process.wait(timeout=60) == 0, "".join(dev.lines)

"""``agent dev --agent module:attr`` as a newcomer runs it, from their own project folder: the worker
serves their tools, reloads when their file changes, a second shell reaches everything through
``env.sh`` alone, and a second ``agent dev`` on the same data directory refuses at once."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent.dev.env_file import read_env_file
from agent.dev.lock import LOCK_FILE
from agent.dev.processes import ROOT
from agent.dev.stack import free_port

pytestmark = pytest.mark.integration  # starts agent dev and its servers itself

#: Long enough for the dev server, moto and the worker to start on two shared cores.
START_SECONDS = 150

TOOL_MODULE = '''
from agent import Agent, tool


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path} ({VERSION})"


@tool
def not_served(path: str) -> str:
    """A tool of another agent, which this worker does not serve."""
    return "never"


VERSION = "v1"
support = Agent(model="user-model", tools=[delete_file])
other = Agent(model="other-model", tools=[not_served])
'''

#: A second shell: only env.sh tells it where Temporal, the queue and the scripted model are.
CLIENT_SCRIPT = """
import asyncio, json, os, sys, urllib.request
sys.path.insert(0, os.getcwd())  # the project folder, where myagent.py is
from agent import ChatMessage, connect
from temporalio.client import WorkflowFailureError
import myagent


async def main(attr, model, tool_name):
    base = os.environ["OPENAI_BASE_URL"].removesuffix("/v1")
    script = {"responses": [{"tool_calls": [{"name": tool_name, "arguments": {"path": "notes.txt"}}]}]}
    request = urllib.request.Request(f"{base}/_scripted/scripts/{model}", json.dumps(script).encode(), method="PUT")
    urllib.request.urlopen(request, timeout=10).read()
    client = await connect()
    agent = getattr(myagent, attr)
    handle = await agent.start(client, [ChatMessage.from_user("tidy up")], run_id=f"run-{os.getpid()}",
                               task_queue=os.environ["AGENT_TASK_QUEUE"])
    try:
        result = await asyncio.wait_for(handle.result(), 90)
    except WorkflowFailureError as err:
        print("FAILED:", err.cause.message, flush=True)
        return
    print("ANSWER:", result.last_message.text, flush=True)

asyncio.run(main(*sys.argv[1:]))
os._exit(0)  # temporalio's native runtime can abort in interpreter shutdown, as agent.cli notes
"""


@dataclass
class DevProcess:
    """A running ``agent dev`` and the lines it printed so far."""

    process: subprocess.Popen[str]
    data_dir: Path
    lines: list[str] = field(default_factory=list)
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def read_until(self, prefix: str, timeout: float = START_SECONDS) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            if line.startswith(prefix):
                return line
        raise AssertionError(f"no line starting with {prefix!r}:\n{''.join(self.lines)}")


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "OPENAI_", "AGENT_", "AWS_"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _dev_command(data_dir: Path, *extra: str) -> list[str]:
    ports = [str(free_port()) for _ in range(4)]
    command = [sys.executable, "-m", "agent.cli", "dev", "--data-dir", str(data_dir), "--inbox-port", "-1"]
    command += ["--port", ports[0], "--ui-port", ports[1], "--s3-port", ports[2], "--model-port", ports[3]]
    return [*command, *extra]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "myagent.py").write_text(TOOL_MODULE)
    return folder


@pytest.fixture
def agent_dev(project: Path) -> Iterator[DevProcess]:
    data_dir = project / ".agent-dev"
    process = subprocess.Popen(
        _dev_command(data_dir, "--agent", "myagent:support"),
        cwd=project,
        env=_clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    dev = DevProcess(process, data_dir)

    def pump() -> None:
        for line in process.stdout:
            dev._queue.put(line)
        dev._queue.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        yield dev
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _second_shell(project: Path, data_dir: Path, *args: str) -> str:
    """Run the client script in a fresh ``bash -c`` that knows nothing but ``source env.sh``."""
    client = project.parent / "client.py"  # outside the watched folder
    client.write_text(CLIENT_SCRIPT)
    env = {k: v for k, v in _clean_env().items()}
    command = f"source {data_dir / 'env.sh'} && exec {sys.executable} {client} {' '.join(args)}"
    done = subprocess.run(
        ["bash", "-c", command], cwd=project, env=env, capture_output=True, text=True, timeout=START_SECONDS
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _ask_support(project: Path, data_dir: Path) -> str:
    """A run of ``myagent.support`` whose scripted model calls ``delete_file``; its final answer."""
    return _second_shell(project, data_dir, "support", "user-model", "delete_file")


@pytest.mark.slow
def test_agent_dev_serves_reloads_and_is_reachable_from_env_sh(agent_dev: DevProcess, project: Path) -> None:
    polling = agent_dev.read_until("Worker polling")
    assert "task queue 'agent'" in polling and "myagent:support" in polling, polling
    first_pid = int(polling.split("(pid ")[1].split(")")[0])

    env = read_env_file(agent_dev.data_dir / "env.sh")
    assert {
        "TEMPORAL_ADDRESS",
        "TEMPORAL_NAMESPACE",
        "AWS_ENDPOINT_URL_S3",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_DEFAULT_REGION",
        "TOOL_RESULTS_BUCKET",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "AGENT_TASK_QUEUE",
    } <= env.keys(), env
    assert env["AGENT_TASK_QUEUE"] == "agent"
    model_port = int((agent_dev.data_dir / "model.port").read_text())
    assert env["OPENAI_BASE_URL"] == f"http://127.0.0.1:{model_port}/v1"

    # A second agent dev on the same data directory refuses at once and changes nothing.
    env_before = (agent_dev.data_dir / "env.sh").read_text()
    started = time.monotonic()
    second = subprocess.run(
        _dev_command(agent_dev.data_dir), cwd=project, env=_clean_env(), capture_output=True, text=True, timeout=60
    )
    assert second.returncode != 0
    assert f"an agent dev already runs here (pid {agent_dev.process.pid})" in second.stderr, second.stderr
    assert time.monotonic() - started < 30
    assert (agent_dev.data_dir / "env.sh").read_text() == env_before

    # The user's tool runs, from a shell that knows only env.sh.
    assert "deleted notes.txt (v1)" in _ask_support(project, agent_dev.data_dir)

    # A tool of another agent is not on this worker: the run fails, saying where and how to get one.
    answer = _second_shell(project, agent_dev.data_dir, "other", "other-model", "not_served")
    assert (
        "FAILED: Tool 'not_served' is not served by the worker of task queue 'agent' that took the call, so the "
        "run cannot go on. Available: delete_file. Serve it from every worker of the queue: `agent dev --agent "
        "mymodule:agent`" in answer
    ), answer

    # Edit the tool: a new worker process serves the new code.
    source = project / "myagent.py"
    source.write_text(TOOL_MODULE.replace('VERSION = "v1"', 'VERSION = "v2"'))
    reloaded = agent_dev.read_until("Reloaded the worker", timeout=90)
    assert "myagent.py" in reloaded, reloaded
    new_pid = int(reloaded.rsplit("pid ", 1)[1].rstrip(".\n"))
    assert new_pid != first_pid
    assert "deleted notes.txt (v2)" in _ask_support(project, agent_dev.data_dir)

    # A broken edit is reported and agent dev keeps running; the next good edit starts a worker again.
    source.write_text(TOOL_MODULE + "\ndef broken(:\n")
    failed = agent_dev.read_until("Reload after", timeout=90)
    assert "myagent.py changed: the worker failed to start: " in failed, failed
    assert "--tools 'myagent:support': importing myagent failed: SyntaxError: " in failed, failed
    source.write_text(TOOL_MODULE.replace('VERSION = "v1"', 'VERSION = "v3"'))
    agent_dev.read_until("Reloaded the worker", timeout=90)
    assert "deleted notes.txt (v3)" in _ask_support(project, agent_dev.data_dir)

    agent_dev.process.send_signal(signal.SIGINT)
    assert agent_dev.process.wait(timeout=60) == 0, "".join(agent_dev.lines)
    assert not (agent_dev.data_dir / LOCK_FILE).exists()


def test_a_bad_agent_spec_stops_agent_dev_with_the_workers_reason(tmp_path: Path) -> None:
    done = subprocess.run(
        _dev_command(tmp_path / "dev", "--agent", "nosuchmodule:agent"),
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=START_SECONDS,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no module named 'nosuchmodule'" in done.stderr, done.stderr
    assert not (tmp_path / "dev" / LOCK_FILE).exists()


def test_worker_py_names_what_it_could_not_find(tmp_path: Path) -> None:
    (tmp_path / "mytools.py").write_text(textwrap.dedent(TOOL_MODULE))
    for spec, expected in [
        ("nosuch:TOOLS", f"--tools 'nosuch:TOOLS': no module named 'nosuch' in {tmp_path}"),
        ("mytools:TOOLZ", "--tools 'mytools:TOOLZ': module mytools ("),
        ("mytools:VERSION", "--tools 'mytools:VERSION' is a str; expected a list of @tool functions"),
    ]:
        done = subprocess.run(
            [sys.executable, str(ROOT / "worker.py"), "--tools", spec],
            cwd=tmp_path,
            env={**_clean_env(), "TEMPORAL_ADDRESS": "127.0.0.1:1"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert expected in done.stderr, done.stderr

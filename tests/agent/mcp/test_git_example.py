"""examples/git_agent.py end to end on the scripted model: ``mcp-server-git`` (PyPI) over a
repository this test creates, served by ``python worker.py --tools`` and run by ``agent run``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

from agent import ChatMessage
from examples.git_agent import git_agent
from tests.support.mcp_servers import VENV_BIN, server_children
from worker import create_worker

REPO = Path(__file__).resolve().parents[3]


def make_repository(path: Path) -> Path:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True)

    path.mkdir()
    git("init", "-q")
    git("config", "user.name", "Ann")  # the server's commits need an author on a machine without ~/.gitconfig
    git("config", "user.email", "ann@example.com")
    (path / "notes.txt").write_text("first\n")
    git("add", "notes.txt")
    git("commit", "-qm", "Start the notes")
    (path / "notes.txt").write_text("first\nsecond\n")
    return path


def calls(name: str, **arguments) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_the_example_runs_with_agent_run_on_a_worker_from_worker_py(scripted, stack, tmp_path):
    repository = make_repository(tmp_path / "repo")
    model, queue = f"git-{uuid.uuid4().hex[:8]}", f"git-{uuid.uuid4().hex[:8]}"
    scripted.script(
        model,
        [
            calls("git_log", repo_path=str(repository)),
            calls("git_diff_unstaged", repo_path=str(repository)),
            {"text": "One commit, 'Start the notes'; notes.txt has a new line."},
        ],
    )
    env = {
        **os.environ,
        "GIT_AGENT_REPOSITORY": str(repository),
        "GIT_AGENT_MODEL": model,
        "PATH": os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")]),
    }
    worker = subprocess.Popen(
        [sys.executable, "worker.py", "--tools", "examples.git_agent:agent", "--task-queue", queue],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert worker.stdout is not None and worker.stdout.readline().startswith("worker ready")
        done = subprocess.run(
            [
                f"{VENV_BIN}/agent",
                "run",
                "--agent",
                "examples.git_agent:agent",
                "--task-queue",
                queue,
                "--wait",
                "--timeout",
                "60",
                "What changed?",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert done.returncode == 0, done.stderr
        assert "One commit, 'Start the notes'" in done.stdout
        [log, diff] = [m for m in scripted.requests(model)[-1]["messages"] if m["role"] == "tool"]
        assert "Message: Start the notes" in log["content"] and "Author: Ann" in log["content"]
        assert "+second" in diff["content"]
        assert len(server_children("mcp-server-git", worker.pid)) == 1  # one server process for the worker
    finally:
        worker.terminate()
        worker.wait(30)


async def test_a_commit_waits_for_approval_then_lands(client, scripted, model, run_id, tmp_path):
    repository = make_repository(tmp_path / "repo")
    agent = git_agent(str(repository), model)
    scripted.script(
        model,
        [
            calls("git_add", repo_path=str(repository), files=["notes.txt"]),
            calls("git_commit", repo_path=str(repository), message="Add the second note"),
            {"text": "Committed."},
        ],
    )
    async with create_worker(client, tools=agent.mcp_toolsets, task_queue=run_id):
        handle = await agent.start(client, [ChatMessage.from_user("commit it")], run_id=run_id, task_queue=run_id)
        [pending] = await handle.wait_for_pending(timeout=timedelta(seconds=30))
        assert pending.tool_name == "git_commit" and pending.tool_params["message"] == "Add the second note"
        log = subprocess.run(["git", "-C", str(repository), "log", "--format=%s"], capture_output=True, text=True)
        assert log.stdout.split("\n")[0] == "Start the notes"  # nothing committed before the approval
        await handle.confirm(pending.tool_call_id, approver="ann")
        result = await asyncio.wait_for(handle.result(), timeout=60)
    assert result.last_message.text == "Committed."
    log = subprocess.run(["git", "-C", str(repository), "log", "--format=%s"], capture_output=True, text=True)
    assert log.stdout.split("\n")[:2] == ["Add the second note", "Start the notes"]


def test_worker_py_stops_at_once_naming_a_server_that_cannot_start(stack, tmp_path):
    env = {
        **os.environ,
        "GIT_AGENT_REPOSITORY": str(tmp_path / "not-a-repository"),
        "PATH": os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "worker.py", "--tools", "examples.git_agent:agent"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"worker: MCP server `mcp-server-git --repository {tmp_path / 'not-a-repository'}`"), last

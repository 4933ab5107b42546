"""A newcomer follows the README: start ``agent dev --agent examples.quickstart:agent`` (on free
ports, in a temporary directory), run the README's quickstart snippet with the environment
``env.sh`` gives, then start a run from the CLI, approve it from the CLI and read its answer.

The virtualenv is the one the README's own set-up command made (``bash scripts/test`` builds
``.venv`` from the checkout; in CI that is a clean clone with nothing installed by hand), so the
test uses what a newcomer has after the README's first step, and none of the test session's
environment; it prints how long each part took.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from agent.dev.stack import free_port
from tests.docs.markdown_blocks import blocks

pytestmark = pytest.mark.integration  # starts agent dev and its servers itself

REPO = Path(__file__).resolve().parents[1]
#: Long enough for the dev server, moto and the worker to start on two shared cores.
START_SECONDS = 180
#: One command of the walk-through (the snippet waits for its run to finish).
COMMAND_SECONDS = 180
#: Variables of the test session's own stack, which the newcomer's shell does not have.
_SESSION_PREFIXES = ("TEMPORAL_", "OPENAI_", "AWS_", "TOOL_RESULTS_", "AGENT_", "VIRTUAL_ENV")


def _readme_quickstart() -> str:
    [snippet] = [b.source for b in blocks(REPO / "README.md") if b.kind == "python" and "wait_for_pending" in b.source]
    return snippet


def _read_env_sh(path: Path) -> dict[str, str]:
    """The ``export KEY=value`` lines of ``env.sh``."""
    env = {}
    for line in path.read_text().splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            key, _, value = words[1].partition("=")
            env[key] = value
    return env


def _run(command: list[str], env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, cwd=REPO, env=env, input=stdin, capture_output=True, text=True, timeout=COMMAND_SECONDS
    )
    assert done.returncode == 0, f"{shlex.join(command)}: exit status {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.slow
def test_a_newcomer_follows_the_readme(tmp_path: Path) -> None:
    clean_env = {k: v for k, v in os.environ.items() if not k.startswith(_SESSION_PREFIXES)}
    bin_dir = Path(sys.executable).parent  # .venv/bin, made by the README's set-up command
    assert (bin_dir / "agent").exists(), f"{bin_dir} has no agent command: run bash scripts/test first"
    user_env = {**clean_env, "PATH": f"{bin_dir}{os.pathsep}{clean_env.get('PATH', '')}"}

    data_dir = tmp_path / "agent-dev"
    ports = [str(free_port()) for _ in range(4)]
    dev_command = [str(bin_dir / "agent"), "dev", "--agent", "examples.quickstart:agent", "--data-dir", str(data_dir)]
    dev_command += ["--port", ports[0], "--ui-port", ports[1], "--s3-port", ports[2], "--inbox-port", ports[3]]
    dev = subprocess.Popen(
        dev_command, cwd=REPO, env=user_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    ready = threading.Event()

    def read_output() -> None:
        for line in dev.stdout:
            lines.append(line)
            if "polling" in line.lower():
                ready.set()
        ready.set()  # the process ended: the wait below reports it

    threading.Thread(target=read_output, daemon=True).start()
    try:
        dev_started = time.monotonic()
        assert ready.wait(START_SECONDS) and dev.poll() is None, "agent dev did not start:\n" + "".join(lines)
        env_sh = data_dir / "env.sh"
        assert env_sh.is_file(), "agent dev wrote no env.sh:\n" + "".join(lines)
        shell_env = {**user_env, **_read_env_sh(env_sh)}
        dev_ready_s = time.monotonic() - dev_started

        snippet_started = time.monotonic()
        snippet = _run([str(bin_dir / "python"), "-"], shell_env, stdin=_readme_quickstart())
        assert "asks: delete_file({'path': '/tmp/old.log'})" in snippet.stdout, snippet.stdout
        assert "Deleted /tmp/old.log." in snippet.stdout, snippet.stdout
        snippet_s = time.monotonic() - snippet_started

        cli_started = time.monotonic()
        run_id = f"cleanup-{uuid.uuid4().hex[:8]}"
        agent = str(bin_dir / "agent")
        _run([agent, "run", "--agent", "examples.quickstart:agent", "--run-id", run_id, "/srv/tmp/cache.db"], shell_env)
        call_id = None
        deadline = time.monotonic() + COMMAND_SECONDS
        while call_id is None and time.monotonic() < deadline:
            listed = json.loads(_run([agent, "pending", "--json"], shell_env).stdout)
            call_id = next((row["tool_call_id"] for row in listed if row["run_id"] == run_id), None)
        assert call_id is not None, f"{run_id} never showed in agent pending"
        _run([agent, "approve", run_id, call_id, "--approver", "ann"], shell_env)
        answer = _run([agent, "result", run_id], shell_env)
        assert "Deleted /srv/tmp/cache.db." in answer.stdout, answer.stdout
        cli_s = time.monotonic() - cli_started
        print(
            f"newcomer: agent dev ready {dev_ready_s:.1f} s, "
            f"quickstart snippet {snippet_s:.1f} s, CLI run/pending/approve/result {cli_s:.1f} s"
        )
    finally:
        dev.send_signal(signal.SIGINT)
        try:
            dev.wait(timeout=60)
        except subprocess.TimeoutExpired:
            dev.kill()
            dev.wait()

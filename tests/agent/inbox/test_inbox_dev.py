"""``agent dev`` starts the inbox beside the stack and prints its URL, and the metrics URL when
``AGENT_PROMETHEUS_BIND`` asks for one (a subprocess, as a user runs it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from agent.dev.stack import free_port

pytestmark = pytest.mark.integration  # `agent dev` starts its own stack

#: Long enough for the dev server, moto and the worker to start on two shared cores.
START_SECONDS = 120


@pytest.mark.slow
def test_agent_dev_starts_the_inbox_and_prints_its_url(tmp_path):
    ports = [str(free_port()) for _ in range(5)]
    command = [sys.executable, "-c", "from agent.cli import main; main()", "dev", "--data-dir", str(tmp_path / "dev")]
    command += ["--port", ports[0], "--ui-port", ports[1], "--s3-port", ports[2], "--inbox-port", ports[3]]
    command += ["--inbox-identity", "devuser"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "OPENAI_"))}
    env["AGENT_PROMETHEUS_BIND"] = f"127.0.0.1:{ports[4]}"
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("Worker polling"):
                break
        inbox_lines = [line for line in lines if line.startswith("Inbox:")]
        assert inbox_lines, "".join(lines)
        url = inbox_lines[0].split()[1]
        assert url == f"http://127.0.0.1:{ports[3]}"
        assert "'devuser'" in inbox_lines[0] and "--insecure-dev-identity" in inbox_lines[0]
        with urllib.request.urlopen(url, timeout=30) as response:
            page = response.read().decode()
        assert response.status == 200 and 'data-testid="identity">devuser<' in page
        metrics_url = f"http://127.0.0.1:{ports[4]}/metrics"
        assert f"Metrics:         {metrics_url}  (AGENT_PROMETHEUS_BIND)\n" in lines, "".join(lines)
        with urllib.request.urlopen(metrics_url, timeout=30) as response:
            metrics = response.read().decode()
        assert "temporal_request" in metrics, metrics[:500]
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

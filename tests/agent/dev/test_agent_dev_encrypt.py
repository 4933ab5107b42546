"""``agent dev --encrypt``: a run from a second shell (env.sh alone) is encrypted in history, the
development key is kept 0600 in the data directory, and the Temporal UI is pointed at the codec
server ``agent dev`` serves, which decrypts the run's payloads."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.client import Client

from agent.dev.encryption import KEY_FILE
from agent.dev.env_file import read_env_file
from agent.dev.stack import free_port
from tests.agent.dev.test_agent_dev import DevProcess, _ask_support, _clean_env, _dev_command, project  # noqa: F401
from tests.support.polling import eventually

pytestmark = pytest.mark.integration


@pytest.mark.slow
async def test_agent_dev_encrypt_serves_a_codec_server_the_ui_uses(project: Path) -> None:  # noqa: F811
    data_dir = project / ".agent-dev"
    codec_port, ui_port = free_port(), free_port()
    command = _dev_command(data_dir, "--agent", "myagent:support", "--encrypt", "--codec-port", str(codec_port))
    command[command.index("--ui-port") + 1] = str(ui_port)
    process = subprocess.Popen(
        command, cwd=project, env=_clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    dev = DevProcess(process, data_dir)

    def pump() -> None:
        for line in process.stdout:
            dev._queue.put(line)
        dev._queue.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        codec_line = await asyncio.to_thread(dev.read_until, "Codec server:")
        assert f"http://127.0.0.1:{codec_port}" in codec_line
        await asyncio.to_thread(dev.read_until, "Worker polling")
        key_file = data_dir / KEY_FILE
        assert key_file.stat().st_mode & 0o777 == 0o600
        env = read_env_file(data_dir / "env.sh")
        assert env["AGENT_PAYLOAD_KEYS"] == key_file.read_text().strip()
        assert env["AGENT_PAYLOAD_KEYS"] not in "".join(dev.lines)  # never printed

        assert "deleted notes.txt (v1)" in await asyncio.to_thread(_ask_support, project, data_dir)

        async with httpx.AsyncClient() as http:
            settings = (await http.get(f"http://127.0.0.1:{ui_port}/api/v1/settings")).json()
            assert settings["Codec"]["Endpoint"] == f"http://127.0.0.1:{codec_port}"

            plain = await Client.connect(env["TEMPORAL_ADDRESS"], namespace=env["TEMPORAL_NAMESPACE"])

            async def runs() -> list:
                return [w async for w in plain.list_workflows()]

            [run] = await eventually(runs, message="the run never showed in visibility")
            history = await plain.get_workflow_handle(run.id).fetch_history()
            started = history.events[0].workflow_execution_started_event_attributes.input
            assert "tidy up" not in history.to_json()
            answer = await http.post(
                f"http://127.0.0.1:{codec_port}/decode",
                content=json_format.MessageToJson(started),
                headers={"Origin": f"http://127.0.0.1:{ui_port}", "Content-Type": "application/json"},
            )
            assert answer.headers["access-control-allow-origin"] == f"http://127.0.0.1:{ui_port}"
            decoded = json_format.Parse(answer.text, Payloads())
            assert b"tidy up" in decoded.payloads[0].data
    finally:
        process.send_signal(signal.SIGINT)
        try:
            await asyncio.to_thread(process.wait, 60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

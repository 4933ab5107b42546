"""Named endpoints and ``Fallback`` for the agent's own model, against two scripted endpoints:
the first failing in each way, the second answering. Each case names its endpoints afresh, so the
session worker builds their clients from the variables this test sets."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError

from activities.provider_quirks import request_for_model
from agent import Agent, ChatMessage
from agent.dev.ports import free_port
from agent.dev.scripted_model import ScriptedModelServer
from core.models import Fallback, Model
from core.spec import AgentSpec


def endpoints(monkeypatch: pytest.MonkeyPatch, scripted: ScriptedModelServer, **primary: str) -> tuple[str, str]:
    """Two fresh endpoint names: the primary (its variables as given, the scripted model by
    default) and a backup at the scripted model."""
    tag = uuid.uuid4().hex[:6].upper()
    first, backup = f"PRIMARY_{tag}", f"BACKUP_{tag}"
    monkeypatch.setenv(f"{first}_OPENAI_BASE_URL", primary.get("base_url", scripted.base_url))
    if "timeout" in primary:
        monkeypatch.setenv(f"{first}_OPENAI_TIMEOUT_SECONDS", primary["timeout"])
    monkeypatch.setenv(f"{backup}_OPENAI_BASE_URL", scripted.base_url)
    return first, backup


async def run(client: Client, queue: str, agent: Agent) -> Any:
    handle = await agent.start(
        client, [ChatMessage.from_user("hi")], run_id=f"fb-{uuid.uuid4().hex[:10]}", task_queue=queue
    )
    return await asyncio.wait_for(handle.result(), 60)


@pytest.mark.parametrize(
    ("kind", "primary_reply", "said"),
    [
        ("429", {"error": {"status": 429, "message": "slow down", "retry_after": 0}}, "HTTP 429"),
        ("5xx", {"error": {"status": 503, "message": "overloaded"}}, "HTTP 503"),
        (
            "not a completion",
            {"raw": {"status": 200, "content_type": "text/html", "body": "<h1>proxy</h1>"}},
            "not a chat completion",
        ),
    ],
)
async def test_a_failure_another_endpoint_may_not_have_falls_back(
    client: Client,
    worker: str,
    scripted: ScriptedModelServer,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    primary_reply: dict,
    said: str,
) -> None:
    first, backup = endpoints(monkeypatch, scripted)
    primary_model, backup_model = f"p-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    scripted.script(primary_model, [primary_reply])
    scripted.script(backup_model, [{"text": "from the backup"}])
    agent = Agent(model=Fallback([(primary_model, first), (backup_model, backup)]))
    result = await run(client, worker, agent)
    reply = result.last_message
    assert reply.text == "from the backup"
    assert reply.meta["answered_by"] == {"model": backup_model, "endpoint": backup}
    assert len(reply.meta["fallback_failures"]) == 1 and said in reply.meta["fallback_failures"][0]
    assert len(scripted.requests(primary_model)) == 1 and len(scripted.requests(backup_model)) == 1


async def test_no_connection_and_a_timeout_fall_back(
    client: Client, worker: str, scripted: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    backup_model = f"b-{uuid.uuid4().hex[:8]}"
    scripted.script(backup_model, [{"text": "up", "times": 2}])
    closed, _ = endpoints(monkeypatch, scripted, base_url=f"http://127.0.0.1:{free_port()}/v1")
    slow, backup = endpoints(monkeypatch, scripted, timeout="0.5")
    slow_model = f"s-{uuid.uuid4().hex[:8]}"
    scripted.script(slow_model, [{"text": "too late", "hold_until": str(tmp_path / "never")}])
    for name, model in ((closed, "anything"), (slow, slow_model)):
        result = await run(client, worker, Agent(model=Fallback([(model, name), (backup_model, backup)])))
        failures = result.last_message.meta["fallback_failures"]
        assert result.last_message.text == "up" and "Could not reach the model endpoint" in failures[0], failures


@pytest.mark.parametrize("status", [400, 401, 404])
async def test_a_client_error_stops_the_call_without_falling_back(
    client: Client, worker: str, scripted: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    first, backup = endpoints(monkeypatch, scripted)
    primary_model, backup_model = f"p-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    scripted.script(primary_model, [{"error": {"status": status, "message": "no"}}])
    scripted.script(backup_model, [{"text": "must not answer"}])
    with pytest.raises(WorkflowFailureError) as failure:
        await run(client, worker, Agent(model=Fallback([(primary_model, first), (backup_model, backup)])))
    assert f"HTTP {status}" in str(failure.value.cause)
    assert scripted.requests(backup_model) == []


async def test_a_named_endpoint_alone(
    client: Client, worker: str, scripted: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = endpoints(monkeypatch, scripted)
    model = f"n-{uuid.uuid4().hex[:8]}"
    scripted.script(model, [{"text": "named"}])
    result = await run(client, worker, Agent(model=model, endpoint=first))
    assert result.last_message.meta["answered_by"] == {"model": model, "endpoint": first}
    assert "fallback_failures" not in result.last_message.meta


def test_only_names_travel_and_they_come_back() -> None:
    agent = Agent(model=Fallback([Model("gpt-4o", "PRIMARY"), ("claude-sonnet-4", "ANTHROPIC"), "gpt-4o-mini"]))
    data = agent.to_dict()
    assert (data["model"], data["endpoint"]) == ("gpt-4o", "PRIMARY")
    assert data["fallback_models"] == [
        {"name": "claude-sonnet-4", "endpoint": "ANTHROPIC"},
        {"name": "gpt-4o-mini", "endpoint": None},
    ]
    assert AgentSpec.from_dict(data).models == agent.models
    assert "endpoint" not in Agent(model="gpt-4o").to_dict()  # agents on the worker's own endpoint: as before


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"model": "gpt-4o", "endpoint": "primary"}, "upper-case prefix"),
        ({"model": Model("gpt-4o", "PRIMARY"), "endpoint": "OTHER"}, "not as endpoint= as well"),
        ({"model": ("gpt-4o", "PRIMARY", "x")}, "Expected a model name"),
    ],
)
def test_bad_models_are_refused_when_the_agent_is_built(kwargs: dict, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        Agent(**kwargs)


def test_a_fallback_needs_two_models() -> None:
    with pytest.raises(ValueError, match="at least two models"):
        Fallback([("gpt-4o", "PRIMARY")])


async def test_a_stream_broken_after_its_first_tokens_is_retried_not_continued_by_another_model(
    client: Client, worker: str, scripted: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, backup = endpoints(monkeypatch, scripted)
    primary_model, backup_model = f"p-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    scripted.script(
        primary_model, [{"text": "one two three four", "chunk_chars": 4, "break_after": 2}, {"text": "again"}]
    )
    scripted.script(backup_model, [{"text": "must not answer"}])
    agent = Agent(model=Fallback([(primary_model, first), (backup_model, backup)]), stream_tokens=True)
    result = await run(client, worker, agent)
    assert result.last_message.text == "again"
    assert result.last_message.meta["answered_by"] == {"model": primary_model, "endpoint": first}
    assert scripted.requests(backup_model) == []


@pytest.mark.parametrize(
    ("model", "renamed"),
    [("o3-mini", True), ("openai/o1", True), ("gpt-5", True), ("gpt-4o", False), ("claude-sonnet-4", False)],
)
def test_max_tokens_is_renamed_for_the_models_that_refuse_it(model: str, renamed: bool) -> None:
    body = {"model": model, "messages": [], "max_tokens": 50}
    sent = request_for_model(body, model)
    assert ("max_completion_tokens" in sent, "max_tokens" in sent) == (renamed, not renamed)
    assert body["max_tokens"] == 50  # the caller's body is left as it was


async def test_the_renamed_setting_reaches_the_endpoint(
    client: Client, worker: str, scripted: ScriptedModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = f"o3-{uuid.uuid4().hex[:8]}"
    scripted.script(model, [{"text": "short"}])
    await run(client, worker, Agent(model=model, model_settings={"max_tokens": 20}))
    sent = scripted.requests(model)[0]
    assert sent["max_completion_tokens"] == 20 and "max_tokens" not in sent

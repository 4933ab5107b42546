"""Usage by model and endpoint, and its cost when ``AGENT_MODEL_PRICES`` prices the models: summed
into the run's ``token_usage`` (sub-agents included) and budgeted by ``TokenBudgetHook(max_cost=)``."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from temporalio.client import Client

from agent import Agent, ChatMessage
from agent.dev.scripted_model import ScriptedModelServer
from hooks.budget import TokenBudgetHook
from tests import tools as t

#: Price per million input and output tokens.
LEAD_PRICE, CHILD_PRICE = (2.0, 8.0), (1.0, 4.0)


def cost_of(usage: dict, price: tuple[float, float]) -> float:
    return (usage["prompt_tokens"] * price[0] + usage["completion_tokens"] * price[1]) / 1_000_000


async def test_a_runs_usage_by_model_and_endpoint_and_its_cost_sub_agents_included(
    client: Client, worker: str, scripted: ScriptedModelServer, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    child_model = f"{model}-child"
    monkeypatch.setenv("USAGE_OPENAI_BASE_URL", scripted.base_url)
    monkeypatch.setenv("AGENT_MODEL_PRICES", json.dumps({f"{model}@USAGE": LEAD_PRICE, child_model: CHILD_PRICE}))
    child = Agent(model=child_model, tools=[t.echo])
    lead = Agent(model=model, endpoint="USAGE", tools=[child.as_tool("research", "Research one question")])
    scripted.script(
        model, [{"tool_calls": [{"name": "research", "id": "r1", "arguments": {"input": "x"}}]}, {"text": "done"}]
    )
    scripted.script(child_model, [{"text": "found"}])
    handle = await lead.start(
        client, [ChatMessage.from_user("go")], run_id=f"usage-{uuid.uuid4().hex[:8]}", task_queue=worker
    )
    result = await asyncio.wait_for(handle.result(), 60)

    by_model = result.token_usage["by_model"]
    assert set(by_model) == {f"{model}@USAGE", child_model}
    lead_calls = [m.meta["usage"] for m in result.messages if m.role.value == "assistant"]
    assert by_model[f"{model}@USAGE"]["total_tokens"] == sum(u["total_tokens"] for u in lead_calls)
    assert by_model[f"{model}@USAGE"]["cost"] == pytest.approx(sum(cost_of(u, LEAD_PRICE) for u in lead_calls))
    assert by_model[child_model]["cost"] == pytest.approx(cost_of(by_model[child_model], CHILD_PRICE))
    assert result.token_usage["cost"] == pytest.approx(sum(m["cost"] for m in by_model.values()))
    assert result.token_usage["total_tokens"] == sum(m["total_tokens"] for m in by_model.values())


async def test_a_cost_budget_stops_the_run_before_the_next_model_call(
    client: Client, worker: str, scripted: ScriptedModelServer, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_MODEL_PRICES", json.dumps({model: [1000.0, 1000.0]}))  # any call goes over
    agent = Agent(model=model, tools=[t.echo], hooks={"before_llm": [TokenBudgetHook(max_cost=0.01)]})
    scripted.script(model, [{"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}], "times": 3}])
    handle = await agent.start(
        client, [ChatMessage.from_user("go")], run_id=f"cost-{uuid.uuid4().hex[:8]}", task_queue=worker
    )
    result = await asyncio.wait_for(handle.result(), 60)
    assert result.exit_reason == "token_budget_exceeded" and result.step_count == 1
    assert result.token_usage["cost"] >= 0.01


def test_no_price_no_cost_and_a_budget_needs_a_limit() -> None:
    with pytest.raises(ValueError, match="max_total_tokens`, `max_cost` or both"):
        TokenBudgetHook()
    with pytest.raises(ValueError, match="positive amount"):
        TokenBudgetHook(max_cost=0)
    assert "max_cost" not in TokenBudgetHook(max_total_tokens=5).to_dict()["init_parameters"]
    assert TokenBudgetHook.from_dict(TokenBudgetHook(max_cost=2.5).to_dict()).max_cost == 2.5

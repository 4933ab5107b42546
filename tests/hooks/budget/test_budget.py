"""TokenBudgetHook: when it stops a run, what it counts (the agent's usage, hook usage on request), serialisation."""

from __future__ import annotations

import pytest

from agent import Agent
from core.spec import AgentSpec
from core.state import State
from hooks.budget import TokenBudgetHook
from hooks.context import RunContext, set_current_run


def state_with(usage: dict | None, messages=None) -> State:
    return State(data={"messages": list(messages or []), "token_usage": usage, "stop_run": None})


def test_validation_and_hook_point():
    for bad in (0, -1):
        with pytest.raises(ValueError, match="max_total_tokens"):
            TokenBudgetHook(max_total_tokens=bad)
    hook = TokenBudgetHook(max_total_tokens=1)
    assert hook.allowed_hook_points == ("before_llm",)
    with pytest.raises(ValueError, match="before_llm"):
        Agent(model="m", hooks={"on_exit": [hook]})


@pytest.mark.parametrize(
    ("usage", "stops"),
    [
        ({"prompt_tokens": 60, "completion_tokens": 39, "total_tokens": 99}, False),
        ({"prompt_tokens": 60, "completion_tokens": 40, "total_tokens": 100}, True),  # reaching the budget stops
        ({"total_tokens": 150}, True),
        ({"prompt_tokens": 70, "completion_tokens": 30}, True),  # no total: input + output
        ({"input_tokens": 70, "output_tokens": 29}, False),  # the other naming convention
        ({"total_tokens": 0, "prompt_tokens": 80, "completion_tokens": 20}, True),  # a zero total falls back
        ({"total_tokens": True, "prompt_tokens": 1}, False),  # booleans are not counts
        ({}, False),
        (None, False),
    ],
)
def test_stops_when_usage_reaches_budget(usage, stops):
    state = state_with(usage)
    TokenBudgetHook(max_total_tokens=100).run(state)
    assert state.data["stop_run"] == ("token_budget_exceeded" if stops else None)
    assert state.data["messages"] == []


def test_final_message_is_appended_only_when_asked():
    state = state_with({"total_tokens": 500}, messages=[])
    TokenBudgetHook(max_total_tokens=100, add_final_message=True).run(state)
    (message,) = state.data["messages"]
    assert message.role.value == "assistant" and "token budget" in message.text


def test_hook_usage_is_counted_only_with_the_option():
    state = state_with({"total_tokens": 50})
    run = RunContext(run_id="r", agent=AgentSpec(model="m"), state=state)
    run.add_hook_usage({"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60})
    set_current_run(run)
    try:
        TokenBudgetHook(max_total_tokens=100).run(state)
        assert state.data["stop_run"] is None
        included = TokenBudgetHook(max_total_tokens=100, include_hook_usage=True)
        assert included.used_tokens(state) == 110
        included.run(state)
        assert state.data["stop_run"] == "token_budget_exceeded"
    finally:
        set_current_run(None)


def test_round_trip():
    hook = TokenBudgetHook(max_total_tokens=5000, add_final_message=True, include_hook_usage=True)
    again = Agent.from_dict(Agent(model="m", hooks={"before_llm": [hook]}).to_dict()).hooks["before_llm"][0]
    assert isinstance(again, TokenBudgetHook) and again.to_dict() == hook.to_dict()
    assert (again.max_total_tokens, again.add_final_message, again.include_hook_usage) == (5000, True, True)

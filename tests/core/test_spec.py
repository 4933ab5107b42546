"""Agent, hooks and messages round-trip through their serialised forms; bad specs fail early."""

from __future__ import annotations

import pytest

from agent import Agent, ChatMessage, ToolCall, tool
from core.payloads import AgentRunInput
from hooks import FunctionHook, hook
from tests import tools as t


class OnlyBeforeLlm:
    allowed_hook_points = ("before_llm",)

    def run(self, state):
        return None

    def to_dict(self):
        return {"type": "tests.core.test_spec.OnlyBeforeLlm", "init_parameters": {}}


def test_agent_round_trip():
    agent = Agent(
        model="m",
        tools=[t.add, t.echo],
        system_prompt="sys",
        hooks={"before_llm": [t.trace_before_llm], "on_exit": [t.continue_once, t.async_marker]},
        exit_conditions=["text", "add"],
        max_agent_steps=7,
        state_schema={"trace": {"type": list}, "count": {"type": int}},
        model_settings={"temperature": 0},
    )
    data = agent.to_dict()
    again = Agent.from_dict(data)
    assert again.to_dict() == data
    assert isinstance(again.hooks["on_exit"][1], FunctionHook)
    assert again.hooks["on_exit"][1].async_function is t.async_marker.async_function
    assert again.state_schema["trace"]["type"] is list
    assert [s.name for s in again.tool_specs] == ["add", "echo"]
    assert again.tool_spec("add").parameters["required"] == ["a", "b"]


def test_messages_round_trip_through_payload():
    call = ToolCall(tool_name="add", arguments={"a": 1}, id="c1")
    messages = [
        ChatMessage.from_system("s"),
        ChatMessage.from_user("u"),
        ChatMessage.from_assistant("thinking", tool_calls=[call], meta={"usage": {"total_tokens": 3}}),
        ChatMessage.from_tool("2", origin=call, error=False),
    ]
    payload = AgentRunInput(agent={"model": "m"}, messages=messages).model_dump_json()
    assert AgentRunInput.model_validate_json(payload).messages == messages
    assert messages[3].tool_call_result.origin == call and messages[2].tool_call == call


def test_unknown_hook_point_is_value_error():
    with pytest.raises(ValueError, match="Unknown hook point 'before_everything'"):
        Agent(model="m", hooks={"before_everything": [t.trace_before_llm]})


def test_hook_outside_allowed_points_names_hook_and_point():
    with pytest.raises(ValueError, match="OnlyBeforeLlm.*after_tool.*before_llm"):
        Agent(model="m", hooks={"after_tool": [OnlyBeforeLlm()]})


def test_plain_function_as_hook_is_type_error():
    def not_a_hook(state):
        return None

    with pytest.raises(TypeError, match="@hook"):
        Agent(model="m", hooks={"before_llm": [not_a_hook]})


def test_reserved_state_schema_key_is_value_error():
    with pytest.raises(ValueError, match="'step_count' is reserved"):
        Agent(model="m", state_schema={"step_count": {"type": int}})
    # messages may be redefined, as in Haystack, but only as list[ChatMessage]
    with pytest.raises(ValueError, match="'messages' must be of type list\\[ChatMessage\\]"):
        Agent(model="m", state_schema={"messages": {"type": list}})


def test_other_bad_specs():
    with pytest.raises(ValueError, match="Duplicate tool names: add"):
        Agent(model="m", tools=[t.add, t.add])
    with pytest.raises(ValueError, match="max_agent_steps must be a number"):
        Agent(model="m", max_agent_steps="5")


def test_lambda_hook_rejected_at_construction():
    with pytest.raises(ValueError, match="module-level"):
        hook(lambda state: None)


def test_tool_schema_from_type_hints():
    @tool
    def transfer(account: str, amount: float, note: str = "") -> str:
        """Send money."""
        return "ok"

    assert transfer.spec.description == "Send money."
    assert transfer.spec.parameters["properties"]["amount"]["type"] == "number"
    assert transfer.spec.parameters["required"] == ["account", "amount"]
    with pytest.raises(ValueError, match="needs a type hint"):

        @tool
        def untyped(x) -> str:
            return x

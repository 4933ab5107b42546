"""The reference's (Haystack's) rules for the spec, kept so a spec means what it means there: specs
that cannot be rebuilt are refused where they are written, shared hooks stay shared, FunctionHook
wants a State parameter, ``messages`` may be redefined in ``state_schema``, and usage details are
summed as Haystack sums them."""

from __future__ import annotations

import pytest

from agent import Agent, ChatMessage, State
from core.payloads import add_usage
from core.state import replace_values
from hooks import FunctionHook, hook
from hooks.tool_result_offloading import FileSystemToolResultStore, OffloadOverChars, ToolResultOffloadHook
from tests import tools as t
from tests.support.spec_hooks import ForgetsItsSetting


class NoDict:
    def run(self, state: State) -> None:
        pass

    def to_dict(self) -> None:
        return None


class StoreWithoutDict(FileSystemToolResultStore):
    def to_dict(self) -> None:  # type: ignore[override]
        return None


def test_a_hook_that_serialises_to_none_is_refused_with_its_place():
    with pytest.raises(ValueError, match=r"Hook NoDict at after_run\[1\] serialises to None"):
        Agent(model="m", hooks={"after_run": [t.trace_after_run, NoDict()]})


def test_a_hook_that_comes_back_different_is_refused():
    with pytest.raises(
        ValueError, match=r"ForgetsItsSetting at before_llm\[0\] does not survive to_dict\(\)/from_dict\(\)"
    ):
        Agent(model="m", hooks={"before_llm": [ForgetsItsSetting(limit=5)]})
    Agent(model="m", hooks={"before_llm": [ForgetsItsSetting()]})  # the default survives


def test_a_nested_store_that_serialises_to_none_is_named(tmp_path):
    offload = ToolResultOffloadHook(StoreWithoutDict(tmp_path), {"*": OffloadOverChars(10)})
    with pytest.raises(
        ValueError, match=r"StoreWithoutDict \(store\) inside hook ToolResultOffloadHook at after_tool\[0\]"
    ):
        Agent(model="m", hooks={"after_tool": [offload]})


def test_a_hook_registered_twice_is_one_object_after_from_dict():
    shared = t.trace_before_run
    agent = Agent(model="m", hooks={"before_llm": [shared], "after_run": [shared]})
    data = agent.to_dict()
    assert data["hooks"]["after_run"] == [{"same_as": "before_llm/0"}]
    rebuilt = Agent.from_dict(data)
    assert rebuilt.hooks["before_llm"][0] is rebuilt.hooks["after_run"][0]
    assert Agent.from_dict(rebuilt.to_dict()).to_dict() == data


def not_annotated(state) -> None:
    pass


def wrong_annotation(state: dict) -> None:
    pass


def good(state: State) -> None:
    pass


def test_function_hook_wants_a_single_state_parameter():
    for function in (not_annotated, wrong_annotation):
        with pytest.raises(ValueError, match="must take a single parameter annotated with `State`"):
            FunctionHook(function)
    assert hook(good).function is good


def test_messages_may_be_redefined_with_a_handler_of_ones_own():
    agent = Agent(model="m", state_schema={"messages": {"type": list[ChatMessage], "handler": replace_values}})
    rebuilt = Agent.from_dict(agent.to_dict())
    assert rebuilt.state_schema["messages"] == {"type": list[ChatMessage], "handler": replace_values}
    state = State(schema=rebuilt.state_schema, data={"messages": [ChatMessage.from_user("a")]})
    state.set("messages", [ChatMessage.from_user("b")])
    assert [m.text for m in state.data["messages"]] == ["b"]


def test_usage_details_are_kept_and_summed_like_haystack():
    from haystack.components.agents.utils import _accumulate_usage

    first = {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}, "model": "a"}
    second = {"prompt_tokens": 5, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 1, "audio": 2}}
    ours = add_usage(add_usage({}, first), second)
    assert ours == _accumulate_usage(_accumulate_usage({}, first), second)
    assert ours["prompt_tokens_details"] == {"cached_tokens": 5, "audio": 2}


def test_a_toolset_is_flattened_into_the_agents_and_the_workers_tools():
    from activities.tool_invocation import ToolActivities
    from agent import Toolset

    maths = Toolset([t.add, t.echo])
    assert "add" in maths and len(maths) == 2
    agent = Agent(model="m", tools=[maths, t.finish])
    assert [s.name for s in agent.tool_specs] == ["add", "echo", "finish"]
    assert list(ToolActivities([maths]).tools) == ["add", "echo"]
    with pytest.raises(ValueError, match="Duplicate tool name 'add'"):
        Toolset([t.add, t.add])

"""Differential tests against haystack-ai 3.4.1 for issue 36's run-loop rows: ``max_agent_steps=0``,
an exit condition naming no tool, and run-time ``tools`` (Haystack's ``Agent.run`` in this process
against a durable run of ours on the test worker and the scripted model)."""

from __future__ import annotations

from typing import Any

import pytest
from haystack import component
from haystack.components.agents import Agent as HAgent
from haystack.components.agents.state.state import State as HState
from haystack.dataclasses import ChatMessage as HMessage
from haystack.hooks import hook as h_hook
from haystack.tools import Tool as HTool
from haystack.tools import Toolset as HToolset

from agent import Agent, ChatMessage, Toolset, tool
from tests import tools as t

TRACE = {"trace": {"type": list}}
ADD_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}


@component
class Replies:
    """A Haystack chat generator that answers with text and counts its calls and the tools it saw."""

    def __init__(self) -> None:
        self.tools_seen: list[list[str]] = []

    @component.output_types(replies=list[HMessage])
    def run(self, messages: list[HMessage], tools: Any = None, **kwargs: Any) -> dict[str, list[HMessage]]:
        self.tools_seen.append(sorted(t.name for t in tools or []))
        return {"replies": [HMessage.from_assistant("done")]}


def h_trace(point: str):
    def trace(state: HState) -> None:
        state.set("trace", [f"{point}@{state.data['step_count']}"])

    return trace


@h_hook
def h_before_run(state: HState) -> None:
    h_trace("before_run")(state)


@h_hook
def h_after_run(state: HState) -> None:
    h_trace("after_run")(state)


def h_add(a: int, b: int) -> int:
    return a + b


H_ADD = HTool(name="add", description="Add two integers.", parameters=ADD_SCHEMA, function=h_add)


async def test_max_agent_steps_zero_makes_no_model_call_and_ends_as_haystacks(client, worker, scripted, model, run_id):
    generator = Replies()
    theirs = HAgent(
        chat_generator=generator,
        max_agent_steps=0,
        state_schema=TRACE,
        hooks={"before_run": [h_before_run], "after_run": [h_after_run]},
    ).run([HMessage.from_user("hi")])

    agent = Agent(
        model=model,
        max_agent_steps=0,
        state_schema=TRACE,
        hooks={"before_run": [t.trace_before_run], "after_run": [t.trace_after_run]},
    )
    handle = await agent.start(client, [ChatMessage.from_user("hi")], run_id=run_id, task_queue=worker)
    ours = await handle.result()

    assert generator.tools_seen == [] and scripted.requests(model) == []  # no model call in either
    assert ours.exit_reason == theirs["exit_reason"] == "max_agent_steps"
    assert ours.step_count == theirs["step_count"] == 0
    assert ours.state["trace"] == theirs["trace"] == ["before_run@0", "after_run@0"]
    assert [m.text for m in ours.messages] == [m.text for m in theirs["messages"]] == ["hi"]


async def test_an_exit_condition_naming_no_tool_is_accepted_and_text_still_ends_the_run(
    client, worker, scripted, model, run_id
):
    theirs = HAgent(chat_generator=Replies(), tools=[H_ADD], exit_conditions=["nope"]).run([HMessage.from_user("x")])
    scripted.script(model, [{"text": "done"}])
    agent = Agent(model=model, tools=[t.add], exit_conditions=["nope"])
    ours = await (await agent.start(client, [ChatMessage.from_user("x")], run_id=run_id, task_queue=worker)).result()
    assert ours.exit_reason == theirs["exit_reason"] == "text"
    assert ours.last_message.text == theirs["last_message"].text == "done"


async def test_run_time_tools_take_a_toolset_of_the_agents_tools_as_haystack_does(
    client, worker, scripted, model, run_id
):
    generator = Replies()
    HAgent(chat_generator=generator, tools=[H_ADD]).run([HMessage.from_user("x")], tools=[HToolset([H_ADD])])
    scripted.script(model, [{"text": "done"}])
    agent = Agent(model=model, tools=[t.add, t.echo])
    handle = await agent.start(
        client, [ChatMessage.from_user("x")], run_id=run_id, task_queue=worker, tools=[Toolset([t.add])]
    )
    assert (await handle.result()).exit_reason == "text"
    (request,) = scripted.requests(model)
    assert [tool["function"]["name"] for tool in request["tools"]] == generator.tools_seen[0] == ["add"]


@tool
def new_tool(text: str) -> str:
    """A tool the agent was not built with."""
    return text


@tool(name="add", description="Something else that happens to be called add.")
def other_add(a: int) -> int:
    return a


async def test_a_new_tool_at_run_time_is_refused_with_what_to_do_where_haystack_runs_it(client, model):
    generator = Replies()
    fresh = HTool(name="new_tool", description="d", parameters={"type": "object", "properties": {}}, function=str)
    HAgent(chat_generator=generator, tools=[H_ADD]).run([HMessage.from_user("x")], tools=[fresh])
    assert generator.tools_seen == [["new_tool"]]  # Haystack runs with the new tool

    agent = Agent(model=model, tools=[t.add])
    for tools, said in (
        ([new_tool], r"tools names tools the agent does not have: \['new_tool'\]"),
        ([Toolset([new_tool])], r"tools names tools the agent does not have: \['new_tool'\]"),
        ([other_add], "differs from the agent's tool of that name"),
        ([object()], "give tool names, Tool objects or Toolsets"),
    ):
        with pytest.raises(ValueError, match=said) as refused:
            await agent.start(client, [ChatMessage.from_user("x")], run_id="never", tools=tools)
        assert "create_worker(tools=[...])" in str(refused.value)  # what to do instead

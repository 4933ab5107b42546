"""Conversation pieces that need no server: ``participants`` on the spec (checked, round-tripped),
the cancelled tool results a cancel adds, and the payloads' defaults."""

from __future__ import annotations

import pytest

from agent import Agent, ChatMessage, ToolCall
from core.payloads import AgentRunInput, RunStatus, SessionSnapshot, UserMessage
from core.spec import AgentSpec
from tests import tools as t
from workflows.conversation import cancelled_tool_results


def test_participants_round_trip_through_to_dict_and_from_dict():
    agent = Agent(model="m", tools=[t.add], participants=["ann", "bob", "ann"])
    assert agent.participants == ["ann", "bob"]
    again = AgentSpec.from_dict(agent.to_dict())
    assert again.participants == ["ann", "bob"] and again.to_dict() == agent.to_dict()
    assert AgentSpec.from_dict(Agent(model="m").to_dict()).participants is None


@pytest.mark.parametrize(
    ("participants", "message"),
    [
        ("ann", "participants must be a list of sender names, got 'ann'"),
        ([], "participants is empty, so no one could send a message"),
        (["ann", " bob"], "participants holds ' bob'; each must be a non-blank name"),
        (["ann", 3], "participants holds 3"),
    ],
)
def test_bad_participants_are_refused_when_the_agent_is_built(participants, message):
    with pytest.raises(ValueError, match=message):
        Agent(model="m", participants=participants)


def test_a_cancel_answers_every_open_call_and_keeps_finished_results():
    first, second, third = (ToolCall(tool_name="add", arguments={"a": n, "b": n}, id=f"c{n}") for n in (1, 2, 3))
    earlier = ToolCall(tool_name="add", arguments={"a": 0, "b": 0}, id="c0")
    messages = [
        ChatMessage.from_user("go"),
        ChatMessage.from_assistant(tool_calls=[earlier]),
        ChatMessage.from_tool("0", origin=earlier),
        ChatMessage.from_assistant(tool_calls=[first, second, third]),
    ]
    finished = {"c2": ChatMessage.from_tool("4", origin=second)}

    added = cancelled_tool_results(messages, finished, "closed by ann")

    assert [m.tool_call_result.origin.id for m in added] == ["c1", "c2", "c3"]
    assert added[1] is finished["c2"]
    assert added[0].tool_call_result.error is True
    assert added[0].tool_call_result.result == "Tool call 'add' was cancelled: the run was cancelled (closed by ann)."
    assert cancelled_tool_results([*messages, *added], {}, "again") == []


def test_payload_defaults_keep_older_inputs_and_statuses_valid():
    assert AgentRunInput(agent={}).wait_for_user_seconds is None
    status = RunStatus(run_id="r", step_count=0, phase="model")
    assert (status.turn, status.waiting_for_user) == (1, False)
    assert SessionSnapshot().model_dump()["turn"] == 1
    assert UserMessage(text="hi").message_id is None

"""``Agent.as_tool`` as data: the spec the parent's model sees, the sub-agent's spec in the parent's,
the tools a worker must serve, and the errors of a bad name or description. No server."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from activities.tool_invocation import ToolActivities
from agent import Agent
from agent.approvals.commands import format_pending_table
from core.agent_tool import INPUT_PARAMETER, AgentTool
from core.messages import ChatMessage, ToolCall
from core.payloads import AgentRunResult
from core.spec import AgentSpec
from hooks.human_in_the_loop.dataclasses import PendingSummary
from runtime.tool_loading import tools_of
from tests import tools as t
from workflows.children import child_run_id, final_text


def researcher() -> Agent:
    return Agent(model="small", tools=[t.add, t.echo], system_prompt="Research.")


def test_as_tool_is_a_tool_of_one_string_for_the_parents_model():
    tool = researcher().as_tool("research", "Research one question")
    assert isinstance(tool, AgentTool)
    assert tool.spec.name == "research" and tool.spec.description == "Research one question"
    assert tool.spec.parameters["required"] == [INPUT_PARAMETER]
    assert tool.spec.parameters["properties"][INPUT_PARAMETER]["type"] == "string"


def test_the_parents_spec_carries_the_sub_agents_spec_and_survives_the_round_trip():
    child = researcher()
    lead = Agent(model="big", tools=[t.finish, child.as_tool("research", "Research one question")])
    data = lead.to_dict()
    assert data["sub_agents"] == {"research": child.to_dict()}
    assert [tool["name"] for tool in data["tools"]] == ["finish", "research"]
    rebuilt = AgentSpec.from_dict(data)
    assert rebuilt.sub_agents == {"research": child.to_dict()}
    assert rebuilt.to_dict() == data


def test_an_agent_without_sub_agents_has_the_spec_it_had():
    assert "sub_agents" not in researcher().to_dict()  # so committed histories stay as they are


def test_a_worker_serves_the_sub_agents_tools_each_once():
    child = researcher()
    lead = Agent(model="big", tools=[t.add, child.as_tool("research", "Research one question")])
    assert [f.name for f in lead.tool_functions] == ["add", "echo"]  # add is both's: served once
    assert [f.name for f in tools_of(lead, "examples:lead", "--agent")] == ["add", "echo"]


@pytest.mark.parametrize(
    ("name", "description", "error"), [("", "d", "needs a name"), ("r", " ", "needs a description")]
)
def test_as_tool_refuses_an_empty_name_or_description(name, description, error):
    with pytest.raises(ValueError, match=error):
        researcher().as_tool(name, description)


def test_a_childs_run_id_derives_from_the_parents_and_the_call():
    assert child_run_id("lead-1", "call_7") == "lead-1/call_7"
    assert child_run_id("lead-1/call_7", "call_9") == "lead-1/call_7/call_9"  # a grandchild


def test_the_tool_result_is_the_childs_final_text_or_its_last_tool_result():
    call = ToolCall(tool_name="finish", arguments={"answer": "x"}, id="f1")
    by_text = AgentRunResult(messages=[], last_message=ChatMessage.from_assistant("5"), exit_reason="text")
    by_tool = AgentRunResult(
        messages=[], last_message=ChatMessage.from_tool("final: x", origin=call), exit_reason="finish"
    )
    empty = AgentRunResult(messages=[], last_message=None, exit_reason="max_agent_steps")
    assert final_text("research", by_text) == "5"
    assert final_text("research", by_tool) == "final: x"
    assert final_text("research", empty) == "The sub-agent 'research' ended (max_agent_steps) without an answer."


def test_agent_pending_adds_a_parent_column_only_for_a_childs_call():
    now = datetime(2026, 12, 3, tzinfo=UTC)
    own = PendingSummary(tool_call_id="c1", tool_name="add", arguments_preview="{}", requested_at=now)
    child = own.model_copy(update={"tool_call_id": "c2", "parent_run_id": "lead-1"})
    assert "PARENT" not in format_pending_table([("run-1", own)])
    header, first, second = format_pending_table([("run-1", own), ("lead-1/call_7", child)]).splitlines()
    assert header.split()[-1] == "PARENT"
    assert second.startswith("lead-1/call_7") and second.split()[-1] == "lead-1"
    assert first.split()[-1] != "lead-1"


def test_a_worker_given_a_sub_agent_says_to_serve_its_tools():
    with pytest.raises(ValueError, match=r"is a sub-agent.*create_worker\(tools=agent.tool_functions\)"):
        ToolActivities([researcher().as_tool("research", "Research one question")])

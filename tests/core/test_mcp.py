"""MCP toolsets as data: what a run records of them (never a secret), the checks at
construction, and the spec round trip."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from activities.mcp import listed_specs
from agent import Agent, MCPTool, MCPToolset, StdioServerInfo, StreamableHttpServerInfo
from core.mcp import MCPServerError, MCPSource, mcp_result_text
from core.spec import AgentSpec
from runtime.tool_loading import tools_of

STDIO = StdioServerInfo(command="mcp-server-git", args=["--repository", "/srv/my repo"], env={"TOKEN": "s3cret"})
HTTP = StreamableHttpServerInfo(url="http://127.0.0.1:9/mcp", token="s3cret", headers={"X-Team": "blue"})


def test_a_run_records_the_server_by_name_never_its_env_or_headers():
    agent = Agent(model="m", tools=[MCPToolset(STDIO, tool_names=["git_log"]), MCPTool("add", HTTP)])
    recorded = agent.to_dict()["mcp"]
    assert [s["server"] for s in recorded] == ["mcp-server-git --repository '/srv/my repo'", "http://127.0.0.1:9/mcp"]
    assert [s["tool_names"] for s in recorded] == [["git_log"], ["add"]]
    assert "s3cret" not in repr(agent.to_dict()) and "blue" not in repr(agent.to_dict())


def test_the_spec_round_trips_its_sources_and_keeps_plain_agents_unchanged():
    agent = Agent(model="m", tools=[MCPTool("add", HTTP, description="Adds.", invocation_timeout=5)])
    rebuilt = AgentSpec.from_dict(agent.to_dict())
    assert rebuilt.mcp_sources == agent.mcp_sources and rebuilt.mcp_sources[0].descriptions == {"add": "Adds."}
    assert rebuilt.mcp_toolsets == [] and rebuilt.tool_specs == []  # the tools come from the run's listing
    assert "mcp" not in Agent(model="m").to_dict()  # histories of agents without MCP stay as they were


def test_an_exit_condition_may_name_a_filtered_mcp_tool_or_any_other_name_as_in_haystack():
    Agent(model="m", tools=[MCPToolset(STDIO, tool_names=["git_commit"])], exit_conditions=["git_commit"])
    agent = Agent(model="m", tools=[MCPToolset(STDIO, tool_names=["git_commit"])], exit_conditions=["git_push"])
    assert AgentSpec.from_dict(agent.to_dict()).exit_conditions == ["git_push"]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: MCPToolset("mcp-server-time"), "server_info must be a StdioServerInfo"),
        (lambda: MCPToolset(STDIO, tool_names=[]), "tool_names must be a non-empty list"),
        (lambda: MCPToolset(STDIO, tool_names="git_log"), "tool_names must be a non-empty list"),
        (lambda: MCPToolset(STDIO, tool_names=["a", "a"]), "distinct"),
        (lambda: MCPToolset(STDIO, invocation_timeout=0), "invocation_timeout must be a positive"),
        (lambda: MCPTool("", STDIO), "needs the tool's name"),
    ],
)
def test_bad_toolsets_are_refused_when_built(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_server_infos_check_their_fields():
    with pytest.raises(ValueError, match="url"):
        StreamableHttpServerInfo(url="127.0.0.1:9/mcp")
    with pytest.raises(ValueError, match="command"):
        StdioServerInfo(command="")
    assert HTTP.request_headers() == {"Authorization": "Bearer s3cret", "X-Team": "blue"}


def test_the_listing_filters_and_names_what_the_server_lacks():
    tools = [
        SimpleNamespace(name="git_log", description="Log.", input_schema={"type": "object", "properties": {"x": {}}}),
        SimpleNamespace(name="git_status", description=None, input_schema=None),
    ]
    source = MCPSource(server="git", transport="stdio", tool_names=["git_status"])
    [spec] = listed_specs(source, tools)
    assert (spec.name, spec.description, spec.parameters) == ("git_status", "", {"type": "object", "properties": {}})
    assert [s.name for s in listed_specs(MCPSource(server="git", transport="stdio"), tools)] == [
        "git_log",
        "git_status",
    ]
    with pytest.raises(MCPServerError, match=r"`git` has no tool 'git_push'; it offers git_log, git_status"):
        listed_specs(MCPSource(server="git", transport="stdio", tool_names=["git_push"]), tools)


def test_result_text_joins_text_blocks_and_falls_back_to_structured_content():
    blocks = [SimpleNamespace(type="text", text="one"), SimpleNamespace(type="text", text="two")]
    assert mcp_result_text(blocks) == "one\ntwo"
    assert mcp_result_text([], {"a": 1}) == '{"a": 1}'


def test_a_worker_spec_naming_an_agent_serves_its_mcp_toolsets():
    toolset = MCPToolset(STDIO)
    assert tools_of(Agent(model="m", tools=[toolset]), "x:agent") == [toolset]
    assert tools_of([toolset], "x:TOOLS") == [toolset]

"""MCP servers as tools, on real servers: ``mcp-server-time`` (PyPI, stdio) and our own
streamable HTTP server that asks for a bearer token (tests/support/mcp_http_server.py)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from datetime import timedelta

import pytest
from temporalio.client import WorkflowFailureError

from agent import Agent, ChatMessage, MCPTool, MCPToolset, StdioServerInfo, StreamableHttpServerInfo
from core.mcp import MCPServerError
from core.tools import tool
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from hooks.tool_result_offloading import FileSystemToolResultStore, OffloadOverChars, ToolResultOffloadHook
from tests.agent.mcp.conftest import TIME
from tests.support.mcp_servers import TIME_SERVER, http_server, server_children
from tests.support.polling import eventually
from worker import create_worker

UTC_NOW = {"tool_calls": [{"name": "get_current_time", "arguments": {"timezone": "UTC"}}]}


def calls(name: str, **arguments) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def run(client, queue, agent, run_id, text="go"):
    handle = await agent.start(client, [ChatMessage.from_user(text)], run_id=run_id, task_queue=queue)
    return handle, await asyncio.wait_for(handle.result(), timeout=60)


async def activity_types(handle) -> list[str]:
    history = await handle.workflow.fetch_history()
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]


async def test_a_stdio_server_tools_are_listed_once_and_called(client, mcp_queue, scripted, model, run_id):
    scripted.script(model, [UTC_NOW, UTC_NOW, {"text": "it is now"}])
    agent = Agent(model=model, tools=[MCPToolset(TIME_SERVER, tool_names=["get_current_time"])])
    handle, result = await run(client, mcp_queue, agent, run_id)
    assert result.last_message.text == "it is now"
    assert result.tool_call_counts == {"get_current_time": 2}
    answer = json.loads(result.messages[2].tool_call_result.result)
    assert answer["timezone"] == "UTC" and "datetime" in answer
    offered = scripted.requests(model)[0]["tools"]
    assert [t["function"]["name"] for t in offered] == ["get_current_time"]  # tool_names filters convert_time out
    assert offered[0]["function"]["description"].startswith("Get current time")
    assert "timezone" in offered[0]["function"]["parameters"]["properties"]
    # Listed once for the run (recorded), each call its own activity.
    assert (await activity_types(handle)).count("mcp_list_tools") == 1
    assert (await activity_types(handle)).count("mcp_call_tool") == 2


async def test_a_server_error_and_an_unknown_argument_reach_the_model(client, mcp_queue, scripted, model, run_id):
    scripted.script(model, [calls("get_current_time", timezone="Nope/Zone"), {"text": "sorry"}])
    _, result = await run(client, mcp_queue, Agent(model=model, tools=[TIME]), run_id)
    message = result.messages[2].tool_call_result
    assert message.error and "Invalid timezone" in message.result


async def test_an_http_server_gets_the_bearer_token(client, mcp_queue, http_toolset, scripted, model, run_id):
    scripted.script(model, [calls("add", a=2, b=3), {"text": "five"}])
    agent = Agent(model=model, tools=[MCPTool("add", http_toolset.server_info, description="Adds.")])
    _, result = await run(client, mcp_queue, agent, run_id)
    assert result.messages[2].tool_call_result.result == "5"
    assert [t["function"]["description"] for t in scripted.requests(model)[0]["tools"]] == ["Adds."]


async def test_a_call_past_its_invocation_timeout_is_an_error_for_the_model(
    client, mcp_queue, http_toolset, scripted, model, run_id
):
    scripted.script(model, [calls("slow", seconds=5), {"text": "gave up"}])
    impatient = MCPToolset(http_toolset.server_info, tool_names=["slow"], invocation_timeout=0.5)
    _, result = await run(client, mcp_queue, Agent(model=model, tools=[impatient]), run_id)
    message = result.messages[2].tool_call_result
    assert message.error and "did not answer within 0.5 s" in message.result


async def test_confirmation_and_offloading_apply_by_name(
    client, mcp_queue, http_toolset, scripted, model, run_id, tmp_path
):
    scripted.script(model, [calls("echo", text="hi"), calls("big", n=5000), {"text": "done"}])
    confirm = ConfirmationHook(
        {"echo": DurableConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), timeout=timedelta(minutes=5))}
    )
    offload = ToolResultOffloadHook(FileSystemToolResultStore(str(tmp_path)), {"big": OffloadOverChars(1000)})
    agent = Agent(model=model, tools=[http_toolset], hooks={"before_tool": [confirm], "after_tool": [offload]})
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=mcp_queue)
    [pending] = await handle.wait_for_pending(timeout=timedelta(seconds=30))
    assert (pending.tool_name, pending.tool_params, pending.tool_description) == (
        "echo",
        {"text": "hi"},
        "Say the text back.",
    )
    await handle.confirm(pending.tool_call_id, approver="ann")
    result = await asyncio.wait_for(handle.result(), timeout=60)
    by_tool = {m.tool_call_result.origin.tool_name: m for m in result.messages if m.tool_call_result}
    assert by_tool["echo"].tool_call_result.result == "echo: hi"
    big = by_tool["big"]
    assert "x" * 5000 not in big.tool_call_result.result and big.meta.get("tool_result_offloaded")
    # Offloaded in the MCP call's own activity: the 5,000 characters never entered history.
    assert "x" * 5000 not in (await handle.workflow.fetch_history()).to_json()


async def test_a_dead_stdio_server_is_restarted_by_the_next_call(client, scripted, model, run_id):
    toolset = MCPToolset(StdioServerInfo(command="mcp-server-time", args=["--local-timezone", "Europe/Paris"]))
    agent = Agent(model=model, tools=[toolset])
    async with create_worker(client, tools=[toolset], task_queue=run_id):
        scripted.script(model, [UTC_NOW, {"text": "ok"}])
        await run(client, run_id, agent, f"{run_id}-1")
        [first] = server_children("Europe/Paris")  # one process, started with the worker
        os.kill(first, signal.SIGKILL)
        await eventually(lambda: server_children("Europe/Paris"), lambda pids: first not in pids, message="reaped")
        scripted.script(model, [UTC_NOW, UTC_NOW, {"text": "ok"}])
        _, result = await run(client, run_id, agent, f"{run_id}-2")
        assert [m.tool_call_result.error for m in result.messages if m.tool_call_result] == [False, False]
        [second] = server_children("Europe/Paris")  # restarted once, shared by both calls
        assert second != first
    assert server_children("Europe/Paris") == []  # stopped with the worker


async def test_an_http_session_lost_with_its_server_is_reopened(client, scripted, model, run_id):
    with http_server() as first:
        toolset = MCPToolset(StreamableHttpServerInfo(url=first.url, token=first.token), tool_names=["add"])
        agent = Agent(model=model, tools=[toolset])
        async with create_worker(client, tools=[toolset], task_queue=run_id):
            scripted.script(model, [calls("add", a=1, b=2), {"text": "ok"}])
            _, result = await run(client, run_id, agent, f"{run_id}-1")
            assert result.messages[2].tool_call_result.result == "3"
            first.process.terminate()
            first.process.wait(10)
            port = int(first.url.split(":")[2].split("/")[0])
            with http_server(first.token, port):  # the same URL again, a new process with no sessions
                scripted.script(model, [calls("add", a=2, b=2), {"text": "ok"}])
                _, result = await run(client, run_id, agent, f"{run_id}-2")
                assert result.messages[2].tool_call_result.result == "4"


async def test_a_command_that_cannot_start_stops_the_worker_naming_it(client, run_id):
    worker = create_worker(
        client, tools=[MCPToolset(StdioServerInfo(command="/nonexistent/mcp-nope"))], task_queue=run_id
    )
    with pytest.raises(MCPServerError, match="MCP server `/nonexistent/mcp-nope` could not be started"):
        await asyncio.wait_for(worker.run(), timeout=30)


async def test_a_tool_name_the_server_lacks_stops_the_worker_naming_what_it_offers(client, run_id):
    worker = create_worker(client, tools=[MCPToolset(TIME_SERVER, tool_names=["get_time"])], task_queue=run_id)
    with pytest.raises(MCPServerError, match=r"no tool 'get_time'; it offers convert_time, get_current_time"):
        await asyncio.wait_for(worker.run(), timeout=30)


async def test_a_wrong_token_stops_the_worker_naming_the_url(client, http, run_id):
    wrong = MCPToolset(StreamableHttpServerInfo(url=http.url, token="wrong"), connection_timeout=10)
    with pytest.raises(MCPServerError, match=f"MCP server `{http.url}`"):
        async with asyncio.timeout(30):
            async with create_worker(client, tools=[wrong], task_queue=run_id):
                await asyncio.Event().wait()  # as run_worker waits: the failed start cancels this and is raised


async def test_a_run_on_a_worker_without_the_server_fails_naming_it(client, mcp_queue, scripted, model, run_id):
    other = MCPToolset(StdioServerInfo(command="mcp-server-time", args=["--local-timezone", "Asia/Tokyo"]))
    handle = await Agent(model=model, tools=[other]).start(
        client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=mcp_queue
    )
    with pytest.raises(WorkflowFailureError) as failure:
        await asyncio.wait_for(handle.result(), timeout=60)
    assert "mcp-server-time --local-timezone Asia/Tokyo" in str(failure.value.cause)
    assert "was not given the MCP server" in str(failure.value.cause)


@tool
def check_inventory(sku: str) -> str:
    """Check the stock of `sku` (no test worker serves this tool)."""
    return f"{sku}: 3"


async def test_a_tool_no_worker_serves_fails_the_run_naming_every_available_tool(
    client, mcp_queue, scripted, model, run_id
):
    """Issue 30: such a run "completed" with answers made of errors, whose Available: list left out
    MCP and sub-agent tools. It fails at the first call now, saying what the run can use."""
    scripted.script(model, [calls("check_inventory", sku="widget"), {"text": "there are widgets"}])
    helper = Agent(model=model, tools=[]).as_tool(name="helper", description="Helps.")
    agent = Agent(model=model, tools=[TIME, check_inventory, helper])
    handle = await agent.start(client, [ChatMessage.from_user("check widgets")], run_id=run_id, task_queue=mcp_queue)
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=60)

    message = failed.value.cause.message
    assert message.startswith(
        f"Tool 'check_inventory' is not served by the worker of task queue '{mcp_queue}' that took the call, "
        "so the run cannot go on. Available: "
    ), message
    available = message.split("Available: ", 1)[1]
    assert "add, " in available and "get_current_time (MCP server `mcp-server-time --local-timezone UTC`)" in available
    assert "helper (sub-agent)" in available
    assert failed.value.cause.type == "ToolNotServed" and failed.value.cause.non_retryable
    assert len(scripted.requests(model)) == 1  # the model never saw an error answer
    assert (await activity_types(handle)).count("invoke_tool") == 1  # failed at once, not retried

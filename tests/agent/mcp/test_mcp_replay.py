"""Replay a committed MCP run: the tool list and every call come back from history, so a replayer
with no MCP server (and no MCP activity) at all replays it.

Re-record with ``python -m tests.agent.mcp.test_mcp_replay`` (starts its own dev server and the
``mcp-server-time`` process of its worker).
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from runtime.plugin import AgentPlugin
from workflows.agent_workflow import AgentWorkflow

HISTORY = Path(__file__).resolve().parents[2] / "histories" / "mcp_time.json"


def load() -> tuple[str, dict]:
    data = json.loads(HISTORY.read_text())
    return data["workflow_id"], data["history"]


def activity_types(history: dict) -> list[str]:
    return [
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in history["events"]
        if "activityTaskScheduledEventAttributes" in e
    ]


async def test_an_mcp_run_replays_without_any_server():
    workflow_id, history = load()
    assert activity_types(history).count("mcp_list_tools") == 1  # read once, at the start
    assert activity_types(history).count("mcp_call_tool") == 2
    replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])
    result = await replayer.replay_workflow(WorkflowHistory.from_json(workflow_id, history))
    assert result.replay_failure is None


async def test_a_history_without_the_listing_does_not_replay():
    """The check can fail: the listing is the run's first command, so a history that recorded
    another activity there is non-deterministic."""
    workflow_id, history = load()
    tampered = json.dumps(history).replace('"mcp_list_tools"', '"chat_completion"', 1)
    replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])
    result = await replayer.replay_workflow(
        WorkflowHistory.from_json(workflow_id, tampered), raise_on_replay_failure=False
    )
    assert result.replay_failure is not None


async def record(address: str) -> None:
    """The recorded scenario: a confirmation on an MCP tool, then two calls and a text answer."""
    from agent import Agent, ChatMessage, MCPToolset
    from agent.client import connect
    from agent.dev.scripted_model import ScriptedModelServer
    from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
    from tests.support.mcp_servers import TIME_SERVER, venv_bin_on_path
    from tests.workflows.test_replay import write_history
    from worker import create_worker

    venv_bin_on_path()
    time = MCPToolset(TIME_SERVER)
    ask = ConfirmationHook(
        {"convert_time": DurableConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), timeout=timedelta(hours=1))}
    )
    with ScriptedModelServer() as scripted:
        os.environ["OPENAI_BASE_URL"] = scripted.base_url
        os.environ["OPENAI_API_KEY"] = "scripted-model"
        client = await connect(address)
        run_id = "replay-mcp-time"
        scripted.script(
            run_id,
            [
                {"tool_calls": [{"name": "get_current_time", "arguments": {"timezone": "UTC"}}]},
                {
                    "tool_calls": [
                        {
                            "name": "convert_time",
                            "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                        }
                    ]
                },
                {"text": "noon in UTC is 21:00 in Tokyo"},
            ],
        )
        agent = Agent(model=run_id, tools=[time], hooks={"before_tool": [ask]})
        async with create_worker(client, tools=[time], task_queue=run_id):
            handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=run_id)
            [pending] = await handle.wait_for_pending(timeout=timedelta(seconds=60))
            await handle.confirm(pending.tool_call_id, approver="ann")
            await handle.result()
            write_history(HISTORY, run_id, await handle.workflow.fetch_history())


if __name__ == "__main__":
    from tests.support.history_recording import record_in_dev_stack

    record_in_dev_stack(record)
    print(f"recorded {HISTORY}")

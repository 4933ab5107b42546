"""``Tool(local=True)``: its calls run as local activities (markers in history, no activity task),
with the same results, tool context and error handling as ordinary tool calls."""

from __future__ import annotations

import json

from temporalio.api.enums.v1 import EventType

from agent import Agent, ChatMessage
from core.tools import Tool, tool
from tests import tools as t

LOCAL_ADD = Tool(t.add.function, name="add", local=True)
LOCAL_RECORD = Tool(t.record.function, name="record", local=True)


def scheduled_activities(history) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


def test_local_is_part_of_the_spec_and_off_by_default():
    assert LOCAL_ADD.spec.local is True
    assert t.add.spec.local is False

    @tool(local=True)
    def double(x: int) -> int:
        """Double x."""
        return 2 * x

    assert double.spec.local is True
    assert Agent(model="m", tools=[double]).tool_specs[0].local is True
    # the model never sees it: the wire form of a tool is name, description, parameters
    assert "local" not in json.dumps(Agent(model="m", tools=[double]).to_dict()["tools"][0]["parameters"])


async def test_a_local_tool_runs_as_a_local_activity(client, worker, scripted, model, run_id, tmp_path, monkeypatch):
    side_effects = tmp_path / "effects.jsonl"
    monkeypatch.setenv("SIDE_EFFECTS_FILE", str(side_effects))
    scripted.script(
        model,
        [
            {
                "tool_calls": [
                    {"name": "add", "arguments": {"a": 2, "b": 3}},
                    {"name": "record", "arguments": {"label": "once"}},
                    {"name": "echo", "arguments": {"text": "remote"}},
                ]
            },
            {"tool_calls": [{"name": "add", "arguments": {"a": "not a number", "b": 1}}]},
            {"text": "done"},
        ],
    )
    agent = Agent(model=model, tools=[LOCAL_ADD, LOCAL_RECORD, t.echo], max_agent_steps=5)
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await handle.result()
    assert result.exit_reason == "text"
    results = [m.tool_call_result for m in result.messages if m.tool_call_result is not None]
    assert [r.result for r in results[:3]] == ["5", "recorded once", "remote"]
    assert results[3].error and "Invalid arguments for tool 'add'" in results[3].result
    history = await handle.workflow.fetch_history()
    # echo is an ordinary activity; the three local calls (one failing validation) are markers
    assert scheduled_activities(history).count("invoke_tool") == 1
    assert sum(1 for e in history.events if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED) == 3
    # the tool context (idempotency key, attempt) is the same as in an ordinary tool activity
    [line] = side_effects.read_text().splitlines()
    assert json.loads(line)["key"] == f"{run_id}/{results[1].origin.id}"
    assert json.loads(line)["attempt"] == 1

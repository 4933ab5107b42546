"""Replay committed histories: a change that breaks running workflows fails here.

Re-record (only when a change to the workflow is intentionally incompatible, with a
versioning plan) with: ``python -m tests.workflows.test_replay`` (starts its own dev server).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from agent import Agent, ChatMessage
from runtime.plugin import AgentPlugin
from workflows.agent_workflow import AgentWorkflow

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
RUN_LOOP_HISTORY = HISTORIES / "run_loop.json"
#: Offloading inside the tool activity + conversation by reference (model inputs name stored conversation).
OFFLOAD_HISTORY = HISTORIES / "offload_conversation.json"
#: A worker without a conversation store: every model input carries the whole conversation.
WHOLE_CONVERSATION_HISTORY = HISTORIES / "run_loop_whole_conversation.json"
#: A ``Tool(local=True)``: its calls are local-activity markers, not activity tasks.
LOCAL_TOOL_HISTORY = HISTORIES / "run_loop_local_tool.json"


def replayer() -> Replayer:
    return Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])


@pytest.mark.parametrize(
    "path", [RUN_LOOP_HISTORY, OFFLOAD_HISTORY, WHOLE_CONVERSATION_HISTORY, LOCAL_TOOL_HISTORY], ids=lambda p: p.stem
)
async def test_replay_committed_history(path):
    data = json.loads(path.read_text())
    history = WorkflowHistory.from_json(data["workflow_id"], data["history"])
    assert len(history.events) > 20  # a real run: hooks, tool steps, a text exit
    result = await replayer().replay_workflow(history)
    assert result.replay_failure is None


def test_local_tool_history_runs_its_calls_as_local_activities():
    """The local-tool history is what it says: ``add`` calls are markers, ``echo`` an activity task."""
    events = json.loads(LOCAL_TOOL_HISTORY.read_text())["history"]["events"]
    kinds = [e["eventType"] for e in events]
    scheduled = [
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in events
        if "activityTaskScheduledEventAttributes" in e
    ]
    assert kinds.count("EVENT_TYPE_MARKER_RECORDED") == 1  # add (its second call has invalid arguments)
    assert scheduled.count("invoke_tool") == 1  # echo


async def test_replay_detects_a_changed_workflow():
    """The check can fail: the same history with a different tool call recorded is non-deterministic."""
    data = json.loads(RUN_LOOP_HISTORY.read_text())
    tampered = json.dumps(data["history"]).replace('"invoke_tool"', '"chat_completion"', 1)
    history = WorkflowHistory.from_json(data["workflow_id"], tampered)
    result = await replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None


async def record(address: str) -> None:
    """Run the representative scenario against a dev server and write its history."""
    from activities.model import ModelActivities
    from agent.client import connect
    from agent.dev.scripted_model import ScriptedModelServer
    from core.tools import Tool
    from tests import tools as t
    from tests.workflows.test_run_loop import ALL_TRACE_HOOKS, TRACE
    from worker import create_worker

    with ScriptedModelServer() as scripted:
        os.environ["OPENAI_BASE_URL"] = scripted.base_url
        os.environ["OPENAI_API_KEY"] = "scripted-model"
        client = await connect(address)
        replies = [
            {
                "tool_calls": [
                    {"name": "add", "arguments": {"a": 1, "b": 2}},
                    {"name": "echo", "arguments": {"text": "x"}},
                ]
            },
            {"tool_calls": [{"name": "add", "arguments": '{"a": 1'}]},
            {"text": "first"},
            {"text": "second"},
        ]
        hooks = {**ALL_TRACE_HOOKS, "on_exit": [t.trace_on_exit, t.continue_once]}
        # The same run twice: on a worker that stores conversations (model inputs name the stored
        # prefix) and on one that does not (every model input carries the whole conversation).
        for path, run_id, model_activities in (
            (RUN_LOOP_HISTORY, "replay-run-loop", None),
            (WHOLE_CONVERSATION_HISTORY, "replay-whole-conversation", ModelActivities(conversations=None)),
        ):
            scripted.script(run_id, replies)
            agent = Agent(model=run_id, tools=[t.add, t.echo], hooks=hooks, state_schema=TRACE, system_prompt="sys")
            async with create_worker(client, tools=t.TEST_TOOLS, task_queue=run_id, model_activities=model_activities):
                handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=run_id)
                await handle.result()
                history = await handle.workflow.fetch_history()
            write_history(path, run_id, history)

        # The same run with ``add`` as a local tool (its call is a local activity).
        run_id = "replay-local-tool"
        scripted.script(run_id, replies)
        local_add = Tool(t.add.function, name="add", local=True)
        agent = Agent(model=run_id, tools=[local_add, t.echo], hooks=hooks, state_schema=TRACE, system_prompt="sys")
        async with create_worker(client, tools=t.TEST_TOOLS, task_queue=run_id):
            handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=run_id)
            await handle.result()
            write_history(LOCAL_TOOL_HISTORY, run_id, await handle.workflow.fetch_history())

        from hooks.tool_result_offloading import OffloadOverChars, S3ToolResultStore, ToolResultOffloadHook

        model = "replay-offload"
        scripted.script(
            model,
            [
                {
                    "tool_calls": [
                        {"name": "big_text", "arguments": {"size": 5000}},
                        {"name": "echo", "arguments": {"text": "x"}},
                    ]
                },
                {"tool_calls": [{"name": "big_text", "arguments": {"size": 300}}]},
                {"text": "done"},
            ],
        )
        offload = ToolResultOffloadHook(
            S3ToolResultStore(os.environ["TOOL_RESULTS_BUCKET"]), {"big_text": OffloadOverChars(1000)}
        )
        agent = Agent(model=model, tools=[t.big_text, t.echo], hooks={"after_tool": [offload]})
        async with create_worker(client, tools=t.TEST_TOOLS, task_queue="record"):
            handle = await agent.start(
                client, [ChatMessage.from_user("go")], run_id="replay-offload", task_queue="record"
            )
            result = await handle.result()
            assert "tool_result_offloaded" in result.messages[2].meta
            write_history(OFFLOAD_HISTORY, "replay-offload", await handle.workflow.fetch_history())


def write_history(path: Path, workflow_id: str, history) -> None:
    HISTORIES.mkdir(exist_ok=True)
    path.write_text(json.dumps({"workflow_id": workflow_id, "history": json.loads(history.to_json())}, indent=1))


if __name__ == "__main__":
    from tests.support.history_recording import record_in_dev_stack

    record_in_dev_stack(record)
    print(f"recorded {RUN_LOOP_HISTORY}, {WHOLE_CONVERSATION_HISTORY}, {LOCAL_TOOL_HISTORY} and {OFFLOAD_HISTORY}")

"""Determinism of compaction: committed histories of runs with tool-result pruning and summaries
(written by the model activity) replay with no model call, also across continue-as-new.

Histories (tests/histories/):

- ``compaction_summarization.json``: one run; pruning then summarisation before model calls.
- ``compaction_continue_as_new.json``: the same hooks in a run that continues as new; every
  run of the chain, oldest first (later runs start from a ``RunSnapshot``).

Re-record (only when a change to the workflow is intentionally incompatible, with a versioning
plan) with: ``python -m tests.hooks.compaction.test_compaction_replay`` (starts its own dev server and scripted model).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from agent import Agent, ChatMessage
from hooks.compaction import ApproximateTokenCounter, CompactionHook, SummarizationCompactor, ToolResultPruningCompactor
from runtime.plugin import AgentPlugin
from workflows.agent_workflow import AgentWorkflow

HISTORIES = Path(__file__).resolve().parents[2] / "histories"
SUMMARIZATION_HISTORY = HISTORIES / "compaction_summarization.json"
CONTINUE_AS_NEW_HISTORY = HISTORIES / "compaction_continue_as_new.json"


def replayer() -> Replayer:
    return Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])


def load(path: Path) -> tuple[dict[str, Any], list[WorkflowHistory]]:
    """The recorded file and its histories (one per run of the chain, oldest first)."""
    data = json.loads(path.read_text())
    return data, [WorkflowHistory.from_json(data["workflow_id"], h) for h in data["histories"]]


def scheduled_activities(history: WorkflowHistory) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]


@pytest.mark.parametrize("path", [SUMMARIZATION_HISTORY, CONTINUE_AS_NEW_HISTORY], ids=lambda p: p.stem)
async def test_compaction_history_replays_without_calling_the_model(path, scripted):
    data, histories = load(path)
    # what was recorded: summaries came from the model activity, next to the agent's own calls
    model_calls = sum(scheduled_activities(h).count("chat_completion") for h in histories)
    assert model_calls > data["agent_model_calls"] > 0
    if path == CONTINUE_AS_NEW_HISTORY:
        assert len(histories) >= 2
        assert histories[0].events[-1].HasField("workflow_execution_continued_as_new_event_attributes")
        assert histories[-1].events[-1].HasField("workflow_execution_completed_event_attributes")

    for history in histories:
        result = await replayer().replay_workflow(history)
        assert result.replay_failure is None
    # replay never called the model: the scripted server saw no request for the recorded models
    assert all(scripted.requests(model) == [] for model in data["models"])


async def test_a_changed_compaction_setting_does_not_replay():
    """The check can fail: the same history with a smaller context window in the recorded agent
    compacts (and asks for summaries) at other steps, which replay reports as non-deterministic."""
    data, _ = load(SUMMARIZATION_HISTORY)
    events = data["histories"][0]["events"]
    payload = events[0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"][0]
    run_input = json.loads(base64.b64decode(payload["data"]))
    for hook in run_input["agent"]["hooks"]["before_llm"]:
        hook["init_parameters"]["context_window"] //= 3
    payload["data"] = base64.b64encode(json.dumps(run_input).encode()).decode()
    history = WorkflowHistory.from_json(data["workflow_id"], data["histories"][0])
    result = await replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert isinstance(result.replay_failure, NondeterminismError)


# -- recording -------------------------------------------------------------------------------


def compaction_agent(model: str, summary_model: str, **kwargs: Any) -> Agent:
    """Pruning (window 700) then summarisation (window 900), both with ApproximateTokenCounter.

    Pruning fires first and often; results under its ``min_tokens`` stay, so the conversation still
    grows until the summariser's trigger is reached too.
    """
    from tests import tools as t

    counter = ApproximateTokenCounter()
    hooks = [
        CompactionHook(
            ToolResultPruningCompactor(min_keep_steps=1, min_tokens=80), context_window=700, token_counter=counter
        ),
        CompactionHook(
            SummarizationCompactor(model=summary_model, approximate_summary_tokens=20),
            context_window=900,
            token_counter=counter,
        ),
    ]
    return Agent(model=model, tools=[t.big_text], system_prompt="sys", hooks={"before_llm": hooks}, **kwargs)


async def record_run(client, scripted, name: str, steps: int, path: Path, **agent_kwargs: Any) -> None:
    """Run the scenario, check that both compactors fired, and write every run of its chain."""
    from agent.client import get_run
    from hooks.compaction.summarization import is_summary

    summary_model = f"{name}-summaries"
    scripted.script(summary_model, [{"text": "- fetched big texts 0-9a-f; keep going", "times": 50}])
    # big results (pruned) alternate with small ones (under min_tokens: kept until summarised)
    sizes = [600, 200] * (steps // 2)
    scripted.script(
        name, [*({"tool_calls": [{"name": "big_text", "arguments": {"size": n}}]} for n in sizes), {"text": "done"}]
    )
    agent = compaction_agent(name, summary_model, **agent_kwargs)
    await agent.start(client, [ChatMessage.from_user("Collect the texts.")], run_id=name, task_queue="record")
    result = await get_run(client, name).result()
    assert result.exit_reason == "text"
    assert any(is_summary(m) for m in result.messages), "no summary in the run"
    assert scripted.requests(summary_model), "no summary request"
    # pruned results reached the model: the agent's requests or the transcripts sent for summaries
    sent = [*scripted.requests(name), *scripted.requests(summary_model)]
    assert any("[Tool result removed" in str(r["messages"]) for r in sent), "nothing pruned"

    runs = sorted([w async for w in client.list_workflows(f'WorkflowId = "{name}"')], key=lambda w: w.start_time)
    assert len(runs) == result.continuations + 1
    histories = [await client.get_workflow_handle(name, run_id=r.run_id).fetch_history() for r in runs]
    HISTORIES.mkdir(exist_ok=True)
    record = {
        "workflow_id": name,
        "models": [name, summary_model],
        "agent_model_calls": len(scripted.requests(name)),
        "histories": [json.loads(h.to_json()) for h in histories],
    }
    path.write_text(json.dumps(record, indent=1))


async def record(address: str) -> None:
    from agent.client import connect
    from agent.dev.scripted_model import ScriptedModelServer
    from tests.tools import TEST_TOOLS
    from worker import create_worker

    with ScriptedModelServer() as scripted:
        os.environ["OPENAI_BASE_URL"] = scripted.base_url
        os.environ["OPENAI_API_KEY"] = "scripted-model"
        client = await connect(address)
        async with create_worker(client, tools=TEST_TOOLS, task_queue="record"):
            await record_run(client, scripted, "replay-compaction-summarization", 14, SUMMARIZATION_HISTORY)
            await record_run(
                client,
                scripted,
                "replay-compaction-continue-as-new",
                20,
                CONTINUE_AS_NEW_HISTORY,
                continue_as_new_after_events=100,
            )


if __name__ == "__main__":
    from tests.support.history_recording import record_in_dev_stack

    record_in_dev_stack(record)
    print(f"recorded {SUMMARIZATION_HISTORY} and {CONTINUE_AS_NEW_HISTORY}")

"""Haystack-parity compaction in real runs: the Temporal dev server, moto S3, the real openai SDK and the
scripted OpenAI-compatible model server (labelled as such; never a real model).

- ``ToolResultOffloadCompactor`` writes older results through the ``store_tool_result`` activity to the
  run's scope of the store; the pointers read back; the run replays without writing again;
- ``SummarizationCompactor(chat_generator=ChatGeneratorSpec(...))`` sends the spec's model and
  generation parameters, and (once the model activity takes an endpoint) reaches the named endpoint.
"""

from __future__ import annotations

import os

from temporalio.worker import Replayer

from agent import Agent, ChatMessage
from agent.dev.scripted_model import ScriptedModelServer
from core.tool_records import OFFLOADED_META_KEY
from hooks.compaction import (
    ApproximateTokenCounter,
    ChatGeneratorSpec,
    CompactionHook,
    SummarizationCompactor,
    ToolResultOffloadCompactor,
)
from hooks.compaction.summarization import is_summary
from hooks.tool_result_offloading import S3ToolResultStore
from runtime.plugin import AgentPlugin
from tests import tools as t
from tests.support.compaction_support import assert_pairs_intact
from workflows.agent_workflow import AgentWorkflow

RESULT_SIZE = 2000


def big_text_calls(n: int, size: int = RESULT_SIZE) -> list[dict]:
    return [{"tool_calls": [{"name": "big_text", "arguments": {"size": size}}]}] * n


def scheduled(history, activity_type: str) -> int:
    return sum(
        1
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == activity_type
    )


async def test_offload_compactor_writes_through_the_store_activity(client, worker, scripted, model, run_id, stack):
    bucket = os.environ["TOOL_RESULTS_BUCKET"]
    store = S3ToolResultStore(bucket)
    scripted.script(model, [*big_text_calls(8), {"text": "all done"}])
    compaction = CompactionHook(
        ToolResultOffloadCompactor(store, min_tokens=100, preview_chars=50),
        context_window=3000,
        token_counter=ApproximateTokenCounter(),
    )
    agent = Agent(model=model, tools=[t.big_text], system_prompt="sys", hooks={"before_llm": [compaction]})
    handle = await agent.start(client, [ChatMessage.from_user("Collect the texts.")], run_id=run_id, task_queue=worker)
    result = await handle.result()

    assert result.exit_reason == "text" and result.last_message.text == "all done"
    assert_pairs_intact(result.messages)
    offloaded = [m for m in result.messages if m.meta.get(OFFLOADED_META_KEY)]
    assert offloaded, "nothing was offloaded"
    assert all(m.meta["context_compaction"]["strategy"] == "tool_result_offloading" for m in offloaded)
    # the newest step's result stayed in place
    assert not result.messages[-2].meta.get(OFFLOADED_META_KEY)
    # every pointer reads back, from the run's own scope of the store
    references = [m.meta[OFFLOADED_META_KEY][0] for m in offloaded]
    assert len(set(references)) == len(references)
    run_store = store.for_run(run_id)
    for reference in references:
        assert reference.startswith(f"s3://{bucket}/tool-results/{run_id}/compacted/step-")
        assert run_store.read(reference) == t.big_text.function(RESULT_SIZE)
    # the model saw pointers instead of the results
    last_request = scripted.requests(model)[-1]
    assert sum("Tool result offloaded" in str(m.get("content")) for m in last_request["messages"]) == len(offloaded)

    history = await handle.workflow.fetch_history()
    assert scheduled(history, "store_tool_result") == len(references)
    replayed = await Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()]).replay_workflow(history)
    assert replayed.replay_failure is None


async def test_summariser_sends_the_chat_generator_spec(client, worker, scripted, model, run_id):
    summary_model = f"{model}-summaries"
    scripted.script(summary_model, [{"text": "- fetched big texts; keep going", "times": 20}])
    scripted.script(model, [*big_text_calls(8), {"text": "all done"}])
    spec = ChatGeneratorSpec(summary_model, generation_kwargs={"temperature": 0.25, "max_tokens": 300})
    compaction = CompactionHook(
        SummarizationCompactor(chat_generator=spec, approximate_summary_tokens=20),
        context_window=3000,
        token_counter=ApproximateTokenCounter(),
    )
    agent = Agent(model=model, tools=[t.big_text], system_prompt="sys", hooks={"before_llm": [compaction]})
    handle = await agent.start(client, [ChatMessage.from_user("Collect the texts.")], run_id=run_id, task_queue=worker)
    result = await handle.result()

    assert result.exit_reason == "text"
    assert any(is_summary(m) for m in result.messages)
    requests = scripted.requests(summary_model)
    assert requests
    assert all(r["temperature"] == 0.25 and r["max_tokens"] == 300 for r in requests)
    assert all(r["model"] == summary_model for r in requests)
    assert result.hook_token_usage["total_tokens"] > 0
    history = await handle.workflow.fetch_history()
    replayed = await Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()]).replay_workflow(history)
    assert replayed.replay_failure is None


async def test_summariser_reaches_the_named_endpoint(client, worker, scripted, model, run_id, monkeypatch):
    """``endpoint="SUMMARY"``: the worker sends summaries to SUMMARY_OPENAI_BASE_URL with SUMMARY_OPENAI_API_KEY,
    and the agent's own calls still go to OPENAI_BASE_URL."""
    with ScriptedModelServer() as other:
        monkeypatch.setenv("SUMMARY_OPENAI_BASE_URL", other.base_url)
        monkeypatch.setenv("SUMMARY_OPENAI_API_KEY", "summary-key")
        summary_model = f"{model}-summaries"
        other.script(summary_model, [{"text": "- from the other endpoint", "times": 20}])
        scripted.script(model, [*big_text_calls(8), {"text": "all done"}])
        spec = ChatGeneratorSpec(summary_model, endpoint="SUMMARY")
        compaction = CompactionHook(
            SummarizationCompactor(chat_generator=spec, approximate_summary_tokens=20), context_window=3000
        )
        agent = Agent(model=model, tools=[t.big_text], system_prompt="sys", hooks={"before_llm": [compaction]})
        handle = await agent.start(
            client, [ChatMessage.from_user("Collect the texts.")], run_id=run_id, task_queue=worker
        )
        result = await handle.result()
        assert result.exit_reason == "text"
        assert any(is_summary(m) and "other endpoint" in m.text for m in result.messages)
        assert other.requests(summary_model) and not scripted.requests(summary_model)
        assert len(scripted.requests(model)) == 9

"""Compaction and the token budget inside real runs: the Temporal dev server, the real openai SDK,
and the scripted OpenAI-compatible model server (labelled as such; never a real model)."""

from __future__ import annotations

from temporalio.worker import Replayer

from agent import Agent, ChatMessage
from hooks.budget import TokenBudgetHook
from hooks.compaction import (
    ApproximateTokenCounter,
    CompactionHook,
    SlidingWindowCompactor,
    SummarizationCompactor,
    TiktokenTokenCounter,
    ToolResultPruningCompactor,
)
from hooks.compaction.summarization import is_summary
from runtime.plugin import AgentPlugin
from tests import tools as t
from tests.support.compaction_support import assert_pairs_intact
from workflows.agent_workflow import AgentWorkflow


def big_text_calls(n: int, size: int = 2000) -> list[dict]:
    return [{"tool_calls": [{"name": "big_text", "arguments": {"size": size}}]}] * n


async def start(client, worker, run_id, agent, prompt="Collect the texts."):
    return await agent.start(client, [ChatMessage.from_user(prompt)], run_id=run_id, task_queue=worker)


async def test_summaries_come_from_the_model_activity_and_replay_without_it(client, worker, scripted, model, run_id):
    summary_model = f"{model}-summaries"
    scripted.script(summary_model, [{"text": "- fetched big texts; keep going", "times": 20}])
    scripted.script(model, [*big_text_calls(8), {"text": "all done"}])
    compaction = CompactionHook(
        SummarizationCompactor(model=summary_model, approximate_summary_tokens=20),
        context_window=3000,
        compact_at=0.7,
        compact_to=0.4,
        token_counter=ApproximateTokenCounter(),
    )
    agent = Agent(model=model, tools=[t.big_text], system_prompt="sys", hooks={"before_llm": [compaction]})
    handle = await start(client, worker, run_id, agent)
    result = await handle.result()

    assert result.exit_reason == "text" and result.last_message.text == "all done"
    summaries = [m for m in result.messages if is_summary(m)]
    assert summaries and all("keep going" in m.text for m in summaries)
    assert_pairs_intact(result.messages)
    summary_requests = scripted.requests(summary_model)
    assert summary_requests
    for request in summary_requests:
        assert request["messages"][0]["role"] == "system"
        assert request["messages"][1]["content"].startswith("<conversation_to_summarize>")
        assert "tools" not in request or not request["tools"]
    # the agent's later requests carry the summary instead of the summarised steps
    agent_requests = scripted.requests(model)
    assert len(agent_requests) == 9
    assert any("<conversation_summary>" in str(m.get("content")) for m in agent_requests[-1]["messages"])
    assert len(agent_requests[-1]["messages"]) < 2 + 2 * 8
    # summaries are hook usage, apart from the agent's own token_usage
    assert result.hook_token_usage["total_tokens"] > 0
    assert result.token_usage["total_tokens"] > 0

    history = await handle.workflow.fetch_history()
    replayed = await Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()]).replay_workflow(history)
    assert replayed.replay_failure is None
    assert len(scripted.requests(summary_model)) == len(summary_requests)  # replay called no model
    assert len(scripted.requests(model)) == len(agent_requests)


async def test_pruning_then_sliding_window_with_tiktoken_in_a_run(client, worker, scripted, model, run_id):
    scripted.script(model, [*big_text_calls(10, size=3000), {"text": "finished"}])
    counter = TiktokenTokenCounter()
    hooks = [
        CompactionHook(ToolResultPruningCompactor(min_keep_steps=3), context_window=4000, token_counter=counter),
        CompactionHook(SlidingWindowCompactor(), context_window=4000, token_counter=counter),
    ]
    agent = Agent(model=model, tools=[t.big_text], system_prompt="sys", hooks={"before_llm": hooks})
    result = await (await start(client, worker, run_id, agent)).result()
    assert result.exit_reason == "text"
    # both fired: pruned results reached the model, and later the window dropped old steps (pruned ones included)
    requests = scripted.requests(model)
    assert any("[Tool result removed" in str(r["messages"]) for r in requests)
    assert any(m.meta.get("context_compaction", {}).get("strategy") == "sliding_window" for m in result.messages)
    assert result.messages[0].text == "sys" and result.messages[1].text == "Collect the texts."
    assert_pairs_intact(result.messages)
    # every request stayed small: ten uncompacted 3,000-character results would make the last one over 30,000
    sizes = [len(str(r["messages"])) for r in requests]
    assert len(sizes) == 11 and max(sizes) < 16_000


async def test_token_budget_ends_a_loop_kept_alive_by_continue_run(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "again", "times": 30}])
    budget = TokenBudgetHook(max_total_tokens=40, add_final_message=True)
    agent = Agent(
        model=model,
        hooks={"before_llm": [budget], "on_exit": [t.always_continue]},
        max_agent_steps=30,
    )
    result = await (await start(client, worker, run_id, agent, prompt="hi")).result()
    calls = len(scripted.requests(model))
    assert result.exit_reason == "token_budget_exceeded"
    assert 1 < calls < 30
    assert result.token_usage["total_tokens"] >= 40
    assert result.last_message.text == "The Agent stopped because the token budget was exceeded."
    # it stopped at the first check after the budget was reached: before the last model call it was still under
    last_reply = next(m for m in reversed(result.messages) if "usage" in m.meta)
    assert result.token_usage["total_tokens"] - last_reply.meta["usage"]["total_tokens"] < 40


async def test_budget_counts_summaries_only_when_asked(client, worker, scripted, model, run_id):
    async def run(include: bool, suffix: str):
        name = f"{model}-{suffix}"
        scripted.script(f"{name}-summaries", [{"text": "- short", "times": 20}])
        scripted.script(name, [*big_text_calls(6), {"text": "done"}])
        hooks = [
            CompactionHook(
                SummarizationCompactor(model=f"{name}-summaries", approximate_summary_tokens=20), context_window=2500
            ),
            TokenBudgetHook(max_total_tokens=budget_tokens, include_hook_usage=include),
        ]
        agent = Agent(model=name, tools=[t.big_text], hooks={"before_llm": hooks})
        result = await (await start(client, worker, f"{run_id}-{suffix}", agent)).result()
        return result

    budget_tokens = 10**9
    probe = await run(False, "probe")
    assert probe.exit_reason == "text" and probe.hook_token_usage["total_tokens"] > 0
    last_call = probe.last_message.meta["usage"]["total_tokens"]
    # Just over the agent's own usage before its last call: only counting the summaries reaches it.
    budget_tokens = probe.token_usage["total_tokens"] - last_call + 1
    assert (await run(False, "agent-only")).exit_reason == "text"
    with_hooks = await run(True, "with-hooks")
    assert with_hooks.exit_reason == "token_budget_exceeded"
    assert with_hooks.token_usage["total_tokens"] < probe.token_usage["total_tokens"]

"""Sub-agents as child workflows (``Agent.as_tool``, DESIGN.md "Composition"), on the real dev
server and the scripted model: two children in one step (one waiting for a person), cancel,
token usage and the budget, offloading of a child's answer."""

from __future__ import annotations

import asyncio

from agent import Agent, ChatMessage, get_run
from agent.approvals.waiting import list_waiting_runs
from hooks import FunctionHook
from hooks.budget import TokenBudgetHook
from hooks.budget.hooks import total_tokens
from hooks.tool_result_offloading import FileSystemToolResultStore, OffloadOverChars, ToolResultOffloadHook
from tests import tools as t
from tests.support.hitl_helpers import call, calls
from tests.support.polling import eventually
from tests.support.sub_agents import script_team, team, wait_child_pending
from workflows.children import SUB_AGENT_META_KEY


async def test_two_children_in_one_step_one_waiting_for_approval(client, worker, scripted, model, run_id):
    lead, _, _ = team(model)
    script_team(scripted, model)
    handle = await lead.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    researcher = get_run(client, f"{run_id}/r1")
    summarizer = get_run(client, f"{run_id}/s1")

    (pending,) = await wait_child_pending(researcher)
    assert (pending.tool_name, pending.tool_params, pending.parent_run_id) == ("add", {"a": 2, "b": 3}, run_id)
    summary = await asyncio.wait_for(summarizer.result(), timeout=30)  # the other child does not wait
    assert summary.last_message.text == "Summary: short."
    assert len(summary.messages) == 1  # a child's result carries only its answer into the parent's history
    listed = await eventually(
        lambda: list_waiting_runs(client),
        lambda found: any(r.run_id == researcher.run_id for r in found.runs),
        message="the child waiting for approval is never listed by agent pending",
    )
    (row,) = [r for r in listed.runs if r.run_id == researcher.run_id]
    assert row.pending[0].parent_run_id == run_id
    status = await handle.status()
    assert (status.phase, status.done) == ("tools", False)  # the parent waits for its child

    await researcher.confirm(pending.tool_call_id, approver="ann")
    result = await asyncio.wait_for(handle.result(), timeout=60)

    assert result.last_message.text == "Both are done."
    answers = {m.tool_call_result.origin.id: m for m in result.messages if m.tool_call_result is not None}
    assert answers["r1"].tool_call_result.result == "2+3 is 5."
    assert answers["s1"].tool_call_result.result == "Summary: short."
    assert not answers["r1"].tool_call_result.error
    child_meta = {call_id: m.meta[SUB_AGENT_META_KEY] for call_id, m in answers.items()}
    assert child_meta["r1"]["run_id"] == f"{run_id}/r1" and child_meta["r1"]["exit_reason"] == "text"
    assert child_meta["r1"]["step_count"] == 2
    # The parent's token_usage is its own model calls plus each child's.
    own = sum(total_tokens(m.meta["usage"]) for m in result.messages if m.role.value == "assistant")
    children = sum(total_tokens(meta["token_usage"]) for meta in child_meta.values())
    assert children > 0
    assert total_tokens(result.token_usage) == own + children
    assert result.tool_call_counts == {"research": 1, "summarize": 1}
    researched = await researcher.result()
    assert researched.tool_call_counts == {"add": 1}  # the child's own hooks and tools ran


async def test_cancelling_the_parent_cancels_its_waiting_child(client, worker, scripted, model, run_id):
    lead, _, _ = team(model)
    script_team(scripted, model)
    handle = await lead.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    researcher = get_run(client, f"{run_id}/r1")
    await wait_child_pending(researcher)
    await asyncio.wait_for(get_run(client, f"{run_id}/s1").result(), timeout=30)

    await handle.cancel(reason="the user closed the ticket")
    result = await asyncio.wait_for(handle.result(), timeout=60)
    child = await asyncio.wait_for(researcher.result(), timeout=30)

    assert result.exit_reason == "cancelled" and child.exit_reason == "cancelled"
    (closed,) = [m for m in child.messages if m.tool_call_result is not None]
    assert "the user closed the ticket" in closed.tool_call_result.result  # the parent's reason reached it
    answers = {m.tool_call_result.origin.id: m.tool_call_result for m in result.messages if m.tool_call_result}
    assert answers["r1"].error and "cancelled" in answers["r1"].result
    assert answers["s1"].result == "Summary: short."  # the child that had finished keeps its answer


async def test_a_childs_tokens_count_against_the_parents_budget(client, worker, scripted, model, run_id):
    # The child's long system prompt makes its model calls cost far more than the parent's.
    child = Agent(model=f"{model}-s", tools=[t.echo], system_prompt="Be thorough. " * 300)
    lead = Agent(
        model=model,
        tools=[child.as_tool("summarize", "Summarize a text")],
        hooks={"before_llm": [TokenBudgetHook(max_total_tokens=400)]},
    )
    scripted.script(model, [{"tool_calls": [{"name": "summarize", "id": "s1", "arguments": {"input": "why?"}}]}])
    scripted.script(f"{model}-s", [{"text": "Because."}])
    handle = await lead.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await asyncio.wait_for(handle.result(), timeout=60)

    assert result.exit_reason == "token_budget_exceeded"
    own = sum(total_tokens(m.meta["usage"]) for m in result.messages if m.role.value == "assistant")
    assert own < 400 <= total_tokens(result.token_usage)  # the child's tokens stopped the parent
    assert result.step_count == 1  # stopped before its second model call


async def test_the_parents_offload_policy_applies_to_a_childs_answer(client, worker, scripted, model, run_id, tmp_path):
    offload = ToolResultOffloadHook(FileSystemToolResultStore(tmp_path), {"summarize": OffloadOverChars(100)})
    lead, _, _ = team(model, parent_hooks={"after_tool": [offload]})
    scripted.script(
        model, [{"tool_calls": [{"name": "summarize", "id": "s1", "arguments": {"input": "x"}}]}, {"text": "ok"}]
    )
    long_answer = "long answer " * 50
    scripted.script(f"{model}-s", [{"text": long_answer}])
    handle = await lead.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await asyncio.wait_for(handle.result(), timeout=60)

    (answer,) = [m for m in result.messages if m.tool_call_result is not None]
    assert answer.meta.get("tool_result_offloaded"), answer
    assert len(answer.tool_call_result.result) < len(long_answer)  # a pointer with a preview
    (reference,) = answer.meta["tool_result_offloaded"]
    assert FileSystemToolResultStore(tmp_path).for_run(run_id).read(reference) == long_answer


async def test_temporals_own_cancel_of_the_parent_cancels_its_child(client, worker, scripted, model, run_id):
    lead, _, _ = team(model)
    script_team(scripted, model)
    handle = await lead.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    researcher = get_run(client, f"{run_id}/r1")
    await wait_child_pending(researcher)

    await handle.workflow.cancel()  # as the UI or `temporal workflow cancel` does
    result = await asyncio.wait_for(handle.result(), timeout=60)
    child = await asyncio.wait_for(researcher.result(), timeout=30)

    assert result.exit_reason == "cancelled" and child.exit_reason == "cancelled"
    assert [m for m in child.messages if m.tool_call_result and "cancelled" in m.tool_call_result.result]


async def test_a_bad_argument_or_a_failing_child_is_an_error_result(client, worker, scripted, model, run_id):
    failing = Agent(model=f"{model}-f", tools=[t.echo], hooks={"before_llm": [FunctionHook(t.raise_value_error)]})
    lead = Agent(model=model, tools=[failing.as_tool("research", "Research one question")])
    scripted.script(
        model,
        [
            calls(call("research", id="bad", question="no input")),
            calls(call("research", id="boom", input="go on")),
            {"text": "gave up"},
        ],
    )
    handle = await lead.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await asyncio.wait_for(handle.result(), timeout=60)

    answers = {m.tool_call_result.origin.id: m.tool_call_result for m in result.messages if m.tool_call_result}
    assert answers["bad"].error and '{"input": "<your request>"}' in answers["bad"].result
    assert answers["boom"].error and f"(run {run_id}/boom) failed" in answers["boom"].result
    assert "raise_value_error" in answers["boom"].result  # the child's failure names its hook
    assert result.last_message.text == "gave up"

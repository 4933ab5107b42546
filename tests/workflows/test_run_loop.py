"""The run loop's order and precedence rules (DESIGN.md "The run loop"), one test per rule,
against the real Temporal dev server, the real openai SDK and the scripted model server."""

from __future__ import annotations

from agent import Agent, ChatMessage
from tests import tools as t

TRACE = {"trace": {"type": list}, "nudged": {"type": int}}
ALL_TRACE_HOOKS = {
    "before_run": [t.trace_before_run],
    "before_llm": [t.trace_before_llm],
    "before_tool": [t.trace_before_tool],
    "after_tool": [t.trace_after_tool],
    "on_exit": [t.trace_on_exit],
    "after_run": [t.trace_after_run],
}


def call(name: str, **arguments):
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def run(client, worker, run_id, agent, prompt="go", **kwargs):
    handle = await agent.start(client, [ChatMessage.from_user(prompt)], run_id=run_id, task_queue=worker, **kwargs)
    return await handle.result()


async def test_hook_order_tool_step_then_text(client, worker, scripted, model, run_id):
    scripted.script(model, [call("add", a=1, b=2), {"text": "3"}])
    agent = Agent(model=model, tools=[t.add], hooks=ALL_TRACE_HOOKS, state_schema=TRACE)
    result = await run(client, worker, run_id, agent)
    assert result.state["trace"] == [
        "before_run@0",
        "before_llm@0",
        "before_tool@0",
        "after_tool@0",
        "before_llm@1",
        "on_exit@2",
        "after_run@2",
    ]
    assert result.exit_reason == "text"
    assert result.step_count == 2
    assert result.tool_call_counts == {"add": 1}
    assert result.last_message.text == "3"
    tool_message = result.messages[-2]
    assert tool_message.tool_call_result.result == "3" and not tool_message.tool_call_result.error
    # token usage is cumulative over both model calls
    assert result.token_usage["total_tokens"] > 0
    requests = scripted.requests(model)
    assert len(requests) == 2 and requests[1]["messages"][-1]["role"] == "tool"


async def test_before_tool_rewrite_is_honoured(client, worker, scripted, model, run_id):
    scripted.script(model, [call("add", a=1, b=2), {"text": "done"}])
    agent = Agent(model=model, tools=[t.add], hooks={"before_tool": [t.double_add_arguments]})
    result = await run(client, worker, run_id, agent)
    assert result.messages[-2].tool_call_result.result == "103"


async def test_after_tool_runs_when_before_tool_removed_every_call(client, worker, scripted, model, run_id):
    scripted.script(model, [call("add", a=1, b=2), {"text": "done"}])
    hooks = {**ALL_TRACE_HOOKS, "before_tool": [t.trace_before_tool, t.remove_all_tool_calls]}
    agent = Agent(model=model, tools=[t.add], hooks=hooks, state_schema=TRACE)
    result = await run(client, worker, run_id, agent)
    assert "after_tool@0" in result.state["trace"]
    assert result.tool_call_counts == {"add": 0}
    assert result.step_count == 2


async def test_on_exit_continue_run_keeps_loop_going(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "first"}, {"text": "second"}])
    agent = Agent(model=model, tools=[t.add], hooks={"on_exit": [t.continue_once]}, state_schema=TRACE)
    result = await run(client, worker, run_id, agent)
    assert [m.text for m in result.messages if m.role.value == "assistant"] == ["first", "second"]
    assert result.messages[-2].text == "Keep going."
    assert result.step_count == 2 and result.exit_reason == "text"


async def test_stop_run_checked_before_model_call(client, worker, scripted, model, run_id):
    scripted.script(model, [call("add", a=1, b=1), call("add", a=2, b=2), {"text": "never"}])
    agent = Agent(model=model, tools=[t.add], hooks={"before_llm": [t.stop_at_step_two]})
    result = await run(client, worker, run_id, agent)
    assert result.exit_reason == "custom_stop"
    assert result.step_count == 2
    assert len(scripted.requests(model)) == 2  # the third model call never happened


async def test_natural_exit_wins_over_stop_run_in_same_step(client, worker, scripted, model, run_id):
    scripted.script(model, [call("finish", answer="42")])
    agent = Agent(
        model=model,
        tools=[t.finish],
        exit_conditions=["finish"],
        hooks={"after_tool": [t.stop_in_after_tool]},
    )
    result = await run(client, worker, run_id, agent)
    assert result.exit_reason == "finish"


async def test_max_agent_steps_skips_on_exit_but_after_run_runs(client, worker, scripted, model, run_id):
    scripted.script(
        model,
        [
            call(
                "add",
                a=1,
                b=1,
            ),
            call("add", a=1, b=1),
        ],
    )
    agent = Agent(model=model, tools=[t.add], hooks=ALL_TRACE_HOOKS, state_schema=TRACE, max_agent_steps=2)
    result = await run(client, worker, run_id, agent)
    assert result.exit_reason == "max_agent_steps"
    assert not any(x.startswith("on_exit") for x in result.state["trace"])
    assert result.state["trace"][-1] == "after_run@2"


async def test_continue_run_bounded_by_max_steps(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "again", "times": 5}])
    agent = Agent(model=model, tools=[t.add], hooks={"on_exit": [t.always_continue]}, max_agent_steps=3)
    result = await run(client, worker, run_id, agent)
    assert result.exit_reason == "max_agent_steps" and result.step_count == 3


async def test_errored_exit_condition_tool_does_not_exit(client, worker, scripted, model, run_id):
    scripted.script(model, [call("explode", reason="x"), {"text": "gave up"}])
    agent = Agent(model=model, tools=[t.explode], exit_conditions=["explode"])
    result = await run(client, worker, run_id, agent)
    assert result.exit_reason == "text"
    assert result.messages[-2].tool_call_result.error


async def test_async_hook_is_awaited(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "hi"}])
    agent = Agent(model=model, tools=[t.add], hooks={"before_llm": [t.async_marker]}, state_schema=TRACE)
    result = await run(client, worker, run_id, agent)
    assert result.state["trace"] == ["async_marker"]


async def test_parallel_tool_calls_keep_call_order(client, worker, scripted, model, run_id):
    calls = [{"name": "echo", "arguments": {"text": str(i)}} for i in range(12)]
    scripted.script(model, [{"tool_calls": calls}, {"text": "ok"}])
    agent = Agent(model=model, tools=[t.echo], max_concurrent_tool_calls=3)
    result = await run(client, worker, run_id, agent)
    results = [m.tool_call_result.result for m in result.messages if m.role.value == "tool"]
    assert results == [str(i) for i in range(12)]
    assert result.tool_call_counts == {"echo": 12}


async def test_system_prompt_and_initial_state(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "hi"}])
    agent = Agent(model=model, tools=[t.add], system_prompt="Be brief.", state_schema=TRACE)
    result = await run(client, worker, run_id, agent, state={"trace": ["seed"]}, hook_context={"user": "ann"})
    assert result.messages[0].text == "Be brief." and result.messages[0].role.value == "system"
    assert result.state["trace"] == ["seed"]
    assert scripted.requests(model)[0]["messages"][0] == {"role": "system", "content": "Be brief."}

"""Continue-as-new on the real dev server with the scripted model server, since a long run must not
lose what it carries when its history is cut: a run that continues as new several times keeps its
State, hook memory and hook token usage, ``get_run(...).result()`` follows it to the end, and
confirmations decided by Signal or Update reach whichever run of the chain is current.

``continue_as_new_after_events=100`` (the minimum) makes a run continue every ~8 steps. AskOnce
memory across continue-as-new is tested in tests/hooks/human_in_the_loop/test_hitl.py.
"""

from __future__ import annotations

from typing import Any

from agent import Agent, ChatMessage, get_run
from agent.approvals.decisions import DecisionRefusedError, signal_decision
from hooks.human_in_the_loop import CONFIRMATION_KEY, AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from hooks.human_in_the_loop.dataclasses import ToolDecision
from tests import tools as t
from tests.support.compaction_support import assert_pairs_intact
from tests.support.continue_as_new_hooks import SideCallHook, StepMemoryHook, Tally, count_with_model_hook
from tests.support.hitl_helpers import wait_pending
from tests.support.polling import eventually

CONTINUE_EVERY = 100  # events: the smallest threshold an Agent accepts


# -- helpers -----------------------------------------------------------------------------------


def tool_step(name: str, call_id: str | None = None, **arguments: Any) -> dict:
    call: dict[str, Any] = {"name": name, "arguments": arguments}
    if call_id is not None:
        call["id"] = call_id
    return {"tool_calls": [call]}


async def chain(client, run_id: str, runs: int) -> list:
    """The runs of ``run_id``'s chain, oldest first, once visibility lists ``runs`` of them."""

    async def listed() -> list:
        return [w async for w in client.list_workflows(f'WorkflowId = "{run_id}"')]

    found = await eventually(
        listed,
        lambda found: len(found) >= runs,
        interval=0.1,
        message=f"visibility never listed {runs} runs of {run_id}",
    )
    return sorted(found, key=lambda w: w.start_time)


def assert_chain_shape(runs: list, continuations: int) -> None:
    from temporalio.client import WorkflowExecutionStatus

    assert len(runs) == continuations + 1
    assert [r.status for r in runs[:-1]] == [WorkflowExecutionStatus.CONTINUED_AS_NEW] * continuations
    assert runs[-1].status == WorkflowExecutionStatus.COMPLETED
    assert len({r.run_id for r in runs}) == len(runs)


# -- tests -------------------------------------------------------------------------------------


async def test_state_counters_messages_and_hook_memory_survive_continuations(client, worker, scripted, model, run_id):
    steps = 24
    script = [tool_step("add", a=i, b=1) if i % 2 == 0 else tool_step("echo", text=f"e{i}") for i in range(steps)]
    scripted.script(model, [*script, {"text": "all done"}])
    hooks = {
        "before_run": [t.trace_before_run],
        "before_llm": [t.trace_before_llm],
        "after_tool": [t.trace_after_tool, StepMemoryHook()],
        "on_exit": [t.trace_on_exit],
        "after_run": [t.trace_after_run],
    }
    agent = Agent(
        model=model,
        tools=[t.add, t.echo],
        system_prompt="sys",
        hooks=hooks,
        state_schema={"trace": {"type": list}, "memory_count": {"type": int}},
        max_agent_steps=50,
        continue_as_new_after_events=CONTINUE_EVERY,
    )
    await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)

    result = await get_run(client, run_id).result()  # a fresh handle: follows the chain to its end

    assert result.continuations >= 2
    assert result.exit_reason == "text" and result.last_message.text == "all done"
    assert result.step_count == steps + 1
    assert result.tool_call_counts == {"add": steps // 2, "echo": steps // 2}
    # State list: every step's trace, in order, once; before_run did not run again in later runs
    expected_trace = ["before_run@0"]
    for i in range(steps):
        expected_trace += [f"before_llm@{i}", f"after_tool@{i}"]
    expected_trace += [f"before_llm@{steps}", f"on_exit@{steps + 1}", f"after_run@{steps + 1}"]
    assert result.state["trace"] == expected_trace
    assert set(result.state) == {"trace", "memory_count"}
    # hook memory: only restore() can make the count reach every tool step
    assert result.state["memory_count"] == steps
    # messages: system, user, each step's call and result in order, the final reply
    messages = result.messages
    assert len(messages) == 2 + 2 * steps + 1
    assert [messages[0].text, messages[1].text] == ["sys", "go"]
    assert_pairs_intact(messages)
    results = [m.tool_call_result.result for m in messages if m.tool_call_result is not None]
    assert results == [str(i + 1) if i % 2 == 0 else f"e{i}" for i in range(steps)]
    # the model saw the whole conversation every time, also right after each continuation
    requests = scripted.requests(model)
    assert [len(r["messages"]) for r in requests] == [2 + 2 * i for i in range(steps + 1)]
    assert [m["role"] for m in requests[-1]["messages"]] == [m.role.value for m in messages[:-1]]
    # token usage: cumulative over all runs = the sum of every reply's own usage
    replies = [m for m in messages if "usage" in m.meta]
    assert len(replies) == steps + 1
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        assert result.token_usage[key] == sum(m.meta["usage"][key] for m in replies)

    runs = await chain(client, run_id, result.continuations + 1)
    assert_chain_shape(runs, result.continuations)
    status = await get_run(client, run_id).status()
    assert status.done and status.continuations == result.continuations and status.step_count == steps + 1


async def test_hook_token_usage_is_carried_across_continuations(client, worker, scripted, model, run_id):
    steps = 24
    side_model = f"{model}-side"
    scripted.script(side_model, [{"text": "noted", "times": steps}])
    scripted.script(model, [*[tool_step("echo", text=f"e{i}") for i in range(steps)], {"text": "done"}])
    agent = Agent(
        model=model,
        tools=[t.echo],
        hooks={"before_llm": [SideCallHook(side_model, every=3)]},
        state_schema={"side_tokens": {"type": int}},
        max_agent_steps=50,
        continue_as_new_after_events=CONTINUE_EVERY,
    )
    await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await get_run(client, run_id).result()

    assert result.continuations >= 2 and result.exit_reason == "text"
    side_calls = len(scripted.requests(side_model))
    assert side_calls == steps // 3 + 1  # steps 0, 3, ..., 24
    # the side calls spread over several runs of the chain; the hook total covers all of them
    assert result.hook_token_usage["total_tokens"] == result.state["side_tokens"] > 0
    assert result.hook_token_usage["total_tokens"] == (
        result.hook_token_usage["prompt_tokens"] + result.hook_token_usage["completion_tokens"]
    )
    # and it stays apart from the agent's own usage
    own = sum(m.meta["usage"]["total_tokens"] for m in result.messages if "usage" in m.meta)
    assert result.token_usage["total_tokens"] == own
    status = await get_run(client, run_id).status()
    assert status.hook_token_usage == result.hook_token_usage


def _via(call) -> str:
    record = call.extra[CONFIRMATION_KEY]
    return record["via"] if isinstance(record, dict) else record.via


async def test_decisions_reach_the_current_run_around_continuations(client, worker, scripted, model, run_id):
    """Every step asks for a confirmation, so each continue-as-new comes right after a decision.

    Decisions alternate between the Update and the Signal, each through a fresh ``get_run``
    handle (no run pinned). Right after each Update, a duplicate Update for the same call races
    the tool step and the continue-as-new: it is refused (never lost, never hanging), whichever
    run of the chain answers it.
    """
    steps = 20
    script = [tool_step("add", call_id=f"c{i}", a=i, b=100) for i in range(steps)]
    scripted.script(model, [*script, tool_step("echo", text="tail"), {"text": "done"}])
    hook = ConfirmationHook({"add": DurableConfirmationStrategy(AlwaysAskPolicy())})
    agent = Agent(
        model=model,
        tools=[t.add, t.echo],
        hooks={"before_tool": [hook]},
        max_agent_steps=50,
        continue_as_new_after_events=CONTINUE_EVERY,
    )
    await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)

    continuations_seen, decided = [], set()
    for i in range(steps):
        handle = get_run(client, run_id)
        (pending,) = await wait_pending(handle, exclude=decided)  # a Signal may not be processed yet
        decided.add(pending.tool_call_id)
        assert pending.tool_call_id == f"c{i}" and pending.tool_params == {"a": i, "b": 100}
        continuations_seen.append((await handle.status()).continuations)
        if i % 2 == 0:
            record = await handle.confirm(pending.tool_call_id, approver="ann")
            assert record.via == "update" and record.approver == "ann"
            try:
                await get_run(client, run_id).confirm(pending.tool_call_id, approver="bob")
            except DecisionRefusedError as err:
                assert "already decided" in str(err) or "No pending confirmation" in str(err)
            else:
                raise AssertionError(f"a second decision for {pending.tool_call_id} was accepted")
        else:
            await signal_decision(handle.workflow, ToolDecision(tool_call_id=pending.tool_call_id, action="confirm"))

    result = await get_run(client, run_id).result()
    assert result.exit_reason == "text" and result.step_count == steps + 2
    assert result.continuations >= 2
    # decisions were taken in several runs of the chain, not only the first
    assert continuations_seen[0] == 0 and continuations_seen[-1] >= 2
    assert continuations_seen == sorted(continuations_seen)
    # each call ran once, with its own confirmation, by the channel it was sent on
    assert result.tool_call_counts == {"add": steps, "echo": 1}
    add_results = [
        m.tool_call_result.result
        for m in result.messages
        if m.tool_call_result and m.tool_call_result.origin.tool_name == "add"
    ]
    assert add_results == [str(i + 100) for i in range(steps)]
    add_calls = [c for m in result.messages for c in m.tool_calls if c.tool_name == "add"]
    assert [c.id for c in add_calls] == [f"c{i}" for i in range(steps)]
    assert [_via(c) for c in add_calls] == ["update" if i % 2 == 0 else "signal" for i in range(steps)]
    assert await get_run(client, run_id).pending_confirmations() == []


async def test_the_model_sees_the_conversation_hooks_left_also_after_a_continuation(
    client, worker, scripted, model, run_id
):
    """A before_tool hook rewrites the model's last reply (here: every call is modified by a person,
    which also inserts an explanation before it). The stored conversation the worker keeps still
    has the reply as the model wrote it, so a continuation must not refer to that stored prefix:
    every request must be exactly the run's conversation at that point."""
    from activities.model import to_openai_messages

    steps = 12
    script = [tool_step("add", call_id=f"c{i}", a=i, b=1) for i in range(steps)]
    scripted.script(model, [*script, {"text": "done"}])
    hook = ConfirmationHook({"add": DurableConfirmationStrategy(AlwaysAskPolicy())})
    agent = Agent(
        model=model,
        tools=[t.add],
        hooks={"before_tool": [hook]},
        max_agent_steps=50,
        continue_as_new_after_events=CONTINUE_EVERY,
    )
    await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    for i in range(steps):
        handle = get_run(client, run_id)
        (pending,) = await wait_pending(handle, exclude={f"c{j}" for j in range(i)})
        assert pending.tool_call_id == f"c{i}"
        await handle.modify(pending.tool_call_id, new_tool_params={"a": i, "b": 1000})

    result = await get_run(client, run_id).result()
    assert result.continuations >= 2 and result.exit_reason == "text"
    adds = [m.tool_call_result.result for m in result.messages if m.tool_call_result is not None]
    assert adds == [str(i + 1000) for i in range(steps)]
    requests = scripted.requests(model)
    assert len(requests) == steps + 1
    for request in requests:
        sent = request["messages"]
        assert sent == to_openai_messages(result.messages[: len(sent)])


async def test_pydantic_typed_state_keys_keep_their_type_across_continuations(client, worker, scripted, model, run_id):
    steps = 20
    scripted.script(model, [*[tool_step("echo", text=f"e{i}") for i in range(steps)], {"text": "done"}])
    agent = Agent(
        model=model,
        tools=[t.echo],
        hooks={"after_tool": [count_with_model_hook]},
        state_schema={"tally": {"type": Tally}},
        max_agent_steps=50,
        continue_as_new_after_events=CONTINUE_EVERY,
    )
    await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    result = await get_run(client, run_id).result()
    assert result.continuations >= 2
    tally = Tally.model_validate(result.state["tally"])
    assert tally.steps == steps
    # the hook read a Tally at every step, also at the first step of each continued run
    assert tally.kinds == ["Tally"] * steps

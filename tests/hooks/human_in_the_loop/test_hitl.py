"""Human-in-the-loop on the real dev server: confirm, reject, modify, mixed decisions in one step,
strategy keys, AskOnce across steps and across continue-as-new, the Update validator and the Signal
(the notification webhook: test_webhook_notifier.py)."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from agent import ChatMessage
from agent.approvals.decisions import DecisionRefusedError, UnknownRunError, signal_decision
from hooks.human_in_the_loop import (
    CONFIRMATION_KEY,
    AlwaysAskPolicy,
    AskOncePolicy,
    ConfirmationHook,
    DurableConfirmationStrategy,
    NeverAskPolicy,
    ToolDecision,
    arguments_sha256,
)
from tests.support.hitl_helpers import (
    NO_CALLS,
    call,
    calls,
    history_events,
    hitl_agent,
    signals_processed,
    start,
    wait_pending,
)


def roles(messages: list[ChatMessage]) -> list[str]:
    return [m.role.value for m in messages]


# -- confirm / reject / modify ---------------------------------------------------------------


async def test_confirm_runs_the_call_and_records_the_approval(client, worker, scripted, model, run_id):
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
    handle = await start(hitl_agent(model), client, worker, run_id)
    (pending,) = await wait_pending(handle)
    assert (pending.tool_name, pending.tool_params) == ("add", {"a": 1, "b": 2})
    assert pending.tool_description == "Add two integers."
    assert pending.arguments_sha256 == arguments_sha256({"a": 1, "b": 2})
    status = await handle.status()
    assert status.waiting_for_approval and status.pending_confirmations == 1
    assert len(scripted.requests(model)) == 1  # nothing ran while waiting

    record = await handle.confirm(pending.tool_call_id, approver="ann")
    result = await handle.result()

    assert record.action == "confirm" and record.approver == "ann" and record.via == "update"
    assert record.arguments_sha256 == arguments_sha256({"a": 1, "b": 2})
    assert roles(result.messages) == ["user", "assistant", "tool", "assistant"]
    assert result.messages[2].tool_call_result.result == "3"
    stored = result.messages[1].tool_calls[0].extra[CONFIRMATION_KEY]
    assert stored == record.model_dump(mode="json")
    assert result.tool_call_counts == {**NO_CALLS, "add": 1}
    assert (await handle.status()).waiting_for_approval is False


async def test_reject_answers_the_model_and_runs_nothing(
    client, worker, scripted, model, run_id, tmp_path, monkeypatch
):
    monkeypatch.setenv("SIDE_EFFECTS_FILE", str(tmp_path / "effects.jsonl"))
    scripted.script(model, [calls(call("record", label="drop-table")), {"text": "understood"}])
    handle = await start(hitl_agent(model), client, worker, run_id)
    (pending,) = await wait_pending(handle)

    await handle.reject(pending.tool_call_id, feedback="not in production", approver="bob")
    result = await handle.result()

    assert not (tmp_path / "effects.jsonl").exists()
    assert roles(result.messages) == ["user", "assistant", "tool", "assistant"]
    rejection = result.messages[2]
    assert rejection.tool_call_result.error is True
    assert rejection.tool_call_result.result == (
        "Tool execution for 'record' was rejected by the user. With user feedback: not in production"
    )
    assert rejection.meta[CONFIRMATION_KEY]["approver"] == "bob"
    assert rejection.meta[CONFIRMATION_KEY]["action"] == "reject"
    assert result.tool_call_counts == NO_CALLS
    sent = scripted.requests(model)[1]["messages"]
    assert sent[-1]["role"] == "tool" and "not in production" in sent[-1]["content"]


async def test_modify_runs_the_call_with_the_new_arguments(client, worker, scripted, model, run_id):
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "15"}])
    handle = await start(hitl_agent(model), client, worker, run_id)
    (pending,) = await wait_pending(handle)

    record = await handle.modify(pending.tool_call_id, new_tool_params={"a": 10, "b": 5}, approver="ann")
    result = await handle.result()

    assert record.arguments_sha256 == arguments_sha256({"a": 10, "b": 5})
    assert roles(result.messages) == ["user", "user", "assistant", "tool", "assistant"]
    assert result.messages[1].text == "The parameters for tool 'add' were updated by the user to:\n{'a': 10, 'b': 5}"
    executed = result.messages[2].tool_calls[0]
    assert executed.arguments == {"a": 10, "b": 5}
    assert executed.extra[CONFIRMATION_KEY]["action"] == "modify"
    assert result.messages[3].tool_call_result.result == "15"


async def test_mixed_reject_modify_confirm_in_one_step(client, worker, scripted, model, run_id):
    scripted.script(
        model,
        [calls(call("add", a=1, b=1), call("add", a=2, b=2), call("echo", text="hi")), {"text": "done"}],
    )
    handle = await start(hitl_agent(model), client, worker, run_id)
    first, second, third = await wait_pending(handle, count=3)  # all three wait at once
    assert len({first.tool_call_id, second.tool_call_id, third.tool_call_id}) == 3

    await handle.modify(second.tool_call_id, new_tool_params={"a": 20, "b": 20})
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [first.tool_call_id, third.tool_call_id]
    await handle.confirm(third.tool_call_id)
    await handle.reject(first.tool_call_id)
    result = await handle.result()

    # Haystack's order: rejected pair, modification note, then the calls that run (last).
    assert roles(result.messages) == ["user", "assistant", "tool", "user", "assistant", "tool", "tool", "assistant"]
    assert [c.id for c in result.messages[1].tool_calls] == [first.tool_call_id]
    assert result.messages[2].tool_call_result.error is True
    assert result.messages[2].tool_call_result.result == "Tool execution for 'add' was rejected by the user."
    running = result.messages[4].tool_calls
    assert [(c.id, c.arguments) for c in running] == [
        (second.tool_call_id, {"a": 20, "b": 20}),
        (third.tool_call_id, {"text": "hi"}),
    ]
    assert [m.tool_call_result.result for m in result.messages[5:7]] == ["40", "hi"]
    assert result.tool_call_counts == {**NO_CALLS, "add": 1, "echo": 1}
    # the conversation the model got next is well-formed: every call answered right after its message
    sent = scripted.requests(model)[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user", "assistant", "tool", "tool"]


async def test_all_rejected_runs_nothing_and_continues(client, worker, scripted, model, run_id):
    scripted.script(model, [calls(call("add", a=1, b=1), call("echo", text="x")), {"text": "ok"}])
    handle = await start(hitl_agent(model), client, worker, run_id)
    pending = await wait_pending(handle, count=2)
    for request in pending:
        await handle.reject(request.tool_call_id)
    result = await handle.result()
    assert roles(result.messages) == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert result.tool_call_counts == NO_CALLS and result.exit_reason == "text"


async def test_repeated_call_ids_end_the_run_with_haystacks_value_error(client, worker, scripted, model, run_id):
    scripted.script(model, [calls(call("add", id="same", a=1, b=1), call("add", id="same", a=2, b=2)), {"text": "ok"}])
    handle = await start(hitl_agent(model), client, worker, run_id)
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=60)
    error = failed.value.cause
    assert isinstance(error, ApplicationError) and error.type == "HookError"
    assert error.message.endswith(
        "failed at before_tool (step 0): ValueError: No unused ToolExecutionDecision matches tool call 'add' with "
        "ID 'same'. Set tool_call_id to match decisions to tool calls reliably."
    )


# -- strategy keys and policies --------------------------------------------------------------


async def test_tool_name_beats_tuple_beats_wildcard(client, worker, scripted, model, run_id):
    hook = ConfirmationHook(
        {
            "add": DurableConfirmationStrategy(NeverAskPolicy()),
            ("add", "echo"): DurableConfirmationStrategy(AlwaysAskPolicy()),
            "*": DurableConfirmationStrategy(NeverAskPolicy()),
        }
    )
    scripted.script(
        model, [calls(call("add", a=1, b=2), call("echo", text="hi"), call("big_text", size=3)), {"text": "ok"}]
    )
    handle = await start(hitl_agent(model, hook), client, worker, run_id)
    (pending,) = await wait_pending(handle)
    assert pending.tool_name == "echo"
    await handle.confirm(pending.tool_call_id)
    result = await handle.result()
    assert result.tool_call_counts == {**NO_CALLS, "add": 1, "echo": 1, "big_text": 1}


async def test_tools_without_a_key_run_unasked(client, worker, scripted, model, run_id):
    hook = ConfirmationHook({("record", "big_text"): DurableConfirmationStrategy(AlwaysAskPolicy())})
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "ok"}])
    result = await (await start(hitl_agent(model, hook), client, worker, run_id)).result()
    assert result.messages[-2].tool_call_result.result == "3"


async def test_ask_once_remembers_confirmed_calls_across_steps(client, worker, scripted, model, run_id):
    hook = ConfirmationHook({"add": DurableConfirmationStrategy(AskOncePolicy())})
    scripted.script(
        model,
        [
            calls(call("add", a=1, b=2)),
            calls(call("add", a=1, b=2)),  # same arguments: runs unasked
            calls(call("add", a=5, b=5)),  # new arguments: asked again
            {"text": "done"},
        ],
    )
    handle = await start(hitl_agent(model, hook), client, worker, run_id)
    (first,) = await wait_pending(handle)
    await handle.confirm(first.tool_call_id)
    (second,) = await wait_pending(handle, exclude={first.tool_call_id})
    assert second.tool_params == {"a": 5, "b": 5}
    await handle.confirm(second.tool_call_id)
    result = await handle.result()
    asked = [c.extra.get(CONFIRMATION_KEY) is not None for m in result.messages for c in m.tool_calls if c.extra]
    assert result.tool_call_counts == {**NO_CALLS, "add": 3}
    assert asked == [True, True]  # the repeated call carries no confirmation record


async def test_ask_once_memory_survives_continue_as_new(client, worker, scripted, model, run_id):
    hook = ConfirmationHook({"add": DurableConfirmationStrategy(AskOncePolicy())})
    scripted.script(model, [{"tool_calls": [call("add", a=1, b=2)], "times": 14}, {"text": "done"}])
    agent = hitl_agent(model, hook, continue_as_new_after_events=100)
    handle = await start(agent, client, worker, run_id)
    (first,) = await wait_pending(handle)
    await handle.confirm(first.tool_call_id)
    finished = asyncio.create_task(handle.result())
    while not finished.done():  # the same call is never asked for again, before or after continue-as-new
        assert not await handle.pending_confirmations()
        await asyncio.wait([finished], timeout=0.05)
    result = finished.result()
    assert result.continuations >= 1
    assert result.tool_call_counts == {**NO_CALLS, "add": 14}
    assert result.step_count == 15


# -- the Update validator, duplicates, late decisions, the Signal ----------------------------


async def test_validator_refuses_bad_decisions_before_history(client, worker, scripted, model, run_id):
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
    handle = await start(hitl_agent(model), client, worker, run_id)
    (pending,) = await wait_pending(handle)
    call_id = pending.tool_call_id
    before = await history_events(handle)

    bad = {
        "No pending confirmation for tool call 'nope'": ToolDecision(tool_call_id="nope", action="confirm"),
        "Unknown action 'approve'": ToolDecision(tool_call_id=call_id, action="approve"),
        "'a' is a required property": ToolDecision(tool_call_id=call_id, action="modify", new_tool_params={"b": 1}),
        "b: 'x' is not of type 'integer'": ToolDecision(
            tool_call_id=call_id, action="modify", new_tool_params={"a": 1, "b": "x"}
        ),
        "needs new_tool_params": ToolDecision(tool_call_id=call_id, action="modify"),
        "made for other arguments": ToolDecision(tool_call_id=call_id, action="confirm", arguments_sha256="0" * 64),
    }
    for expected, decision in bad.items():
        with pytest.raises(DecisionRefusedError, match=expected.replace("(", r"\(")):
            await handle.decide(decision)

    after = await history_events(handle)
    assert len(after) == len(before) and after[-1].event_id == before[-1].event_id
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [call_id]

    await handle.confirm(call_id)
    assert (await handle.result()).messages[-2].tool_call_result.result == "3"


async def test_duplicate_and_late_decisions_are_refused(client, worker, scripted, model, run_id):
    scripted.script(model, [calls(call("add", a=1, b=2)), calls(call("add", a=3, b=4)), {"text": "done"}])
    handle = await start(hitl_agent(model), client, worker, run_id)
    (first,) = await wait_pending(handle)
    await handle.confirm(first.tool_call_id, approver="ann")
    with pytest.raises(DecisionRefusedError, match="already decided \\(confirm by ann via update"):
        await handle.reject(first.tool_call_id)

    (second,) = await wait_pending(handle, exclude={first.tool_call_id})  # the run moved on
    with pytest.raises(DecisionRefusedError, match="already decided"):
        await handle.confirm(first.tool_call_id)
    await handle.confirm(second.tool_call_id)
    result = await handle.result()
    assert result.tool_call_counts == {**NO_CALLS, "add": 2}

    # The same decision sent again is idempotent (its Update id is derived from it): the first outcome
    # comes back. Another decision for a finished run is refused.
    await handle.confirm(second.tool_call_id)
    with pytest.raises(UnknownRunError):
        await handle.reject(second.tool_call_id, feedback="too late")


async def test_unknown_run_is_a_clear_error(client):
    from agent.client import get_run

    with pytest.raises(UnknownRunError, match="No run 'no-such-run'"):
        await get_run(client, "no-such-run").confirm("call_1")


async def test_signal_decides_and_bad_signals_are_ignored(client, worker, scripted, model, run_id):
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
    handle = await start(hitl_agent(model), client, worker, run_id)
    (pending,) = await wait_pending(handle)

    await signal_decision(handle.workflow, ToolDecision(tool_call_id="nope", action="confirm"))
    await signal_decision(handle.workflow, ToolDecision(tool_call_id=pending.tool_call_id, action="yes-please"))
    await handle.workflow.signal("tool_decision", {"not": "a decision"})  # cannot even be decoded
    await signals_processed(handle, 3)
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [pending.tool_call_id]
    assert (await handle.status()).waiting_for_approval

    await signal_decision(
        handle.workflow, ToolDecision(tool_call_id=pending.tool_call_id, action="confirm", approver="sig")
    )
    result = await handle.result()
    assert result.messages[-2].tool_call_result.result == "3"
    assert result.messages[1].tool_calls[0].extra[CONFIRMATION_KEY]["via"] == "signal"
    events = await history_events(handle)
    assert not [e for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]

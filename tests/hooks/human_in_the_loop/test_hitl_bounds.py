"""Bounded decisions on the real dev server, since an unbounded modify would grow the history
without limit: an oversize modify is refused by the Update's validator before history and ignored by
the Signal, the run keeps waiting, and an allowed but big modify reaches the model as a bounded
preview."""

from __future__ import annotations

import json

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.worker import Replayer

from agent.approvals.decisions import DecisionRefusedError, signal_decision
from hooks.human_in_the_loop import ToolDecision
from hooks.human_in_the_loop.registry import MAX_FEEDBACK_CHARS, MAX_NEW_TOOL_PARAMS_BYTES
from hooks.human_in_the_loop.templates import MODIFICATION_PREVIEW_CHARS
from runtime.plugin import AgentPlugin
from tests.support.hitl_helpers import call, calls, history_events, hitl_agent, signals_processed, start, wait_pending
from workflows.agent_workflow import AgentWorkflow

OVERSIZE = {"text": "x" * 200_000}  # 200,011 bytes as compact JSON
ALLOWED = {"text": "y" * 60_000}  # 60,011 bytes: big, but under the limit


async def test_oversize_decisions_are_refused_and_a_big_modify_is_previewed(client, worker, scripted, model, run_id):
    assert len(json.dumps(OVERSIZE, separators=(",", ":"))) > MAX_NEW_TOOL_PARAMS_BYTES
    assert len(json.dumps(ALLOWED, separators=(",", ":"))) < MAX_NEW_TOOL_PARAMS_BYTES
    scripted.script(model, [calls(call("echo", text="hi")), {"text": "done"}])
    handle = await start(hitl_agent(model), client, worker, run_id)
    (pending,) = await wait_pending(handle)
    call_id = pending.tool_call_id
    before = await history_events(handle)

    # By Update: refused by the validator, with the size and the limit; nothing reaches history.
    with pytest.raises(
        DecisionRefusedError, match=r"new_tool_params are 200,011 bytes as compact JSON; the limit is 65,536 bytes"
    ):
        await handle.modify(call_id, new_tool_params=OVERSIZE, approver="ann")
    with pytest.raises(DecisionRefusedError, match=r"feedback is 4,001 characters; the limit is 4,000 characters"):
        await handle.reject(call_id, feedback="f" * (MAX_FEEDBACK_CHARS + 1))
    after = await history_events(handle)
    assert len(after) == len(before) and after[-1].event_id == before[-1].event_id
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [call_id]
    assert (await handle.status()).waiting_for_approval

    # By Signal: logged and ignored; the run still waits and nothing was sent to the model.
    await signal_decision(
        handle.workflow, ToolDecision(tool_call_id=call_id, action="modify", new_tool_params=OVERSIZE, approver="sig")
    )
    events = await signals_processed(handle, 1)
    assert not [e for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [call_id]
    assert (await handle.status()).waiting_for_approval
    assert len(scripted.requests(model)) == 1

    # A big but allowed modify runs, and the model is told about it with a bounded preview.
    record = await handle.modify(call_id, new_tool_params=ALLOWED, approver="ann")
    result = await handle.result()
    assert record.action == "modify" and record.via == "update"
    assert [m.role.value for m in result.messages] == ["user", "user", "assistant", "tool", "assistant"]
    assert result.messages[2].tool_calls[0].arguments == ALLOWED
    assert result.messages[3].tool_call_result.result == ALLOWED["text"]

    whole = str(ALLOWED)
    preview = (
        "The parameters for tool 'echo' were updated by the user to:\n"
        f"{whole[:MODIFICATION_PREVIEW_CHARS]}… ({len(whole):,} characters in all)"
    )
    assert result.messages[1].text == preview
    sent = scripted.requests(model)[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "user", "assistant", "tool"]
    assert sent[1]["content"] == preview and len(sent[1]["content"]) < MODIFICATION_PREVIEW_CHARS + 100
    # The new parameters travel once in the call and once in echo's result, not again in the note.
    assert json.dumps(sent, ensure_ascii=False).count(ALLOWED["text"]) == 2

    # The run (limits on, the ignored oversize Signal in its history) replays as it ran.
    replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin()])
    replayed = await replayer.replay_workflow(await handle.workflow.fetch_history(), raise_on_replay_failure=True)
    assert replayed.replay_failure is None

"""Who may decide, on the real dev server (a decision is only as safe as the check of its approver):
the Update's validator refuses an approver not on the request's list (and a decision naming no
approver) before anything reaches history, the Signal handler ignores such a decision with a log
line, a per-tool list in ``ConfirmationHook`` replaces the strategy's, the CLI cannot get round it,
and a timeout still decides."""

from __future__ import annotations

import io
import json
import logging
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType

from agent.approvals.decisions import DecisionRefusedError, signal_decision
from agent.cli import build_parser
from hooks.human_in_the_loop import (
    CONFIRMATION_KEY,
    AlwaysAskPolicy,
    BlockingConfirmationStrategy,
    ConfirmationHook,
    DurableConfirmationStrategy,
    SimpleConsoleUI,
    ToolDecision,
)
from tests.agent.cli.test_cli import agent_cli
from tests.support.hitl_helpers import call, calls, history_events, hitl_agent, signals_processed, start, wait_pending

MALLORY_REFUSED = "Approver 'mallory' may not decide tool call '{call}' (record): allowed approvers are alice, bob."
NO_APPROVER = "Tool call '{call}' (record) needs an approver: pass approver= (one of alice, bob)."


def only(approvers: list[str], **kwargs) -> ConfirmationHook:
    """Every tool asked, decided only by ``approvers``."""
    return ConfirmationHook({"*": DurableConfirmationStrategy(AlwaysAskPolicy(), approvers=approvers, **kwargs)})


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the ``record`` tool appends one line each time it runs (the worker is in this process)."""
    path = tmp_path / "effects.jsonl"
    monkeypatch.setenv("SIDE_EFFECTS_FILE", str(path))
    return path


def runs_of(effects: Path) -> list[dict]:
    return [json.loads(line) for line in effects.read_text().splitlines()] if effects.exists() else []


async def update_events(handle) -> list:
    kinds = (
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
    )
    return [e for e in await history_events(handle) if e.event_type in kinds]


async def test_a_listed_approver_decides_by_update_and_the_tool_runs_once(
    client, worker, scripted, model, run_id, effects
):
    scripted.script(model, [calls(call("record", label="pay")), {"text": "paid"}])
    handle = await start(hitl_agent(model, only(["alice", "bob"])), client, worker, run_id)
    (pending,) = await wait_pending(handle)
    assert pending.approvers == ["alice", "bob"]  # the pending query shows who may decide

    record = await handle.confirm(pending.tool_call_id, approver="alice")
    result = await handle.result()

    assert (record.approver, record.action, record.via) == ("alice", "confirm", "update")
    assert [r["label"] for r in runs_of(effects)] == ["pay"]
    assert result.messages[1].tool_calls[0].extra[CONFIRMATION_KEY]["approver"] == "alice"


async def test_an_unlisted_approver_is_refused_and_the_run_keeps_waiting(
    client, worker, scripted, model, run_id, effects
):
    scripted.script(model, [calls(call("record", label="pay")), {"text": "paid"}])
    handle = await start(hitl_agent(model, only(["alice", "bob"])), client, worker, run_id)
    (pending,) = await wait_pending(handle)
    call_id = pending.tool_call_id

    with pytest.raises(DecisionRefusedError) as refused:
        await handle.confirm(call_id, approver="mallory")
    assert MALLORY_REFUSED.format(call=call_id) in str(refused.value)
    # an unlisted approver is refused whatever the decision says, even a valid modify
    with pytest.raises(DecisionRefusedError, match="Approver 'mallory' may not decide"):
        await handle.modify(call_id, new_tool_params={"label": "steal"}, approver="mallory")

    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [call_id]
    assert (await handle.status()).waiting_for_approval
    assert await update_events(handle) == []  # refused by the validator: nothing in history
    assert runs_of(effects) == []

    record = await handle.reject(call_id, feedback="not today", approver="bob")
    result = await handle.result()
    assert (record.approver, record.action) == ("bob", "reject")
    assert runs_of(effects) == []
    assert "not today" in result.messages[2].tool_call_result.result


async def test_a_decision_without_an_approver_is_refused_when_a_list_exists(
    client, worker, scripted, model, run_id, effects
):
    scripted.script(model, [calls(call("record", label="pay")), {"text": "paid"}])
    handle = await start(hitl_agent(model, only(["alice", "bob"])), client, worker, run_id)
    (pending,) = await wait_pending(handle)

    with pytest.raises(DecisionRefusedError) as refused:
        await handle.confirm(pending.tool_call_id)  # approver=None
    assert NO_APPROVER.format(call=pending.tool_call_id) in str(refused.value)
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [pending.tool_call_id]

    await handle.confirm(pending.tool_call_id, approver="bob")
    await handle.result()
    assert len(runs_of(effects)) == 1


async def test_a_per_tool_list_in_the_hook_replaces_the_strategys(client, worker, scripted, model, run_id, effects):
    hook = ConfirmationHook(
        {"*": DurableConfirmationStrategy(AlwaysAskPolicy(), approvers=["ops"])}, approvers={"record": ["alice"]}
    )
    scripted.script(model, [calls(call("record", label="pay"), call("add", a=1, b=2)), {"text": "done"}])
    handle = await start(hitl_agent(model, hook), client, worker, run_id)
    pending = {p.tool_name: p for p in await wait_pending(handle, count=2)}
    assert pending["record"].approvers == ["alice"] and pending["add"].approvers == ["ops"]
    record_id, add_id = pending["record"].tool_call_id, pending["add"].tool_call_id

    # the strategy's approver may not decide the tool with its own list (override, not union) ...
    with pytest.raises(DecisionRefusedError, match=f"Approver 'ops' may not decide tool call '{record_id}' "):
        await handle.confirm(record_id, approver="ops")
    # ... and the tool's approver may not decide the others
    with pytest.raises(DecisionRefusedError, match="allowed approvers are ops"):
        await handle.confirm(add_id, approver="alice")

    await handle.confirm(record_id, approver="alice")
    await handle.confirm(add_id, approver="ops")
    result = await handle.result()
    assert len(runs_of(effects)) == 1
    assert result.tool_call_counts["record"] == 1 and result.tool_call_counts["add"] == 1


async def test_blocking_strategy_checks_approvers_and_takes_the_hooks_list(
    client, worker, scripted, model, run_id, effects
):
    strategy = BlockingConfirmationStrategy(
        confirmation_policy=AlwaysAskPolicy(), confirmation_ui=SimpleConsoleUI(), approvers=["ops"]
    )
    hook = ConfirmationHook({"*": strategy}, approvers={"record": ["alice", "bob"]})
    scripted.script(model, [calls(call("record", label="pay"), call("add", a=1, b=2)), {"text": "done"}])
    handle = await start(hitl_agent(model, hook), client, worker, run_id)
    pending = {p.tool_name: p for p in await wait_pending(handle, count=2)}
    assert pending["record"].approvers == ["alice", "bob"] and pending["add"].approvers == ["ops"]

    with pytest.raises(DecisionRefusedError, match="Approver 'mallory' may not decide"):
        await handle.confirm(pending["record"].tool_call_id, approver="mallory")
    await handle.confirm(pending["record"].tool_call_id, approver="bob")
    await handle.reject(pending["add"].tool_call_id, approver="ops")
    result = await handle.result()
    assert len(runs_of(effects)) == 1 and result.tool_call_counts["add"] == 0


async def test_an_unlisted_signal_is_ignored_with_a_log_line_and_a_listed_one_decides(
    client, worker, scripted, model, run_id, effects, caplog
):
    scripted.script(model, [calls(call("record", label="pay")), {"text": "paid"}])
    handle = await start(hitl_agent(model, only(["alice", "bob"])), client, worker, run_id)
    (pending,) = await wait_pending(handle)
    call_id = pending.tool_call_id

    with caplog.at_level(logging.WARNING, logger="temporalio.workflow"):
        await signal_decision(handle.workflow, ToolDecision(tool_call_id=call_id, action="confirm", approver="mallory"))
        await signal_decision(handle.workflow, ToolDecision(tool_call_id=call_id, action="confirm"))
        await signals_processed(handle, 2)
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [call_id]
    assert runs_of(effects) == []
    logged = [r.getMessage() for r in caplog.records if "Ignored tool_decision signal" in r.getMessage()]
    assert any(MALLORY_REFUSED.format(call=call_id) in line and "approver 'mallory'" in line for line in logged)
    assert any(NO_APPROVER.format(call=call_id) in line for line in logged)

    await signal_decision(handle.workflow, ToolDecision(tool_call_id=call_id, action="confirm", approver="alice"))
    result = await handle.result()
    stored = result.messages[1].tool_calls[0].extra[CONFIRMATION_KEY]
    assert (stored["approver"], stored["via"]) == ("alice", "signal")
    assert len(runs_of(effects)) == 1
    failed = [e for e in await history_events(handle) if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED]
    assert failed == []


@pytest.mark.slow
async def test_the_cli_cannot_decide_for_an_unlisted_approver(client, worker, scripted, model, run_id, effects):
    scripted.script(model, [calls(call("record", label="pay")), {"text": "paid"}])
    handle = await start(hitl_agent(model, only(["alice", "bob"])), client, worker, run_id)
    (pending,) = await wait_pending(handle)
    call_id = pending.tool_call_id

    ran = await agent_cli("approve", run_id, call_id, "--approver", "mallory")
    code, out, err = ran.returncode, ran.stdout, ran.stderr
    assert code == 1, (out, err)
    assert err.strip() == f"error: Run '{run_id}' refused the decision: " + MALLORY_REFUSED.format(call=call_id)
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [call_id]

    ran = await agent_cli("approve", run_id, call_id, "--approver", "alice")
    code, out, err = ran.returncode, ran.stdout, ran.stderr
    assert code == 0, err
    assert out.startswith(f"confirm: record call {call_id} of run {run_id} by alice")
    await handle.result()
    assert len(runs_of(effects)) == 1


async def test_interactive_approval_does_not_ask_an_unlisted_approver(
    client, worker, scripted, model, run_id, effects, capsys, monkeypatch
):
    scripted.script(model, [calls(call("record", label="pay")), {"text": "paid"}])
    handle = await start(hitl_agent(model, only(["alice", "bob"])), client, worker, run_id)
    (pending,) = await wait_pending(handle)

    async def interactive(approver: str) -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
        args = build_parser().parse_args(["approve", "--interactive", run_id, "--approver", approver])
        code = await args.handler(args, client)
        out, err = capsys.readouterr()
        return code, out, err

    # every answer would be refused, so the call is not put to mallory at all (no endless re-asking)
    code, out, err = await interactive("mallory")
    assert code == 1 and MALLORY_REFUSED.format(call=pending.tool_call_id) in err
    assert "Run it?" not in out
    assert [p.tool_call_id for p in await handle.pending_confirmations()] == [pending.tool_call_id]

    code, out, err = await interactive("alice")
    assert code == 0, err
    assert f"confirm: record call {pending.tool_call_id} of run {run_id} by alice" in out
    await handle.result()
    assert len(runs_of(effects)) == 1


async def test_a_timeout_still_decides_when_approvers_are_set(client, worker, scripted, model, run_id, effects):
    scripted.script(model, [calls(call("record", label="pay")), {"text": "paid"}])
    hook = only(["alice"], timeout=timedelta(seconds=1), on_timeout="confirm")
    handle = await start(hitl_agent(model, hook), client, worker, run_id)

    result = await handle.result()  # no one decides: the timeout confirms on behalf of no one

    stored = result.messages[1].tool_calls[0].extra[CONFIRMATION_KEY]
    assert (stored["via"], stored["action"], stored["approver"]) == ("timeout", "confirm", None)
    assert len(runs_of(effects)) == 1

"""Cancel in each phase of the run loop (model call, tool call, waiting for approval, waiting for
the user, inside a hook's activity), at random moments (seeded, printed), by ``handle.cancel(reason)``
and by Temporal's own cancel: every run ends with exit_reason "cancelled" and cleans up
(bench/cancel_drill.py says what is checked; ``python -m bench.cancel_drill`` runs 20 a phase)."""

from __future__ import annotations

import os
import random

import pytest

from agent import Agent, ChatMessage
from agent.conversation import ConversationError
from bench.cancel_drill import HOW, PHASES, cancel_one, drill
from hooks.audit import AuditHook, AuditRecord, FileSystemAuditStore
from tests import tools as t
from tests.support.hitl_helpers import ask_all, call, calls, wait_pending


@pytest.fixture
def gates(tmp_path, monkeypatch):
    monkeypatch.setenv("GATE_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.slow
async def test_cancel_in_every_phase_both_ways_ends_every_run_cleanly(client, worker, scripted, gates):
    seed = int(os.environ.get("CANCEL_DRILL_SEED", random.SystemRandom().randrange(1 << 30)))
    print(f"cancel drill seed {seed} (CANCEL_DRILL_SEED={seed} repeats it)")
    report = await drill(client, worker, scripted, gates, per_phase=2, seed=seed)
    # Each way at least once in each phase, whatever the seed drew.
    extra = [await cancel_one(client, worker, scripted, gates, phase, how, 0.0) for phase in PHASES for how in HOW]
    report.outcomes += extra
    print("\n".join(report.lines()))
    assert {(o.phase, o.how) for o in report.outcomes} >= {(p, h) for p in PHASES for h in HOW}
    assert report.without_cleanup == []


async def test_cancel_of_a_finished_run_is_a_clear_error(client, worker, scripted, model, run_id):
    scripted.script(model, [{"text": "done"}])
    handle = await Agent(model=model, tools=[t.add]).start(
        client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker
    )
    await handle.result()
    with pytest.raises(ConversationError, match="is not running"):
        await handle.cancel("too late")


async def test_the_audit_records_calls_a_cancel_left_waiting_for_approval(
    client, worker, scripted, model, run_id, tmp_path
):
    scripted.script(
        model, [calls(call("add", id="c-add", a=1, b=2), call("echo", id="c-echo", text="x")), {"text": "x"}]
    )
    audit = AuditHook(FileSystemAuditStore(tmp_path))
    agent = Agent(model=model, tools=[t.add, t.echo], hooks={"before_tool": [audit, ask_all()], "after_tool": [audit]})
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    await wait_pending(handle, count=2)

    await handle.cancel("closed by ann")
    result = await handle.result()

    assert result.exit_reason == "cancelled"
    assert [m.tool_call_result.result for m in result.messages[-2:]] == [
        "Tool call 'add' was cancelled: the run was cancelled (closed by ann).",
        "Tool call 'echo' was cancelled: the run was cancelled (closed by ann).",
    ]
    records = sorted((tmp_path / run_id).rglob("*.json"))
    assert [p.name for p in records] == ["c-add.json", "c-echo.json"]
    parsed = [AuditRecord.model_validate_json(p.read_text()) for p in records]
    assert [(r.tool_name, r.error, r.step) for r in parsed] == [("add", True, 0), ("echo", True, 0)]
    assert await handle.pending_confirmations() == []

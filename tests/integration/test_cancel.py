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
from tests import tools as t


@pytest.fixture
def gates(tmp_path, monkeypatch):
    monkeypatch.setenv("GATE_DIR", str(tmp_path))
    return tmp_path


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

"""A 1,000-step run, to show that length alone never breaks a run: a trivial tool each step against
the scripted model server, a context window small enough that compaction fires over and over, and
Temporal's own continue-as-new suggestion (the Agent's default settings) keeping every history
small.

About 100 ms a step on the dev server (two activities a step: see bench/long_run.py), so
this test takes close to two minutes.
"""

from __future__ import annotations

import json

from temporalio.client import WorkflowExecutionStatus

from agent import ChatMessage
from agent.client import get_run
from bench.workloads import STEPS, long_run_agent, long_run_script
from tests.support.compaction_support import assert_pairs_intact

#: Temporal fails a history over 50 MB; the issue asks for no history over 10 MB.
MAX_HISTORY_BYTES = 10 * 1024 * 1024


async def chain_histories(client, run_id: str) -> list[dict]:
    """Each run of ``run_id``'s chain, oldest first: status, events, server-side history bytes, JSON bytes."""
    runs = []
    async for listed in client.list_workflows(f'WorkflowId = "{run_id}"'):
        handle = client.get_workflow_handle(run_id, run_id=listed.run_id)
        description = await handle.describe()
        history = await handle.fetch_history()
        runs.append(
            {
                "start": listed.start_time,
                "status": listed.status,
                "events": len(history.events),
                "bytes": description.raw_description.workflow_execution_info.history_size_bytes,
                "json_bytes": len(json.dumps(history.to_json_dict())),
            }
        )
    return sorted(runs, key=lambda r: r["start"])


async def test_thousand_step_run_compacts_and_continues_as_new(client, worker, scripted, model, run_id):
    scripted.script(model, long_run_script())
    agent = long_run_agent(model)
    assert agent.continue_as_new_after_events == 10_000  # the default: Temporal's suggestion comes first
    await agent.start(client, [ChatMessage.from_user("Echo until told to stop.")], run_id=run_id, task_queue=worker)
    result = await get_run(client, run_id).result()

    assert result.exit_reason == "text" and result.last_message.text == "done"
    assert result.step_count == STEPS
    assert result.tool_call_counts == {"echo": STEPS - 1}
    assert result.continuations >= 2

    # every run of the chain is small; all but the last continued as new on Temporal's suggestion,
    # well before the Agent's own 10,000-event threshold
    runs = await chain_histories(client, run_id)
    assert len(runs) == result.continuations + 1
    assert [r["status"] for r in runs[:-1]] == [WorkflowExecutionStatus.CONTINUED_AS_NEW] * result.continuations
    assert runs[-1]["status"] == WorkflowExecutionStatus.COMPLETED
    assert all(r["events"] < 6_000 for r in runs)
    largest = max(r["bytes"] for r in runs)
    assert 0 < largest < MAX_HISTORY_BYTES // 2, runs
    assert max(r["json_bytes"] for r in runs) < MAX_HISTORY_BYTES, runs  # even exported as JSON (base64 payloads)

    # compaction fired again and again, so no request grew past a few dozen messages
    requests = scripted.requests(model)
    assert len(requests) == STEPS
    sizes = [len(r["messages"]) for r in requests]
    compactions = sum(1 for before, after in zip(sizes, sizes[1:], strict=False) if after < before)
    assert compactions >= 50, compactions
    assert max(sizes) <= 40, max(sizes)
    assert max(len(json.dumps(r["messages"])) for r in requests) < 20_000
    # what the run ends with is a compacted conversation: instructions, task, a note, the last steps
    assert result.messages[0].text == "You echo text, one step at a time."
    assert result.messages[1].text == "Echo until told to stop."
    assert any(m.meta.get("context_compaction", {}).get("strategy") == "sliding_window" for m in result.messages)
    assert len(result.messages) <= 40
    assert_pairs_intact(result.messages)

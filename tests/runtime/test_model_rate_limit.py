"""Model calls on their own task queue, rate-limited by Temporal for every worker at once
(``AGENT_MODEL_TASK_QUEUE``, ``AGENT_MODEL_CALLS_PER_SECOND``; runtime/model_queue.py)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from agent import Agent, ChatMessage, connect
from agent.dev.scripted_model import ScriptedModelServer
from agent.dev.stack import DevStack
from agent.run_problems import health_lines
from core.payloads import RunHealth
from core.settings import ConfigurationError
from tests.support.polling import eventually
from worker import create_worker

RUNS = 12
LIMIT = 4.0


async def model_call_starts(client: Client, run_id: str) -> list[tuple[float, str]]:
    """When each model activity of a run started, and on which task queue it was scheduled."""
    history = await client.get_workflow_handle(run_id).fetch_history()
    scheduled = {
        e.event_id: e.activity_task_scheduled_event_attributes.task_queue.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "chat_completion"
    }
    return [
        (e.event_time.ToDatetime().timestamp(), scheduled[e.activity_task_started_event_attributes.scheduled_event_id])
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and e.activity_task_started_event_attributes.scheduled_event_id in scheduled
    ]


@pytest.mark.slow
async def test_the_limit_holds_across_two_workers_and_no_run_fails(
    stack: DevStack, client: Client, scripted: ScriptedModelServer, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue, model_queue = f"rl-{uuid.uuid4().hex[:8]}", f"rl-models-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("AGENT_MODEL_TASK_QUEUE", model_queue)
    monkeypatch.setenv("AGENT_MODEL_CALLS_PER_SECOND", str(LIMIT))
    scripted.script(model, [{"text": "ok", "times": RUNS}])
    agent = Agent(model=model)
    # Two workers as two processes would have them: each its own client (one client may not poll a queue twice).
    other = await connect(stack.temporal.address, stack.temporal.namespace)
    async with create_worker(client, tools=[], task_queue=queue), create_worker(other, tools=[], task_queue=queue):
        handles = await asyncio.gather(
            *(
                agent.start(client, [ChatMessage.from_user("hi")], run_id=f"{queue}-{i}", task_queue=queue)
                for i in range(RUNS)
            )
        )

        # While the limit holds calls back, their runs' health (agent status) says why they wait.
        async def a_waiting_run() -> tuple[str, RunHealth] | None:
            for handle in handles:
                health = await handle.health()
                if "chat_completion" in health.waiting_activities:
                    return handle.run_id, health
            return None

        waiting_run, health = await eventually(a_waiting_run, timeout=30)
        assert any("rate limit (AGENT_MODEL_CALLS_PER_SECOND)" in line for line in health_lines(waiting_run, health))
        results = await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), 120)
    assert all(r.last_message.text == "ok" for r in results)
    starts = [start for h in handles for start in await model_call_starts(client, h.run_id)]
    assert {queue_name for _, queue_name in starts} == {model_queue}
    times = sorted(t for t, _ in starts)
    achieved = (len(times) - 1) / (times[-1] - times[0])
    print(f"{RUNS} model calls, limit {LIMIT}/s: achieved {achieved:.2f} calls/s over {times[-1] - times[0]:.2f} s")
    # The server's limiter may let a first burst through; past it, the rate is the limit's.
    assert achieved <= LIMIT * 1.5


def test_a_rate_without_a_model_queue_is_an_error_at_start(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_MODEL_TASK_QUEUE", raising=False)
    monkeypatch.setenv("AGENT_MODEL_CALLS_PER_SECOND", "2")
    with pytest.raises(ConfigurationError, match="set AGENT_MODEL_TASK_QUEUE too"):
        create_worker(client, tools=[], task_queue="nowhere")

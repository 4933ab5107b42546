"""Missing server or store configuration is refused before any run depends on it, so a misconfigured
deployment fails at start-up instead of in the middle of a run."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.service import RPCError, RPCStatusCode

from agent import Agent, ChatMessage, connect
from agent.approvals.waiting import list_waiting_runs
from core.checks import ConfigurationError
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy
from tests import tools as t
from tests.support.namespaces import register_namespace
from tests.support.polling import eventually
from worker import create_worker


@pytest.fixture(scope="module")
async def bare_namespace(client) -> str:
    """A namespace on the session's server with no custom search attribute."""
    return await register_namespace(client, "bare")


async def worker_start_error(client) -> ConfigurationError:
    """Start a worker that must refuse to start; a hang (the worker waiting for a shutdown that
    never comes) fails the test after 30 s instead of blocking the suite."""

    async def start() -> None:
        async with create_worker(client, tools=t.TEST_TOOLS, task_queue=f"q-{uuid.uuid4().hex[:6]}"):
            await asyncio.sleep(60)  # never reached: the check stops the worker at once

    with pytest.raises(ConfigurationError) as refused:
        await asyncio.wait_for(start(), timeout=30)
    return refused.value


def hitl_agent(model: str, search_attribute: str | None = "AgentWaitingForApproval") -> Agent:
    strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), search_attribute=search_attribute)
    return Agent(model=model, tools=[t.add], hooks={"before_tool": [ConfirmationHook({"add": strategy})]})


async def test_worker_refuses_a_namespace_without_the_search_attribute(client, bare_namespace):
    bare = await connect(client.service_client.config.target_host, bare_namespace)
    error = await worker_start_error(bare)
    assert (
        f"temporal operator search-attribute create --namespace {bare_namespace} "
        "--name AgentWaitingForApproval --type Bool"
    ) in str(error)
    assert "AGENT_WAITING_SEARCH_ATTRIBUTE=off" in str(error)


async def test_agent_start_refuses_before_the_run_exists(client, bare_namespace, model, run_id):
    bare = await connect(client.service_client.config.target_host, bare_namespace)
    with pytest.raises(ConfigurationError, match="--name AgentWaitingForApproval --type Bool"):
        await hitl_agent(model).start(bare, [ChatMessage.from_user("go")], run_id=run_id, task_queue="nowhere")
    with pytest.raises(RPCError) as missing:
        await bare.get_workflow_handle(run_id).describe()
    assert missing.value.status == RPCStatusCode.NOT_FOUND


async def test_without_the_attribute_confirmations_work_and_runs_are_listed_from_their_memo(
    client, bare_namespace, scripted, model, run_id, monkeypatch
):
    monkeypatch.setenv("AGENT_WAITING_SEARCH_ATTRIBUTE", "off")
    bare = await connect(client.service_client.config.target_host, bare_namespace)
    queue = f"q-{uuid.uuid4().hex[:6]}"
    scripted.script(
        model, [{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}, "id": "c1"}]}, {"text": "3"}]
    )
    async with create_worker(bare, tools=t.TEST_TOOLS, task_queue=queue):
        handle = await hitl_agent(model, search_attribute=None).start(
            bare, [ChatMessage.from_user("add")], run_id=run_id, task_queue=queue
        )

        async def ours() -> list:
            return [run for run in (await list_waiting_runs(bare)).runs if run.run_id == run_id]

        listed = await eventually(ours, message="the waiting run was never listed")
        (summary,) = listed[0].pending
        assert (summary.tool_call_id, summary.tool_name, summary.arguments_preview) == ("c1", "add", '{"a": 1, "b": 2}')
        await handle.confirm("c1", approver="ann")
        result = await handle.result()
    assert result.last_message.text == "3" and result.tool_call_counts == {"add": 1}


async def test_worker_refuses_a_missing_tool_results_bucket(client, monkeypatch):
    monkeypatch.setenv("TOOL_RESULTS_BUCKET", "no-such-bucket-for-this-test")
    error = await worker_start_error(client)
    assert "S3 bucket 'no-such-bucket-for-this-test' (TOOL_RESULTS_BUCKET) does not exist" in str(error)


async def test_worker_refuses_an_unreachable_s3_endpoint(client, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    error = await worker_start_error(client)
    assert "The S3 endpoint http://127.0.0.1:9 for bucket" in str(error) and "did not answer" in str(error)

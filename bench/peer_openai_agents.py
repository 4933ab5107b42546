"""The OpenAI Agents SDK on Temporal, for bench.peers: ``OpenAIAgentsPlugin`` and an activity tool.

Temporal's integration now ships as ``temporalio-openai-agents`` (import path
``temporalio.openai_agents``; ``temporalio.contrib.openai_agents`` forwards to it). The model
provider uses Chat Completions (``use_responses=False``): the scripted model serves
``/chat/completions`` only, not ``/responses``.
"""

from __future__ import annotations

import os
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Runner
    from agents.models.openai_provider import OpenAIProvider
    from openai import AsyncOpenAI
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
    from temporalio.openai_agents.workflow import activity_as_tool

    from bench.peer_common import PROMPT
    from bench.workloads import big_text as _big_text

ACTIVITY_TIMEOUT = timedelta(seconds=60)
#: Completions of this activity type are the run's steps.
TOOL_ACTIVITY = "peer_big_text"


@activity.defn(name="peer_big_text")
async def big_text(size: int) -> str:
    """Return ``size`` characters of text."""
    return _big_text(size)


@workflow.defn(name="PeerOpenAIAgentsWorkflow")
class PeerOpenAIAgentsWorkflow:
    @workflow.run
    async def run(self, model: str, prompt: str, max_turns: int) -> str:
        agent = Agent(
            name="peer",
            instructions="Call the tool as asked, then answer.",
            model=model,
            tools=[activity_as_tool(big_text, start_to_close_timeout=ACTIVITY_TIMEOUT)],
        )
        # The SDK stops at 10 turns by default; the bench runs up to 100 steps.
        result = await Runner.run(agent, prompt, max_turns=max_turns)
        return str(result.final_output)


def plugin() -> OpenAIAgentsPlugin:
    """The integration's plugin, its model activity talking Chat Completions to ``OPENAI_BASE_URL``."""
    # The SDK exports traces to api.openai.com by default; the plugin installs its own trace provider,
    # which reads this variable, so set_tracing_disabled() would not reach it. Nothing leaves loopback.
    os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    # max_retries=0: Temporal's activity retries decide, as the integration recommends.
    client = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"], max_retries=0)
    return OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=ACTIVITY_TIMEOUT),
        model_provider=OpenAIProvider(openai_client=client, use_responses=False),
    )


async def connect(address: str) -> Client:
    """A client carrying the integration's plugin (its pydantic converter, interceptors, model activity)."""
    return await Client.connect(address, plugins=[plugin()])


def worker(client: Client, task_queue: str) -> Worker:
    """The worker for :class:`PeerOpenAIAgentsWorkflow` and its tool activity."""
    return Worker(client, task_queue=task_queue, workflows=[PeerOpenAIAgentsWorkflow], activities=[big_text])


async def start(client: Client, task_queue: str, run_id: str, model: str, steps: int) -> WorkflowHandle:
    """Start one run of the peer workflow against the scripted model named ``model``."""
    # A turn is one model call: ``steps`` tool calls and the answer, plus slack.
    return await client.start_workflow(
        PeerOpenAIAgentsWorkflow.run, args=[model, PROMPT, steps + 5], id=run_id, task_queue=task_queue
    )
